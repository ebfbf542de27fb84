package server

import (
	"context"
	"sync"
	"time"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/go-logr/logr"
)

// Per-Provider limits on top of the shared delivery queue (DeliveryWorkers
// = 8 workers, DeliveryQueueSize = 512 places): a Provider (by
// namespace/name) has at most ProviderInFlight = 4 deliveries in the shared
// queue (waiting or running) and at most ProviderWaiting = 256 more waiting
// in its own lane, in order. Past that its delivery is dropped and counted in
// `eddy_event_queue_dropped_total{queue="delivery"}`, so a Provider that
// hangs (each delivery holds a worker up to its timeout, 15s by default)
// loses only its own events and holds at most half of the workers. Memory
// stays bounded: all lanes together hold at most LanesWaiting = 4096
// deliveries, and a lane is deleted once its Provider has none left.
const (
	ProviderInFlight = DeliveryWorkers / 2
	ProviderWaiting  = DeliveryQueueSize / 2
	LanesWaiting     = 8 * DeliveryQueueSize
)

// dropLogInterval rate-limits the Info log of dropped deliveries.
const dropLogInterval = 10 * time.Second

// lane is one Provider's deliveries not yet handed to the shared queue.
type lane struct {
	inFlight int
	waiting  []func(context.Context)
}

// deliveries hands jobs to the shared queue, at most ProviderInFlight per
// Provider at a time; the rest wait in the Provider's lane (FIFO).
type deliveries struct {
	queue *events.Queue
	log   logr.Logger

	mu       sync.Mutex
	lanes    map[string]*lane
	waiting  int // all lanes' waiting jobs
	lastLog  time.Time
	unlogged int // drops since the last log line
}

func newDeliveries(q *events.Queue, log logr.Logger) *deliveries {
	return &deliveries{queue: q, log: log, lanes: map[string]*lane{}}
}

// add queues job for the Provider named key (namespace/name) and reports
// whether it was taken; a refused job is counted and logged (rate-limited).
func (d *deliveries) add(key string, job func(context.Context)) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.lanes[key]
	if l == nil {
		l = &lane{}
		d.lanes[key] = l
	}
	switch {
	case l.inFlight < ProviderInFlight:
		if d.submit(key, l, job) {
			return true
		}
		d.dropped(key, "the delivery queue is full")
	case len(l.waiting) < ProviderWaiting && d.waiting < LanesWaiting:
		l.waiting = append(l.waiting, job)
		d.waiting++
		return true
	default:
		d.queue.RecordDrop()
		d.dropped(key, "the provider has too many deliveries pending")
	}
	if l.inFlight == 0 && len(l.waiting) == 0 {
		delete(d.lanes, key)
	}
	return false
}

// submit hands job to the shared queue (d.mu held); when job ends, the
// lane's next waiting job, if any, takes its place (before the queue
// counts job done, so Queue.Wait also waits for the lanes).
func (d *deliveries) submit(key string, l *lane, job func(context.Context)) bool {
	ok := d.queue.Add(func(ctx context.Context) {
		job(ctx)
		d.mu.Lock()
		defer d.mu.Unlock()
		l.inFlight--
		for len(l.waiting) > 0 && l.inFlight < ProviderInFlight {
			next := l.waiting[0]
			l.waiting[0] = nil
			l.waiting = l.waiting[1:]
			d.waiting--
			if !d.submit(key, l, next) {
				d.dropped(key, "the delivery queue is full")
			}
		}
		if l.inFlight == 0 && len(l.waiting) == 0 {
			delete(d.lanes, key)
		}
	})
	if ok {
		l.inFlight++
	}
	return ok
}

// dropped logs a drop at most once per dropLogInterval (d.mu held), naming
// the Provider (never its address) and how many drops went unlogged.
func (d *deliveries) dropped(provider, reason string) {
	d.unlogged++
	if now := time.Now(); now.Sub(d.lastLog) >= dropLogInterval {
		d.log.Info("notification delivery dropped", "provider", provider, "reason", reason, "dropped", d.unlogged)
		d.lastLog, d.unlogged = now, 0
	}
}

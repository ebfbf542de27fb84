package events

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// droppedTotal counts the jobs a full Queue refused, served on
// --metrics-addr as `eddy_event_queue_dropped_total{queue}`.
var droppedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "eddy_event_queue_dropped_total",
	Help: "Events dropped because the delivery queue was full.",
}, []string{"queue"})

func init() { metrics.Registry.MustRegister(droppedTotal) }

// Queue runs jobs on a fixed number of workers, so a burst of events
// costs neither a goroutine per event nor unbounded memory. Add never
// blocks: when the buffer is full the job is dropped and counted in
// `eddy_event_queue_dropped_total{queue=<name>}`.
type Queue struct {
	jobs    chan func(context.Context)
	dropped prometheus.Counter
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	idle    *sync.Cond // signalled when pending falls to 0
	pending int        // jobs taken and not yet finished
	closed  bool
}

// NewQueue starts workers (at least 1) that take jobs from a buffer of size
// places (at least 0, an unbuffered queue then only hands jobs to idle
// workers). name is the metric's queue label, e.g. "recorder".
func NewQueue(name string, workers, size int) *Queue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &Queue{
		jobs: make(chan func(context.Context), max(size, 0)), dropped: droppedTotal.WithLabelValues(name),
		ctx: ctx, cancel: cancel,
	}
	q.idle = sync.NewCond(&q.mu)
	for range max(workers, 1) {
		q.wg.Go(q.work)
	}
	return q
}

func (q *Queue) work() {
	for {
		select {
		case <-q.ctx.Done():
			return
		case job := <-q.jobs:
			job(q.ctx)
			q.done()
		}
	}
}

func (q *Queue) done() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending--; q.pending == 0 {
		q.idle.Broadcast()
	}
}

// Wait blocks until every job taken so far has run (or was dropped by
// Close): a barrier for tests and shutdown.
func (q *Queue) Wait() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.pending > 0 {
		q.idle.Wait()
	}
}

// Add queues job without blocking (a non-blocking send under a short
// lock) and reports whether it was taken; a job refused because the queue
// is full or closed is counted as dropped. job gets a context that ends
// when the queue is closed.
func (q *Queue) Add(job func(context.Context)) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		select {
		case q.jobs <- job:
			q.pending++ // the worker's done waits for the lock
			return true
		default:
		}
	}
	q.dropped.Inc()
	return false
}

// RecordDrop counts one job its caller dropped before offering it, e.g.
// past a per-key limit, in the queue's metric.
func (q *Queue) RecordDrop() { q.dropped.Inc() }

// Close ends the context of running jobs, waits for the workers to return
// and drops the jobs still queued (uncounted). Add after Close drops.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cancel()
	q.wg.Wait()
	for {
		select {
		case <-q.jobs:
			q.done()
		default:
			return
		}
	}
}

// Dropped returns how many jobs all queues named name have dropped since
// the process started: the value of the metric.
func Dropped(name string) float64 {
	m := &dto.Metric{}
	if err := droppedTotal.WithLabelValues(name).Write(m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

package faults

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eddyops/eddy/pkg/events"
)

// hangProxy forwards to the Git server; once armed, it answers the next
// pack request (POST .../git-upload-pack) with the upstream's status and
// first bytes, then stalls until the client gives up (or hold passes):
// a server that hangs mid-pack.
type hangProxy struct {
	URL   string
	armed atomic.Bool
	hangs atomic.Int64
	hold  time.Duration
	srv   *http.Server
}

func startHangProxy(upstream string, hold time.Duration) (*hangProxy, error) {
	target, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &hangProxy{URL: "http://" + l.Addr().String(), hold: hold}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") && p.armed.CompareAndSwap(true, false) {
			p.hangs.Add(1)
			rp.ServeHTTP(&stallingWriter{ResponseWriter: w, after: 64, ctx: r.Context().Done(), hold: hold}, r)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *hangProxy) Close() { p.srv.Close() }

// stallingWriter passes the first after bytes of a body, flushes them,
// then blocks until the request ends or hold passes.
type stallingWriter struct {
	http.ResponseWriter
	after   int
	written int
	ctx     <-chan struct{}
	hold    time.Duration
}

func (s *stallingWriter) Write(b []byte) (int, error) {
	if s.written >= s.after {
		select {
		case <-s.ctx:
		case <-time.After(s.hold):
		}
		return 0, io.ErrClosedPipe
	}
	n := min(len(b), s.after-s.written)
	n, err := s.ResponseWriter.Write(b[:n])
	s.written += n
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

// eventSink records the events the controllers POST to --events-addr,
// with their arrival time.
type eventSink struct {
	URL string
	mu  sync.Mutex
	got []received
	srv *http.Server
}

type received struct {
	at time.Time
	ev events.Event
}

func startEventSink() (*eventSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &eventSink{URL: "http://" + l.Addr().String() + "/"}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev events.Event
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, received{time.Now(), ev})
		s.mu.Unlock()
	})}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *eventSink) Close() { s.srv.Close() }

// errorsSince counts the error-severity events about kind ns/name that
// arrived after since: what an Alert of eventSeverity error delivers.
func (s *eventSink) errorsSince(kind, ns, name string, since time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.got {
		o := r.ev.InvolvedObject
		if r.at.After(since) && r.ev.Severity == "error" && o.Kind == kind && o.Namespace == ns && o.Name == name {
			n++
		}
	}
	return n
}

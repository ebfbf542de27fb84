package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// binaryNS is the namespace of the scenarios that run the built
// kustomize-controller: it watches only this namespace
// (--watch-all-namespaces=false), and the in-process reconciler leaves it
// alone. Both binaries POST their events to eventSink.
const binaryNS = "ks-binary"

var eventSink = &sink{}

// sink records the Flux event JSON POSTed to --events-addr, in arrival order.
type sink struct {
	mu     sync.Mutex
	url    string
	events []events.Event
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev events.Event
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
}

// of returns the events received so far about kind ns/name.
func (s *sink) of(kind, ns, name string) []events.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []events.Event
	for _, ev := range s.events {
		if o := ev.InvolvedObject; o.Kind == kind && o.Namespace == ns && o.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

func startEventSink(*testenv.Environment) (func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: eventSink}
	go func() { _ = srv.Serve(l) }()
	eventSink.url = "http://" + l.Addr().String() + "/"
	return func() { srv.Close() }, nil
}

// startKustomizeController builds kustomize-controller and runs it on
// binaryNS with the flags it gets in a cluster, short retries and
// --requeue-dependency=1s.
func startKustomizeController(e *testenv.Environment) (func(), error) {
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: binaryNS}}); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "eddy-kc-bin-")
	if err != nil {
		return nil, err
	}
	exe, err := testenv.BuildController("kustomize-controller", work)
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	// --watch-all-namespaces=false reads the namespace from the environment.
	os.Setenv("RUNTIME_NAMESPACE", binaryNS)
	p, err := testenv.StartController(e, exe, filepath.Join(work, "kustomize-controller.log"),
		"--watch-all-namespaces=false", "--events-addr="+eventSink.url,
		"--requeue-dependency=1s", "--min-retry-delay=200ms", "--max-retry-delay=2s")
	os.Unsetenv("RUNTIME_NAMESPACE")
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	return func() {
		p.Stop()
		if os.Getenv("EDDY_TEST_LOGS") != "" {
			b, _ := os.ReadFile(p.LogPath)
			fmt.Fprintf(os.Stderr, "--- kustomize-controller log:\n%s\n", b)
		}
		os.RemoveAll(work)
	}, nil
}

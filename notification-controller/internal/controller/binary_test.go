package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBinaryReceiverOnBootstrappedRepository runs the built
// notification-controller, its manager made by NewManager as the in-process
// one is, beside the built source- and kustomize-controller, on a real
// repository that carries CRDs (flux2-kustomize-helm-example with Eddy's
// CRDs where `flux bootstrap` writes Flux's components): the binary's
// Receiver turns a webhook into a fetch of the new commit, which
// kustomize-controller applies, CRDs included, to Ready.
func TestBinaryReceiverOnBootstrappedRepository(t *testing.T) {
	evPort, _ := testenv.FreePort()
	rcvPort, _ := testenv.FreePort()
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=binary", fmt.Sprintf("--events-addr=127.0.0.1:%d", evPort),
		fmt.Sprintf("--receiverAddr=127.0.0.1:%d", rcvPort), "--min-retry-delay=200ms", "--max-retry-delay=2s")

	ns := newNamespace(t)
	r := newRepo(t, nil)
	if _, err := testenv.BootstrappedRepo(testenv.TestdataDir(t), "flux2-kustomize-helm-example-v2.6", "production", r.Work); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(map[string]string{}, "bootstrap"); err != nil {
		t.Fatal(err)
	}
	token := "binary-" + ns
	rcv := receiver(ns, "generic", notificationv1.GenericReceiver, "webhook-token",
		notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "flux-system"})
	rcv.Labels = map[string]string{shardKey: "binary"}
	// The directory holds Eddy's CRDs only; no pruning, so that deleting the
	// Kustomization leaves them installed in the shared cluster.
	ks := kustomization(ns, "flux-system", "flux-system", "./clusters/production/flux-system",
		func(k *kustomizev1.Kustomization) { k.Spec.Prune = false })
	create(t, secret(ns, "webhook-token", map[string]string{"token": token}), rcv, gitRepository(ns, "flux-system", r), ks)
	head, _ := r.Git("rev-parse", "HEAD")
	waitReady := func(rev string) {
		t.Helper()
		waitFor(t, ks, "Ready at "+rev, func() bool {
			c := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionTrue && ks.Status.LastAppliedRevision == rev
		})
	}
	waitReady("main@sha1:" + head)

	path := webhook.Path(token, rcv.Name, rcv.Namespace)
	waitFor(t, rcv, "Ready with the webhook path", func() bool {
		return apimeta.IsStatusConditionTrue(rcv.Status.Conditions, meta.ReadyCondition) && rcv.Status.WebhookPath == path
	})
	after, err := r.Commit(map[string]string{"clusters/production/flux-system/gotk-sync.yaml": "# synced by the test\n"}, "a new commit")
	if err != nil {
		t.Fatal(err)
	}
	// The receiver server finds the Receiver through its cache: post until
	// it answers 200 rather than 404.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d%s", rcvPort, path), "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("POST %s: %s", path, resp.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitReady("main@sha1:" + after)
}

// TestBinaryEventBurstBounded: the built binary takes a burst of 5,000
// distinct events for an Alert whose Provider is unreachable (nothing
// listens on its port; each delivery retries for about 30s): its goroutine
// count and memory stay bounded, read on its /metrics after every event was
// answered, because deliveries wait in a fixed queue and those beyond it
// are dropped and counted.
func TestBinaryEventBurstBounded(t *testing.T) {
	const burst = 5000
	evPort, _ := testenv.FreePort()
	metricsPort, _ := testenv.FreePort()
	dead, _ := testenv.FreePort() // nothing listens there
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=burst", fmt.Sprintf("--events-addr=127.0.0.1:%d", evPort), "--receiverAddr=",
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metricsPort))
	eventsAt := fmt.Sprintf("http://127.0.0.1:%d/", evPort)
	// The event server listens once the binary's caches synced, after
	// readyz on a loaded machine.
	if err := testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", evPort)); err != nil {
		t.Fatal(err)
	}
	metricsAt := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)

	ns := newNamespace(t)
	probe := newSink(t, 0)
	shard := func(o client.Object) client.Object { o.SetLabels(map[string]string{shardKey: "burst"}); return o }
	create(t,
		shard(provider(ns, "dead", notificationv1.GenericProvider, "", func(p *notificationv1.Provider) {
			p.Spec.Address = fmt.Sprintf("http://127.0.0.1:%d/hook", dead)
			p.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
		})),
		shard(alert(ns, "to-dead", "dead", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"})),
		shard(provider(ns, "probe", notificationv1.GenericProvider, "", func(p *notificationv1.Provider) { p.Spec.Address = probe.URL })),
		shard(alert(ns, "to-probe", "probe", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "probe"})))
	// The binary's cache has both Alerts once the later one delivers.
	for i := 0; len(probe.requests()) == 0; i++ {
		if i == 600 {
			t.Fatal("the binary never delivered the probe event")
		}
		postEventTo(t, eventsAt, fluxEvent(ns, "GitRepository", "probe", "info", fmt.Sprintf("probe %d", i), nil))
		time.Sleep(50 * time.Millisecond)
	}
	before := scrape(t, metricsAt)

	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < burst; i += 8 {
				b, _ := json.Marshal(fluxEvent(ns, "GitRepository", "app", "error", fmt.Sprintf("failed to checkout (%d)", i), nil))
				code := 0
				if resp, err := http.Post(eventsAt, "application/json", bytes.NewReader(b)); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	after := scrape(t, metricsAt)
	dropped := after[`eddy_event_queue_dropped_total{queue="delivery"}`] - before[`eddy_event_queue_dropped_total{queue="delivery"}`]
	t.Logf("burst of %d events to an unreachable provider: answers %v; goroutines %v before, %v after; resident memory %.1f MiB before, %.1f MiB after; heap in use %.1f MiB before, %.1f MiB after; %v deliveries dropped",
		burst, codes, before["go_goroutines"], after["go_goroutines"],
		before["process_resident_memory_bytes"]/(1<<20), after["process_resident_memory_bytes"]/(1<<20),
		before["go_memstats_heap_inuse_bytes"]/(1<<20), after["go_memstats_heap_inuse_bytes"]/(1<<20), dropped)
	if codes[http.StatusAccepted] != burst {
		t.Fatalf("answers %v, want %d × 202", codes, burst)
	}
	// Workers, the queue's waiting deliveries (no goroutine each) and a few
	// connections: not one goroutine per delivery.
	if after["go_goroutines"] > before["go_goroutines"]+100 {
		t.Errorf("goroutines grew from %v to %v over the burst", before["go_goroutines"], after["go_goroutines"])
	}
	if grown := after["process_resident_memory_bytes"] - before["process_resident_memory_bytes"]; grown > 100<<20 {
		t.Errorf("resident memory grew by %.1f MiB over the burst", grown/(1<<20))
	}
	if dropped < burst-1000 {
		t.Errorf("%v deliveries dropped, want most of the %d (the queue holds %d)", dropped, burst, server.DeliveryQueueSize)
	}
}

// scrape reads the gauges and counters of a Prometheus text endpoint, by
// name with labels as written, e.g. `go_goroutines`.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// TestBinaryRoutesV1AndV1beta1Events: the built binary takes both event
// payloads Flux controllers send: v1beta1 (no action, Flux ≤ v2.9) and v1
// (v2.10: action, relatedObject) and routes both to the Alert's generic
// Provider; the v1 fields reach the provider as sent.
func TestBinaryRoutesV1AndV1beta1Events(t *testing.T) {
	evPort, _ := testenv.FreePort()
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=payloads", fmt.Sprintf("--events-addr=127.0.0.1:%d", evPort), "--receiverAddr=")
	eventsAt := fmt.Sprintf("http://127.0.0.1:%d/", evPort)
	if err := testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", evPort)); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	s := newSink(t, 0)
	shard := func(o client.Object) client.Object { o.SetLabels(map[string]string{shardKey: "payloads"}); return o }
	create(t, shard(provider(ns, "sink", notificationv1.GenericProvider, "", func(p *notificationv1.Provider) { p.Spec.Address = s.URL })),
		shard(alert(ns, "all", "sink", "", notificationv1.CrossNamespaceObjectReference{Kind: "Kustomization", Name: "*"})))

	v1beta1 := fluxEvent(ns, "Kustomization", "apps", "info", "v1beta1 event", nil)
	v1 := fluxEvent(ns, "Kustomization", "apps", "error", "v1 event", nil)
	v1["action"] = kustomizev1.ActionHealthCheck.String()
	v1["relatedObject"] = map[string]string{"kind": "GitRepository", "namespace": ns, "name": "platform", "apiVersion": sourcev1.GroupVersion.String()}
	// The binary's cache has the Alert once the first event is delivered.
	for i := 0; len(s.requests()) == 0; i++ {
		if i == 600 {
			t.Fatal("the binary never delivered the v1beta1 event")
		}
		v1beta1["message"] = fmt.Sprintf("v1beta1 event %d", i)
		if code := postEventTo(t, eventsAt, v1beta1); code != http.StatusAccepted {
			t.Fatalf("v1beta1 event answered %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := postEventTo(t, eventsAt, v1); code != http.StatusAccepted {
		t.Fatalf("v1 event answered %d", code)
	}
	r := s.waitRequest(t, "the v1 event", func(r sinkRequest) bool { return strings.Contains(string(r.Body), `"v1 event"`) })
	var got struct {
		Action        string `json:"action"`
		RelatedObject *struct {
			Kind, Name string
		} `json:"relatedObject"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Action != "HealthCheck" || got.RelatedObject == nil || got.RelatedObject.Kind != "GitRepository" || got.RelatedObject.Name != "platform" {
		t.Errorf("the provider got %s, want action HealthCheck and relatedObject GitRepository/platform", r.Body)
	}
}

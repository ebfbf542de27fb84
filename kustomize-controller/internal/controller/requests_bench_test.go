package controller

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reqMix is an object mix of BenchmarkRequestsPerReconcile: the files of
// Kustomization i, its objects in namespace ns.
type reqMix struct {
	name  string
	files func(ns string, i int) map[string]string
}

var reqMixes = []reqMix{
	{"configmaps", func(ns string, i int) map[string]string {
		out := map[string]string{}
		for j := range 5 {
			name := fmt.Sprintf("k%d-%d", i, j)
			out[name+".yaml"] = configMapYAML(ns, name)
		}
		return out
	}},
	{"mixed", func(ns string, i int) map[string]string {
		own := fmt.Sprintf("%s-k%d", ns, i)
		return map[string]string{
			"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + own + "\n",
			"cm.yaml":     configMapYAML(own, "cm"),
			"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: " + own + "\nstringData:\n  key: value\n",
			"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: " + own +
				"\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n",
			"deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: " + own +
				"\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n" +
				"        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx\n",
		}
	}},
}

// reqCounts are a controller's requests per Kustomization of a first
// reconcile, of a requested one (reconcile.fluxcd.io/requestedAt), of the
// one after a spec change, and per periodic unchanged reconcile.
type reqCounts struct {
	first, requested, changed, noop float64
}

// noopInterval is the interval of the periodic unchanged reconciles.
const noopInterval = 20 * time.Second

// BenchmarkRequestsPerReconcile runs the built kustomize-controller, then
// Flux's own (bin/flux-kustomize-controller, tools/flux-controllers.sh), one
// after the other on the same API server, each with N Kustomizations of its
// own (EDDY_BENCH_REQ_N, default 20) from one GitRepository artifact served
// by Eddy's source-controller, for two object mixes: 5 ConfigMaps, and a
// Namespace holding a ConfigMap, Secret, Service and Deployment. From each
// controller's own client metrics (rest_client_requests_total) it reports
// requests per Kustomization of the first reconcile (until all are Ready),
// of a requested reconcile (until reconcile.fluxcd.io/requestedAt is
// handled), of the reconcile after a spec change (interval 1h → 20s; until
// Ready at the new generation), and per periodic unchanged reconcile (until
// N more reconciles), and the ratios Eddy/Flux of the first and the
// periodic one. Flux's controller watches Buckets, which Eddy does not
// serve: a stub Bucket CRD is installed for its run.
func BenchmarkRequestsPerReconcile(b *testing.B) {
	flux := testenv.FluxController(b, "kustomize-controller")
	dir := b.TempDir()
	eddy, err := testenv.BuildController("kustomize-controller", dir)
	if err != nil {
		b.Fatal(err)
	}
	n := 20
	if v, err := strconv.Atoi(os.Getenv("EDDY_BENCH_REQ_N")); err == nil && v > 0 {
		n = v
	}
	for _, mix := range reqMixes {
		b.Run(mix.name, func(b *testing.B) {
			for range b.N {
				requestsRun(b, mix, n, eddy, flux)
			}
		})
	}
}

func requestsRun(b *testing.B, mix reqMix, n int, eddyExe, fluxExe string) {
	srcNS := testenv.NewNamespace(b, env.Client, "req-src-")
	nss := map[string]string{"eddy": testenv.NewNamespace(b, env.Client, "req-"), "flux": testenv.NewNamespace(b, env.Client, "req-")}
	files := map[string]string{}
	for ctl, ns := range nss {
		for i := range n {
			for name, doc := range mix.files(ns, i) {
				files[fmt.Sprintf("%s/k%d/%s", ctl, i, name)] = doc
			}
		}
	}
	src := newSource(b, srcNS, "src", newRepo(b, files))
	b.ResetTimer()
	start := time.Now()
	e := measureRequests(b, eddyExe, false, nss["eddy"], src.Namespace, n, mix)
	eddyTime := time.Since(start)
	removeBucketCRD := installBucketCRD(b)
	defer removeBucketCRD()
	start = time.Now()
	f := measureRequests(b, fluxExe, true, nss["flux"], src.Namespace, n, mix)
	fluxTime := time.Since(start)
	b.StopTimer()
	for _, c := range []struct {
		name string
		r    reqCounts
	}{{"eddy", e}, {"flux", f}} {
		b.ReportMetric(c.r.first, c.name+"-first-req/ks")
		b.ReportMetric(c.r.requested, c.name+"-requested-req/ks")
		b.ReportMetric(c.r.changed, c.name+"-spec-change-req/ks")
		b.ReportMetric(c.r.noop, c.name+"-noop-req/reconcile")
	}
	b.ReportMetric(e.first/f.first, "ratio-eddy/flux-first-req")
	b.ReportMetric(e.noop/f.noop, "ratio-eddy/flux-noop-req")
	b.Logf("%s, %d Kustomizations: eddy %+v in %s; flux %+v in %s", mix.name, n, e, eddyTime.Round(time.Second), f, fluxTime.Round(time.Second))
}

// measureRequests runs exe (Flux's when flux) on the n Kustomizations it
// creates in ns and returns its requests per reconcile of each kind.
func measureRequests(b *testing.B, exe string, flux bool, ns, srcNS string, n int, mix reqMix) reqCounts {
	ctx := context.Background()
	fast := fastClient(b)
	ctl := map[bool]string{false: "eddy", true: "flux"}[flux]
	shard := "req-" + ctl
	p := startReqController(b, exe, flux, shard)
	defer p.stop()
	ready := watchReady(b, ns, n)
	m0 := p.idle(b)
	parallel(b, n, 8, func(i int) error {
		k := &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("k%d", i), Namespace: ns, Labels: map[string]string{shardKey: shard}},
			Spec: kustomizev1.KustomizationSpec{
				Interval: metav1.Duration{Duration: time.Hour},
				// No prune: deleting the namespace after only removes finalizers.
				Path:      fmt.Sprintf("%s/k%d", ctl, i),
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "src", Namespace: srcNS},
			},
		}
		return fast.Create(ctx, k)
	})
	waitAll(b, p, ready.all, fmt.Sprintf("%d Kustomizations Ready", n))
	m1 := p.idle(b)
	var r reqCounts
	r.first = p.requests(b, "first", m1.minus(m0)) / float64(n)

	token := time.Now().Format(time.RFC3339Nano)
	patchAll(b, fast, ns, n, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token))
	waitKustomizations(b, p, ns, n, "requestedAt handled", func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastHandledReconcileAt == token
	})
	m2 := p.idle(b)
	r.requested = p.requests(b, "requested", m2.minus(m1)) / float64(n)

	changed := watchReady(b, ns, n)
	patchAll(b, fast, ns, n, fmt.Sprintf(`{"spec":{"interval":%q}}`, noopInterval))
	waitKustomizations(b, p, ns, n, "the spec change seen", func(k *kustomizev1.Kustomization) bool { return k.Generation > 1 })
	waitAll(b, p, changed.all, "Ready at the new generation")
	m3 := p.idle(b)
	r.changed = p.requests(b, "spec change", m3.minus(m2)) / float64(n)

	deadline := time.Now().Add(4 * noopInterval)
	for p.scrape(b).reconciles()-m3.reconciles() < float64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("%s: fewer than %d periodic reconciles in %s", ctl, n, 4*noopInterval)
		}
		time.Sleep(500 * time.Millisecond) // polls the metrics
	}
	m4 := p.idle(b)
	d := m4.minus(m3)
	r.noop = p.requests(b, "periodic", d) / d.reconciles()

	deleteNamespaceAndWait(b, ns)
	if mix.name == "mixed" {
		for i := range n {
			_ = fast.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-k%d", ns, i)}})
		}
	}
	return r
}

// reqProc is a controller process of BenchmarkRequestsPerReconcile.
type reqProc struct {
	name    string
	cmd     *exec.Cmd
	log     string
	metrics string
}

// startReqController starts exe watching the Kustomizations labelled
// shard, with its metrics on a free port, and waits until its workers run.
// Flux's binary takes no --kubeconfig: it reads KUBECONFIG.
func startReqController(b *testing.B, exe string, flux bool, shard string) *reqProc {
	ports := make([]int, 2)
	for i := range ports {
		port, err := testenv.FreePort()
		if err != nil {
			b.Fatal(err)
		}
		ports[i] = port
	}
	p := &reqProc{name: filepath.Base(exe), log: filepath.Join(b.TempDir(), filepath.Base(exe)+".log"),
		metrics: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	args := []string{"--metrics-addr=" + p.metrics, fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[1]),
		"--watch-label-selector=" + shardKey + "=" + shard, "--concurrent=4", "--events-addr="}
	if !flux {
		args = append(args, "--kubeconfig="+env.KubeconfigPath)
	}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+env.KubeconfigPath, "RUNTIME_NAMESPACE=default")
	f, err := os.Create(p.log)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		log, _ := os.ReadFile(p.log)
		if strings.Contains(string(log), "Starting workers") {
			return p
		}
		if time.Now().After(deadline) || p.cmd.ProcessState != nil {
			p.stop()
			b.Fatalf("%s did not start its workers in a minute:\n%s", p.name, log)
		}
		time.Sleep(100 * time.Millisecond) // polls the log
	}
}

func (p *reqProc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
}

// fail ends b with the tail of the process's log.
func (p *reqProc) fail(b *testing.B, format string, args ...any) {
	b.Helper()
	log, _ := os.ReadFile(p.log)
	if len(log) > 8000 {
		log = log[len(log)-8000:]
	}
	b.Fatalf("%s: %s\n%s", p.name, fmt.Sprintf(format, args...), log)
}

func (p *reqProc) scrape(b *testing.B) samples {
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		p.fail(b, "metrics: %v", err)
	}
	defer resp.Body.Close()
	s := samples{}
	if err := parseMetrics(resp.Body, s, "rest_client_requests_total", "controller_runtime_reconcile_total",
		"controller_runtime_active_workers", "workqueue_depth"); err != nil {
		b.Fatal(err)
	}
	return s
}

// idle scrapes the metrics once no reconcile runs and none is queued.
func (p *reqProc) idle(b *testing.B) samples {
	deadline := time.Now().Add(time.Minute)
	for {
		s := p.scrape(b)
		kustomization := func(k string) bool { return label(k, "controller") == "kustomization" }
		if s.sum("controller_runtime_active_workers", kustomization) == 0 && s.sum("workqueue_depth", kustomization) == 0 {
			return s
		}
		if time.Now().After(deadline) {
			p.fail(b, "still reconciling after a minute")
		}
		time.Sleep(50 * time.Millisecond) // polls the metrics
	}
}

// requests logs the requests of d by method and returns their sum.
func (p *reqProc) requests(b *testing.B, what string, d samples) float64 {
	byMethod := map[string]float64{}
	for k, v := range d {
		if strings.HasPrefix(k, "rest_client_requests_total{") {
			byMethod[label(k, "method")] += v
		}
	}
	var total float64
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(byMethod)) {
		total += byMethod[m]
		parts = append(parts, fmt.Sprintf("%s=%.0f", m, byMethod[m]))
	}
	b.Logf("%s %s: %.0f requests (%s) in %.0f reconciles", p.name, what, total, strings.Join(parts, " "), d.reconciles())
	return total
}

func waitAll(b *testing.B, p *reqProc, all <-chan struct{}, what string) {
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		p.fail(b, "not all %s after 5 minutes", what)
	}
}

// waitKustomizations polls the n Kustomizations of ns until cond holds
// for each.
func waitKustomizations(b *testing.B, p *reqProc, ns string, n int, what string, cond func(*kustomizev1.Kustomization) bool) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list := &kustomizev1.KustomizationList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		done := 0
		for i := range list.Items {
			if cond(&list.Items[i]) {
				done++
			}
		}
		if done == n {
			return
		}
		if time.Now().After(deadline) {
			p.fail(b, "%d of %d Kustomizations with %s after 5 minutes", done, n, what)
		}
		time.Sleep(200 * time.Millisecond) // polls the Kustomizations
	}
}

func patchAll(b *testing.B, c client.Client, ns string, n int, patch string) {
	parallel(b, n, 8, func(i int) error {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("k%d", i), Namespace: ns}}
		return c.Patch(context.Background(), k, client.RawPatch("application/merge-patch+json", []byte(patch)))
	})
}

// bucketCRD is a stub of Flux's Bucket CRD: Flux's kustomize-controller
// watches Buckets, which Eddy does not serve.
const bucketCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: buckets.source.toolkit.fluxcd.io
spec:
  group: source.toolkit.fluxcd.io
  names: {kind: Bucket, listKind: BucketList, plural: buckets, singular: bucket}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// installBucketCRD installs bucketCRD unless the kind is served, and
// returns what removes it again.
func installBucketCRD(b *testing.B) func() {
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(bucketCRD), &crd.Object); err != nil {
		b.Fatal(err)
	}
	if err := env.Client.Create(ctx, crd); apierrors.IsAlreadyExists(err) {
		return func() {}
	} else if err != nil {
		b.Fatal(err)
	}
	// Established before Flux's controller starts its watch.
	deadline := time.Now().Add(time.Minute)
	for {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(crd.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), got); err == nil && established(got) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the stub Bucket CRD is not Established after a minute")
		}
		time.Sleep(100 * time.Millisecond) // polls the CRD
	}
	return func() { _ = env.Client.Delete(ctx, crd) }
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
			return true
		}
	}
	return false
}

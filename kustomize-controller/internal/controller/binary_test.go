package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// binaryShard is the shard of the objects the built binary reconciles; the
// in-process reconciler takes only unsharded ones.
const binaryShard = "binary"

// sharded labels a Kustomization for the binary, and every Kustomization
// it applies too (commonMetadata), as a Flux shard's objects are.
func sharded(k *kustomizev1.Kustomization) {
	k.Labels = map[string]string{shardKey: binaryShard}
	k.Spec.CommonMetadata = &kustomizev1.CommonMetadata{Labels: map[string]string{shardKey: binaryShard}}
}

func crdYAML(group, kind, plural, version string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[3]s.%[1]s}
spec:
  group: %[1]s
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[3]s, singular: %[4]s}
  scope: Namespaced
  versions: [{name: %[5]s, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`, group, kind, plural, strings.ToLower(kind), version)
}

// TestBinaryAppliesCRDs runs the built kustomize-controller: a Kustomization holding CustomResourceDefinitions reaches Ready,
// whether the CRDs are new or already installed, and custom resources of
// two kinds of one API group, and of a later version of a group the
// controller already knows, are applied with their CRDs.
func TestBinaryAppliesCRDs(t *testing.T) {
	ns := newNamespace(t)

	t.Run("single CRD", func(t *testing.T) {
		r := newRepo(t, map[string]string{"crds/gadgets.yaml": crdYAML("example.net", "Gadget", "gadgets", "v1")})
		newSource(t, ns, "gadgets", r)
		k := newKustomization(t, ns, "gadgets", "gadgets", func(k *kustomizev1.Kustomization) {
			sharded(k)
			k.Spec.Path = "./crds"
		})
		rev := "main@sha1:" + r.MustGit(t, "rev-parse", "HEAD")
		waitApplied(t, k, rev)
		// Applied again, the CRD is unchanged and installed: still Ready.
		requestReconcile(t, k, func() string { return k.Status.LastHandledReconcileAt })
		waitApplied(t, k, rev)
	})

	t.Run("one group, two kinds", func(t *testing.T) {
		r := newRepo(t, map[string]string{
			"widgets.yaml":       crdYAML("example.org", "Widget", "widgets", "v1"),
			"widgetclasses.yaml": crdYAML("example.org", "WidgetClass", "widgetclasses", "v1"),
			"objects.yaml": fmt.Sprintf("apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w1, namespace: %[1]s}\nspec: {class: c1}\n---\n"+
				"apiVersion: example.org/v1\nkind: WidgetClass\nmetadata: {name: c1, namespace: %[1]s}\nspec: {size: 2}\n", ns),
		})
		src := newSource(t, ns, "widgets", r)
		k := newKustomization(t, ns, "widgets", "widgets", sharded)
		waitApplied(t, k, "main@sha1:"+r.MustGit(t, "rev-parse", "HEAD"))
		assertInventory(t, k, "_c1_example.org_WidgetClass", "_w1_example.org_Widget",
			"_widgetclasses.example.org_apiextensions.k8s.io_CustomResourceDefinition",
			"_widgets.example.org_apiextensions.k8s.io_CustomResourceDefinition")

		// A third kind of the now known group, at a version the controller
		// has not seen: its REST mapper must learn it.
		rev := push(t, r, src, map[string]string{
			"widgetbindings.yaml": crdYAML("example.org", "WidgetBinding", "widgetbindings", "v1beta1"),
			"binding.yaml":        fmt.Sprintf("apiVersion: example.org/v1beta1\nkind: WidgetBinding\nmetadata: {name: b1, namespace: %s}\nspec: {widget: w1}\n", ns),
		}, "a binding kind")
		waitApplied(t, k, rev)
		assertInventory(t, k, "_b1_example.org_WidgetBinding", "_c1_example.org_WidgetClass", "_w1_example.org_Widget",
			"_widgetbindings.example.org_apiextensions.k8s.io_CustomResourceDefinition",
			"_widgetclasses.example.org_apiextensions.k8s.io_CustomResourceDefinition",
			"_widgets.example.org_apiextensions.k8s.io_CustomResourceDefinition")
	})

	t.Run("bootstrapped repository", func(t *testing.T) {
		bootstrappedRepository(t)
	})
}

// assertInventory checks k's inventory ids, each prefixed with the test
// namespace when it starts with "_" and is not cluster-scoped.
func assertInventory(t *testing.T, k *kustomizev1.Kustomization, want ...string) {
	t.Helper()
	var got []string
	for _, e := range k.Status.Inventory.Entries {
		got = append(got, strings.TrimPrefix(e.ID, k.Namespace))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("inventory\n got %v\nwant %v", got, want)
	}
}

// bootstrappedRepository: flux2-kustomize-helm-example as `flux bootstrap`
// leaves it, with Eddy's own CRDs in clusters/production/flux-system
// (installed already), reconciled by the flux-system Kustomization on
// ./clusters/production: Ready, with the CRDs and the three Kustomizations
// that the real kustomize builds from it.
func bootstrappedRepository(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t, nil)
	crdNames, err := testenv.BootstrappedRepo(testdataDir(t), "flux2-kustomize-helm-example-v2.6", "production", r.Work)
	if err != nil {
		t.Fatal(err)
	}
	rev := "main@sha1:" + r.MustCommit(t, map[string]string{}, "bootstrap")
	// The repository's Kustomizations live in flux-system and refer to the
	// GitRepository flux-system, as bootstrap creates them.
	const ns = "flux-system"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	newSource(t, ns, "flux-system", r)
	k := newKustomization(t, ns, "flux-system", "flux-system", func(k *kustomizev1.Kustomization) {
		sharded(k)
		k.Spec.Path = "./clusters/production"
		// Pruning would delete Eddy's CRDs from the shared cluster when
		// the test deletes the Kustomization.
		k.Spec.Prune = false
	})
	t.Cleanup(func() { deleteKustomizations(t, ns) })
	waitApplied(t, k, rev)

	want := []string{}
	for _, n := range crdNames {
		want = append(want, "_"+n+"_apiextensions.k8s.io_CustomResourceDefinition")
	}
	for _, o := range readExpected(t, filepath.Join(testdataDir(t), "expected", "flux2-kustomize-helm-example-v2.6", "flux",
		"production", "flux-system.flux-system", "expected-objects.txt")) {
		want = append(want, strings.TrimPrefix(o.ID(), ns))
	}
	assertInventory(t, k, want...)
	// The applied Kustomizations are the binary's (commonMetadata's shard).
	for _, name := range []string{"infra-controllers", "infra-configs", "apps"} {
		child := &kustomizev1.Kustomization{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, child); err != nil {
			t.Fatal(err)
		}
		if child.Spec.SourceRef.Kind != sourcev1.GitRepositoryKind || child.Labels[shardKey] != binaryShard {
			t.Errorf("Kustomization %s: source %v, labels %v", name, child.Spec.SourceRef, child.Labels)
		}
	}
}

// deleteKustomizations deletes the Kustomizations of ns and waits until they
// are gone (their finalizers run while the binary still runs).
func deleteKustomizations(t *testing.T, ns string) {
	ctx := context.Background()
	if err := env.Client.DeleteAllOf(ctx, &kustomizev1.Kustomization{}, client.InNamespace(ns)); err != nil {
		t.Error(err)
		return
	}
	list := &kustomizev1.KustomizationList{}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err == nil && len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("Kustomizations of %s not deleted in 60s: %d left", ns, len(list.Items))
			return
		}
	}
}

func headlessService(ns, name, spec string) string {
	return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: {" + spec + "selector: {app: db}, ports: [{port: 5432}]}\n"
}

// TestBinaryRemovedFieldsKeptByServer runs the built binary through
// removed fields: a Service losing `clusterIP: None` (kept by the API server)
// fails without force, naming the Service and the field, and is replaced
// with force; a Service losing `type: ClusterIP` and `sessionAffinity: None`
// (defaults) is configured in place; a key removed from Git is reported
// removed; an object created with `kubectl apply` and adopted is not drift.
func TestBinaryRemovedFieldsKeptByServer(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	ksNS := ns
	adopted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "adopted", Namespace: ns, Labels: map[string]string{"app": "shop"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"ConfigMap"}`}},
		Data: map[string]string{"A": "1"}}
	if err := env.Client.Create(ctx, adopted, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
	adoptedYAML := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: adopted, namespace: " + ns + ", labels: {app: shop}}\ndata: {A: \"1\"}\n"
	r := newRepo(t, map[string]string{
		"db.yaml":      headlessService(ns, "db", "clusterIP: None, "),
		"typed.yaml":   headlessService(ns, "typed", "type: ClusterIP, sessionAffinity: None, "),
		"cfg.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: " + ns + "}\ndata: {A: \"1\", OLD: x}\n",
		"adopted.yaml": adoptedYAML,
	})
	src := newSource(t, ksNS, ns, r)
	k := newKustomization(t, ksNS, ns, ns, sharded)
	waitApplied(t, k, src.Status.Artifact.Revision)
	if evs := kubeEvents(t, ksNS, k.Name, "DriftCorrected"); len(evs) != 0 {
		t.Errorf("adopting an object created by kubectl apply reported drift: %q", evs)
	}
	db, typed := &corev1.Service{}, &corev1.Service{}
	for name, svc := range map[string]*corev1.Service{"db": db, "typed": typed} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			t.Fatal(err)
		}
	}

	rev := push(t, r, src, map[string]string{
		"db.yaml":    headlessService(ns, "db", ""),
		"typed.yaml": headlessService(ns, "typed", ""),
		"cfg.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: " + ns + "}\ndata: {A: \"1\"}\n",
	}, "db is no longer headless; typed and cfg lose a field")
	c := waitFailed(t, k, meta.ReconciliationFailedReason)
	if k.Status.LastAttemptedRevision != rev || !strings.Contains(c.Message, "Service/"+ns+"/db") ||
		!strings.Contains(c.Message, ".spec.clusterIP") || !strings.Contains(c.Message, "force") || strings.Contains(c.Message, "typed") {
		t.Errorf("without force: %q, want a failure naming Service/%s/db, .spec.clusterIP and force, and not typed", c.Message, ns)
	}
	if got := clusterIP(t, ns, "db"); got != "None" {
		t.Errorf("without force the Service changed: clusterIP %q", got)
	}

	patch := client.MergeFrom(k.DeepCopy())
	k.Spec.Force = true
	if err := env.Client.Patch(ctx, k, patch); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, k, rev)
	after := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID == db.UID || after.Spec.ClusterIP == "None" || after.Spec.ClusterIP == "" {
		t.Errorf("with force: uid %s → %s, clusterIP %q; want the Service recreated with a cluster IP", db.UID, after.UID, after.Spec.ClusterIP)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "typed"}, after); err != nil || after.UID != typed.UID {
		t.Errorf("Service typed was recreated (%v): removing a default needs no replace", err)
	}
	progress := strings.Join(kubeEvents(t, ksNS, k.Name, "Progressing"), "\n")
	if !strings.Contains(progress, "Service/"+ns+"/db replaced") || !strings.Contains(progress, "Service/"+ns+"/typed configured") {
		t.Errorf("change set events %q, want Service/%s/db replaced and typed configured", progress, ns)
	}
	want := "ConfigMap/" + ns + "/cfg configured: .data.OLD removed"
	if evs := kubeEvents(t, ksNS, k.Name, "FieldsRemoved"); !strings.Contains(strings.Join(evs, "\n"), want) {
		t.Errorf("FieldsRemoved events %q, want %q", evs, want)
	}
	if evs := kubeEvents(t, ksNS, k.Name, "DriftCorrected"); len(evs) != 0 {
		t.Errorf("Git changes reported as drift: %q", evs)
	}
}

// binaryNS is a namespace for the scenarios that run the built
// kustomize-controller; newKustomization puts the Kustomizations created
// there on shard binaryShard. Both binaries POST their events to eventSink.
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
// the Kustomizations of shard binaryShard with the flags it gets in a cluster, short retries and
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
	p, err := testenv.StartController(e, exe, filepath.Join(work, "kustomize-controller.log"),
		"--watch-label-selector="+shardKey+"="+binaryShard, "--events-addr="+eventSink.url,
		"--requeue-dependency=1s", "--min-retry-delay=200ms", "--max-retry-delay=2s", "--log-level=debug")
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

// TestBinaryParentKeepsChildFinalizer: a Kustomization that applies another
// one (as flux-system applies apps) must not take the child's finalizer
// away when it reconciles again, or deleting the child would orphan its
// objects. The finalizer is the child controller's, not the applier's.
func TestBinaryParentKeepsChildFinalizer(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: " + ns + "}\ndata: {a: \"1\"}\n",
		"clusters/child.yaml": fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: child, namespace: %[1]s, labels: {%[2]s: %[3]s}}
spec: {interval: 1h, prune: true, path: ./app, sourceRef: {kind: GitRepository, name: parent}}
`, ns, shardKey, binaryShard),
	})
	src := newSource(t, ns, "parent", r)
	parent := newKustomization(t, ns, "parent", "parent", func(k *kustomizev1.Kustomization) {
		sharded(k)
		k.Spec.Path = "./clusters"
	})
	rev := src.Status.Artifact.Revision
	waitApplied(t, parent, rev)
	child := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
	waitApplied(t, child, rev)
	for i := 0; i < 2; i++ { // the second apply of the parent is the one that took it
		requestReconcile(t, parent, func() string { return parent.Status.LastHandledReconcileAt })
		waitApplied(t, parent, rev)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(child), child); err != nil {
		t.Fatal(err)
	}
	if len(child.Finalizers) != 1 || child.Finalizers[0] != kustomizev1.KustomizationFinalizer {
		t.Fatalf("child finalizers after the parent's reconciles: %v, want [%s]", child.Finalizers, kustomizev1.KustomizationFinalizer)
	}
	if evs := kubeEvents(t, ns, parent.Name, "FieldsRemoved"); len(evs) != 0 {
		t.Errorf("the parent's apply removed fields of the child: %q", evs)
	}
	// Deleting the child prunes its objects.
	if err := env.Client.Delete(ctx, child); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	deadline := time.Now().Add(time.Minute)
	for {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm)
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ConfigMap app still there a minute after its Kustomization was deleted (err %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Package sharding tests Flux-style controller sharding with the built
// binaries: several source- and kustomize-controller processes, each with
// its own --watch-label-selector on the label sharding.fluxcd.io/key, the
// unlabelled default excluding labelled objects, one leader-election lease
// per shard and an artifact address per source shard.
package sharding

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	shardKey = "sharding.fluxcd.io/key"
	// runtimeNS holds the leader-election leases (RUNTIME_NAMESPACE).
	runtimeNS = "eddy-system"
	// Leases short enough for a test, in about the ratio of Flux's
	// defaults; the renew deadline (half of it the lease requests' timeout)
	// long enough that a loaded machine's slow API server does not take
	// the lease from a live leader, which then exits.
	leaseDuration = 15 * time.Second
	renewDeadline = 12 * time.Second
	retryPeriod   = time.Second
	fleet         = 300
)

var (
	env    *testenv.Environment
	gitSrv *testenv.GitServer
)

func TestMain(m *testing.M) {
	// Every controller process inherits it: leader election needs a namespace.
	os.Setenv("RUNTIME_NAMESPACE", runtimeNS)
	testenv.Main(m, &env, testenv.WithGitServer(&gitSrv))
}

// selector is Flux's sharding selector for shard; "" is the default
// controller's, which takes only unlabelled objects.
func selector(shard string) string {
	if shard == "" {
		return "!" + shardKey
	}
	return shardKey + " in (" + shard + ")"
}

// controller is one running controller process.
type controller struct {
	name, shard string
	p           *testenv.Process
	storageAddr string // source-controller: its advertised artifact address
}

// start runs the built controller name for shard with leader election on.
func start(t *testing.T, name, shard, replica string) *controller {
	t.Helper()
	exe, err := testenv.BuildController(name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{name: name, shard: shard}
	args := []string{"--watch-label-selector=" + selector(shard), "--enable-leader-election",
		"--leader-election-lease-duration=" + leaseDuration.String(), "--leader-election-renew-deadline=" + renewDeadline.String(),
		"--leader-election-retry-period=" + retryPeriod.String(), "--log-encoding=json", "--concurrent=4",
		"--min-retry-delay=200ms", "--max-retry-delay=2s"}
	if name == "source-controller" {
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		c.storageAddr = fmt.Sprintf("127.0.0.1:%d", port)
		args = append(args, "--storage-path="+filepath.Join(t.TempDir(), "storage"),
			"--storage-addr="+c.storageAddr, "--storage-adv-addr="+c.storageAddr)
	} else {
		args = append(args, "--requeue-dependency=1s")
	}
	logName := name + "-" + shard + replica + ".log"
	if shard == "" {
		logName = name + replica + ".log"
	}
	c.p, err = testenv.StartController(env, exe, filepath.Join(t.TempDir(), logName), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.p.Stop()
		if t.Failed() {
			b, _ := os.ReadFile(c.p.LogPath)
			t.Logf("%s log (last 4 KiB):\n%s", logName, tail(b, 4096))
		}
	})
	return c
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// reconciled returns the names of the objects of kind in ns that the
// process logged a finished reconcile of.
func (c *controller) reconciled(t *testing.T, kind, ns string) map[string]bool {
	t.Helper()
	f, err := os.Open(c.p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		msg, _ := m["msg"].(string)
		name, _ := m["name"].(string)
		if m["controllerKind"] == kind && m["namespace"] == ns && name != "" &&
			(strings.HasPrefix(msg, "Reconciliation finished") || strings.HasPrefix(msg, "stored artifact")) {
			names[name] = true
		}
	}
	return names
}

func ready(conds []metav1.Condition) bool {
	return apimeta.IsStatusConditionTrue(conds, meta.ReadyCondition)
}

// waitKustomizations waits (up to timeout) until cond holds for every
// Kustomization of ns that want selects; it fails the test with the first
// few that do not.
func waitKustomizations(t *testing.T, ns, what string, timeout time.Duration, want func(*kustomizev1.Kustomization) bool, cond func(*kustomizev1.Kustomization) bool) {
	t.Helper()
	var missing []string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list := &kustomizev1.KustomizationList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		missing = missing[:0]
		for i := range list.Items {
			k := &list.Items[i]
			if want(k) && !cond(k) {
				missing = append(missing, k.Name)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		if len(missing) > 5 {
			missing = append(missing[:5], "…")
		}
		t.Fatalf("%s: %d Kustomizations not there after %s: %v", what, len(missing), timeout, missing)
	}
}

// requestAll asks every Kustomization of ns to reconcile now (Flux's
// reconcile.fluxcd.io/requestedAt) and returns the token.
func requestAll(t *testing.T, ns string, want func(*kustomizev1.Kustomization) bool) string {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	list := &kustomizev1.KustomizationList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	for i := range list.Items {
		if !want(&list.Items[i]) {
			continue
		}
		if err := env.Client.Patch(context.Background(), &list.Items[i], client.RawPatch("application/merge-patch+json", patch)); err != nil {
			t.Fatal(err)
		}
	}
	return token
}

func lease(t *testing.T, name string) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: runtimeNS, Name: name}, l); err != nil {
		return nil
	}
	return l
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitHolder waits until the lease name has a holder other than not and
// returns it.
func waitHolder(t *testing.T, name, not string, timeout time.Duration) string {
	t.Helper()
	var h string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		h = holder(lease(t, name))
		return h != "" && h != not, nil
	})
	if err != nil {
		t.Fatalf("lease %s/%s: no holder other than %q after %s (now %q)", runtimeNS, name, not, timeout, h)
	}
	return h
}

// TestShards: 3 kustomize-controller shards and the unlabelled default, 2
// source-controller shards and the default, 300 Kustomizations spread over
// them with sources on other shards. Each object is reconciled by its shard
// alone; a killed shard leaves its objects waiting while every other shard
// goes on; a second replica of a shard takes over through leader election.
func TestShards(t *testing.T) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: runtimeNS}}); err != nil {
		t.Fatal(err)
	}
	ns := testenv.NewNamespace(t, env.Client, "shards-")

	sourceShards := []string{"", "shard1", "shard2"}
	kustomizeShards := []string{"", "shard1", "shard2", "shard3"}
	sources := map[string]*controller{}
	for _, s := range sourceShards {
		sources[s] = start(t, "source-controller", s, "")
	}
	kustomizers := map[string]*controller{}
	for _, s := range kustomizeShards {
		kustomizers[s] = start(t, "kustomize-controller", s, "")
	}
	// Each process holds its own shard's lease; no two share one.
	leases := map[string]string{}
	for _, c := range append(mapValues(sources), mapValues(kustomizers)...) {
		id := controllerkit.LeaderElectionID(c.name, selector(c.shard))
		if other, ok := leases[id]; ok {
			t.Fatalf("%s shard %q and %s share the lease %s", c.name, c.shard, other, id)
		}
		leases[id] = c.name + "/" + c.shard
		waitHolder(t, id, "", 30*time.Second)
	}

	// One repository, a directory per Kustomization; a GitRepository of it
	// on each source shard, labelled for that shard.
	files := map[string]string{}
	for i := range fleet {
		files[fmt.Sprintf("k%d/cm.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  i: %q\n", i, fmt.Sprint(i))
	}
	repo := gitSrv.NewRepo(t, files)
	for _, s := range sourceShards {
		src := &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "src-" + nameOr(s, "default"), Namespace: ns, Labels: shardLabel(s)},
			Spec: sourcev1.GitRepositorySpec{URL: repo.URL(), Interval: metav1.Duration{Duration: time.Hour},
				Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
		}
		if err := env.Client.Create(ctx, src); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, env.Client, src, "artifact", func() bool { return src.Status.Artifact != nil })
		// The artifact is served by the source's own shard.
		if want := "http://" + sources[s].storageAddr + "/"; !strings.HasPrefix(src.Status.Artifact.URL, want) {
			t.Errorf("GitRepository %s: artifact URL %s, want it served by its shard at %s", src.Name, src.Status.Artifact.URL, want)
		}
	}

	// Kustomization i is on kustomize shard i%4 and uses the source of
	// source shard i%3, so most cross shards.
	shardOf := map[string]string{}
	for i := range fleet {
		s := kustomizeShards[i%len(kustomizeShards)]
		name := fmt.Sprintf("k%d", i)
		shardOf[name] = s
		k := &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: shardLabel(s)},
			Spec: kustomizev1.KustomizationSpec{
				Interval: metav1.Duration{Duration: time.Hour}, Prune: true, Path: "./" + name, TargetNamespace: ns,
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind,
					Name: "src-" + nameOr(sourceShards[i%len(sourceShards)], "default")},
			},
		}
		if err := env.Client.Create(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	all := func(*kustomizev1.Kustomization) bool { return true }
	waitKustomizations(t, ns, "all Ready", 5*time.Minute, all, func(k *kustomizev1.Kustomization) bool { return ready(k.Status.Conditions) })
	for i := range fleet {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}, cm); err != nil {
			t.Fatalf("k%d's ConfigMap: %v", i, err)
		}
	}

	// Each Kustomization was reconciled by its own shard and by no other.
	for s, c := range kustomizers {
		for name := range c.reconciled(t, kustomizev1.KustomizationKind, ns) {
			if shardOf[name] != s {
				t.Errorf("Kustomization %s (shard %q) reconciled by the kustomize-controller of shard %q", name, shardOf[name], s)
			}
		}
	}
	for name, s := range shardOf {
		if !kustomizers[s].reconciled(t, kustomizev1.KustomizationKind, ns)[name] {
			t.Errorf("Kustomization %s: no finished reconcile in the log of its shard %q", name, s)
			break
		}
	}
	for s, c := range sources {
		got := c.reconciled(t, sourcev1.GitRepositoryKind, ns)
		if want := "src-" + nameOr(s, "default"); len(got) != 1 || !got[want] {
			t.Errorf("source-controller of shard %q reconciled GitRepositories %v, want only %s", s, keys(got), want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// A second replica of shard1 stands by: it reconciles nothing while the
	// first holds the lease, and takes over when the first is killed.
	shard1ID := controllerkit.LeaderElectionID("kustomize-controller", selector("shard1"))
	first := holder(lease(t, shard1ID))
	standby := start(t, "kustomize-controller", "shard1", "-b")
	standby.shard = "shard1"

	// Kill shard3 outright: its objects wait, all others go on.
	kustomizers["shard3"].p.Kill()
	notShard3 := func(k *kustomizev1.Kustomization) bool { return shardOf[k.Name] != "shard3" }
	token := requestAll(t, ns, all)
	waitKustomizations(t, ns, "reconcile request handled with shard3 down", 2*time.Minute, notShard3,
		func(k *kustomizev1.Kustomization) bool { return k.Status.LastHandledReconcileAt == token })
	// Every other shard handled the same request; shard3's objects, alone, did not.
	list := &kustomizev1.KustomizationList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, k := range list.Items {
		if shardOf[k.Name] == "shard3" && k.Status.LastHandledReconcileAt == token {
			t.Errorf("Kustomization %s of the killed shard3 handled a reconcile request", k.Name)
		}
	}
	if got := standby.reconciled(t, kustomizev1.KustomizationKind, ns); len(got) != 0 {
		t.Errorf("the standby replica of shard1 reconciled %d Kustomizations while the first held the lease", len(got))
	}

	// Kill shard1's leader: the standby takes the lease within the lease
	// duration (plus the retry period it polls at, and slack for a loaded
	// machine), then reconciles shard1's objects.
	killed := time.Now()
	kustomizers["shard1"].p.Kill()
	next := waitHolder(t, shard1ID, first, leaseDuration+2*retryPeriod+20*time.Second)
	t.Logf("shard1: lease %s passed from %s to %s %s after the leader was killed (lease duration %s)",
		shard1ID, first, next, time.Since(killed).Round(100*time.Millisecond), leaseDuration)
	shard1 := func(k *kustomizev1.Kustomization) bool { return shardOf[k.Name] == "shard1" }
	token = requestAll(t, ns, shard1)
	waitKustomizations(t, ns, "shard1's objects reconciled by the standby", 2*time.Minute, shard1,
		func(k *kustomizev1.Kustomization) bool { return k.Status.LastHandledReconcileAt == token })
	got := standby.reconciled(t, kustomizev1.KustomizationKind, ns)
	for name, s := range shardOf {
		if s == "shard1" && !got[name] {
			t.Errorf("Kustomization %s of shard1 not reconciled by the replica that took over", name)
			break
		}
	}

	// shard3 restarted: its waiting objects are reconciled again.
	kustomizers["shard3"] = start(t, "kustomize-controller", "shard3", "-restarted")
	shard3 := func(k *kustomizev1.Kustomization) bool { return shardOf[k.Name] == "shard3" }
	token = requestAll(t, ns, shard3)
	waitKustomizations(t, ns, "shard3's objects after its restart", 2*time.Minute, shard3,
		func(k *kustomizev1.Kustomization) bool { return k.Status.LastHandledReconcileAt == token })

	// Leave nothing behind: the Kustomizations' finalizers need their shards.
	if err := env.Client.DeleteAllOf(ctx, &kustomizev1.Kustomization{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l := &kustomizev1.KustomizationList{}
		err := env.Client.List(ctx, l, client.InNamespace(ns))
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		t.Fatal("Kustomizations still there 3 minutes after deletion")
	}
}

func shardLabel(shard string) map[string]string {
	if shard == "" {
		return nil
	}
	return map[string]string{shardKey: shard}
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func mapValues(m map[string]*controller) []*controller {
	var out []*controller
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

package nodebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	ns         = "flux-system"
	appNS      = "bench-app"
	configNS   = "bench"
	sourceName = "bench"
	// appSource is the application's own GitRepository, of the same
	// repository: a commit's reconcile request goes to it alone, so that
	// commit → Ready does not depend on where the application's
	// Kustomization falls among 101 reconciles of one source (measured:
	// 8th as pods, 39th as local processes, 2 s apart).
	appSource = "bench-app"
	appKs     = "app"
	// interval of the GitRepository and the Kustomizations: long, so that
	// only the reconcile request after a push makes the commit seen.
	interval = 10 * time.Minute
)

// workload is the Git repository the GitRepository follows and what the
// benchmark applies from it: the application's Kustomization (one
// tinyapp Deployment) and the Kustomizations of ConfigMaps.
type workload struct {
	n    *node
	git  *gitserver.Server
	repo *gitserver.Repo
	head string // the pushed commit
}

// newWorkload serves a repository on the node IP (pods reach it) holding
// app/ and ks/<i>/, and creates the namespaces it applies to.
func newWorkload(ctx context.Context, b *testing.B, n *node) *workload {
	root := b.TempDir()
	srv, err := gitserver.Start(gitserver.Options{Root: root, Addr: localcluster.NodeIP + ":0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	repo, err := gitserver.NewRepo(root, "bench.git", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]string{"app/deployment.yaml": deployment(n.refs["tinyapp"], "initial")}
	for i := range kustomizations {
		var cms []string
		for j := range configMapsPerKs {
			cms = append(cms, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ks%03d-%d\n  namespace: %s\ndata:\n  key: value-%d-%d\n",
				i, j, configNS, i, j))
		}
		files[fmt.Sprintf("ks/%03d/configmaps.yaml", i)] = strings.Join(cms, "---\n")
	}
	w := &workload{n: n, git: srv, repo: repo}
	if w.head, err = repo.Commit(files, "initial"); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{appNS, configNS} {
		if err := n.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			b.Fatal(err)
		}
	}
	return w
}

// deployment is the application's manifest; rev is an env var whose
// change rolls out a new pod. The readiness probe runs every second, so
// that Ready follows the container's start closely.
func deployment(image, rev string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: tinyapp
  namespace: %s
spec:
  replicas: 1
  selector:
    matchLabels:
      app: tinyapp
  template:
    metadata:
      labels:
        app: tinyapp
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: %s
          imagePullPolicy: IfNotPresent
          args: ["--port=9898"]
          env:
            - name: BENCH_REV
              value: %q
          readinessProbe:
            periodSeconds: 1
            httpGet:
              path: /readyz
              port: 9898
`, appNS, image, rev)
}

// applyAll creates the GitRepository, the application's Kustomization and
// the 100 others, and returns the time until all are Ready at the pushed
// commit; the application's pod is Ready too when it returns.
func (w *workload) applyAll(ctx context.Context, b *testing.B) time.Duration {
	start := time.Now()
	var objs []client.Object
	for _, name := range []string{sourceName, appSource} {
		objs = append(objs, &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: sourcev1.GitRepositorySpec{URL: w.git.URL + "/" + w.repo.Name, Interval: metav1.Duration{Duration: interval},
				Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
		})
	}
	objs = append(objs, kustomization(appKs, "./app", appSource))
	for i := range kustomizations {
		objs = append(objs, kustomization(fmt.Sprintf("ks%03d", i), fmt.Sprintf("./ks/%03d", i), sourceName))
	}
	for _, o := range objs {
		if err := w.n.c.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	w.waitApplied(ctx, b, 10*time.Minute)
	took := time.Since(start)
	b.Logf("GitRepositories and %d Kustomizations Ready: %s", kustomizations+1, took.Round(100*time.Millisecond))
	w.waitSettled(ctx, b, "initial")
	return took
}

func kustomization(name, path, source string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: interval}, Path: path, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: source}},
	}
}

// waitApplied waits until the application's source has the pushed commit
// and every Kustomization is Ready with its source's revision applied.
func (w *workload) waitApplied(ctx context.Context, b *testing.B, timeout time.Duration) {
	var pending []string
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		revs := map[string]string{}
		for _, name := range []string{sourceName, appSource} {
			var g sourcev1.GitRepository
			if err := w.n.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &g); err != nil || g.Status.Artifact == nil {
				return false, nil
			}
			revs[name] = g.Status.Artifact.Revision
		}
		if !strings.HasSuffix(revs[appSource], w.head) {
			return false, nil
		}
		var l kustomizev1.KustomizationList
		if err := w.n.c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		pending = nil
		for _, k := range l.Items {
			if k.Status.LastAppliedRevision != revs[k.Spec.SourceRef.Name] || !apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.ReadyCondition) {
				pending = append(pending, k.Name)
			}
		}
		return len(l.Items) == kustomizations+1 && len(pending) == 0, nil
	}); err != nil {
		b.Fatalf("Kustomizations not Ready at %s: %v; pending: %d (%s)", w.head, err, len(pending), strings.Join(first(pending, 5), ", "))
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// commitTimes are one commit's times from its push: to the GitRepository's
// artifact of it, to the application's Kustomization Ready with it
// applied (both polled every 50 ms), and to the new pod Running and Ready
// (watched).
type commitTimes struct{ artifact, applied, ready time.Duration }

// commitToReady changes the application's env var to rev, commits, and
// measures from the push to the new pod Running and Ready; the push is
// followed at once by a reconcile request on the GitRepository. It returns
// once the rollout is over (the old pod gone, the Kustomization applied).
func (w *workload) commitToReady(ctx context.Context, b *testing.B, rev string) commitTimes {
	path := filepath.Join(w.repo.Work, "app", "deployment.yaml")
	if err := os.WriteFile(path, []byte(deployment(w.n.refs["tinyapp"], rev)), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", rev}} {
		if _, err := w.repo.Git(args...); err != nil {
			b.Fatal(err)
		}
	}
	head, err := w.repo.Git("rev-parse", "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	watcher, err := w.n.cs.CoreV1().Pods(appNS).Watch(wctx, metav1.ListOptions{LabelSelector: "app=tinyapp"})
	if err != nil {
		b.Fatal(err)
	}
	defer watcher.Stop()

	var ct commitTimes
	start := time.Now()
	pctx, stopPoll := context.WithCancel(ctx)
	polled := w.pollStages(pctx, head, start, &ct)
	defer func() { stopPoll(); <-polled }()
	if _, err := w.repo.Git("push", "-q", "--force", w.repo.Bare, "HEAD:main"); err != nil {
		b.Fatal(err)
	}
	w.head = head
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
	if err := w.n.c.Patch(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: appSource, Namespace: ns}},
		client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		b.Fatal(err)
	}
	for ev := range watcher.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && podRev(p) == rev && podReady(p) {
			ct.ready = time.Since(start)
			break
		}
	}
	if ct.ready == 0 {
		var k kustomizev1.Kustomization
		_ = w.n.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: appKs}, &k)
		var g sourcev1.GitRepository
		_ = w.n.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: appSource}, &g)
		b.Fatalf("commit %s: no pod of it Ready within 3 minutes; Kustomization %s: %+v; GitRepository: %+v",
			rev, appKs, k.Status.Conditions, g.Status.Conditions)
	}
	w.waitSettled(ctx, b, rev)
	stopPoll()
	<-polled
	b.Logf("commit %s → artifact %s, applied %s, new pod Ready %s", rev, ct.artifact.Round(time.Millisecond),
		ct.applied.Round(time.Millisecond), ct.ready.Round(time.Millisecond))
	return ct
}

// pollStages records in ct, every 50 ms until ctx ends, when the
// GitRepository's artifact and the application's Kustomization (Ready)
// first have head; the returned channel is closed when it stops.
func (w *workload) pollStages(ctx context.Context, head string, start time.Time, ct *commitTimes) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ct.artifact == 0 || ct.applied == 0 {
			var g sourcev1.GitRepository
			if ct.artifact == 0 && w.n.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: appSource}, &g) == nil &&
				g.Status.Artifact != nil && strings.HasSuffix(g.Status.Artifact.Revision, head) {
				ct.artifact = time.Since(start)
			}
			var k kustomizev1.Kustomization
			if ct.applied == 0 && w.n.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: appKs}, &k) == nil &&
				strings.HasSuffix(k.Status.LastAppliedRevision, head) && apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.ReadyCondition) {
				ct.applied = time.Since(start)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return done
}

// podRev is the pod's BENCH_REV.
func podRev(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "BENCH_REV" {
				return e.Value
			}
		}
	}
	return ""
}

// waitSettled waits until the application runs one pod, of rev, Ready,
// and every Kustomization has the pushed commit applied.
func (w *workload) waitSettled(ctx context.Context, b *testing.B, rev string) {
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := w.n.cs.CoreV1().Pods(appNS).List(ctx, metav1.ListOptions{LabelSelector: "app=tinyapp"})
		if err != nil {
			return false, nil
		}
		return len(l.Items) == 1 && podRev(&l.Items[0]) == rev && podReady(&l.Items[0]), nil
	}); err != nil {
		b.Fatalf("the application did not settle on one Ready pod of %s: %v", rev, err)
	}
	w.waitApplied(ctx, b, 3*time.Minute)
}

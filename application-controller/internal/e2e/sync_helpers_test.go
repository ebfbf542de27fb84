package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// heldPod is the pod template annotation kwok leaves alone: such a pod
// stays Pending (a Job of it runs until released or past its deadline).
const heldPod = "kwok.x-k8s.io/status: custom"

// clusterEvent is one watch event of an object in a test namespace; rv
// is its resourceVersion, which orders events of every kind on one etcd.
type clusterEvent struct {
	typ       watch.EventType
	kind      string // Kind/name
	rv        uint64
	available bool // a workload with an available replica
}

// recorder records the watch events of the kinds a sync applies in one
// namespace, so that a test sees the order objects were created in.
type recorder struct {
	mu     sync.Mutex
	events []clusterEvent
}

var recordedKinds = map[string]schema.GroupVersionResource{
	"Job":        {Group: "batch", Version: "v1", Resource: "jobs"},
	"ReplicaSet": {Group: "apps", Version: "v1", Resource: "replicasets"},
	"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
	"Service":    {Version: "v1", Resource: "services"},
	"ConfigMap":  {Version: "v1", Resource: "configmaps"},
}

// record starts watching ns (which need not exist yet) until t ends.
func record(t *testing.T, ns string) *recorder {
	t.Helper()
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for kind, gvr := range recordedKinds {
		w, err := dc.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv, _ := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
				avail, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
				rec.mu.Lock()
				rec.events = append(rec.events, clusterEvent{typ: ev.Type, kind: kind + "/" + u.GetName(), rv: rv, available: avail > 0})
				rec.mu.Unlock()
			}
		}()
	}
	return rec
}

// sorted returns the events in resourceVersion order.
func (r *recorder) sorted() []clusterEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.events)
	slices.SortFunc(out, func(a, b clusterEvent) int { return int(a.rv) - int(b.rv) })
	return out
}

// created lists the Kind/name of every ADDED event, in creation order.
func (r *recorder) created() []string {
	var out []string
	for _, e := range r.sorted() {
		if e.typ == watch.Added {
			out = append(out, e.kind)
		}
	}
	return out
}

// rvOf is the resourceVersion of the first event of obj (Kind/name)
// matching typ (and, when avail, having an available replica); 0 if none.
func (r *recorder) rvOf(obj string, typ watch.EventType, avail bool) uint64 {
	for _, e := range r.sorted() {
		if e.kind == obj && e.typ == typ && (!avail || e.available) {
			return e.rv
		}
	}
	return 0
}

// waitEvent waits until an event of obj (Kind/name) of type typ was
// recorded and returns its resourceVersion.
func (r *recorder) waitEvent(t *testing.T, obj string, typ watch.EventType) uint64 {
	t.Helper()
	var rv uint64
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		rv = r.rvOf(obj, typ, false)
		return rv != 0, nil
	})
	if err != nil {
		t.Fatalf("no %s event of %s", typ, obj)
	}
	return rv
}

// checkSteps checks that created (creation order) runs through steps in
// order: every object of a step is created after every object of the
// steps before it. Objects not named in steps are ignored.
func checkSteps(t *testing.T, created []string, steps [][]string) {
	t.Helper()
	pos := map[string]int{}
	for i, o := range created {
		if _, seen := pos[o]; !seen {
			pos[o] = i
		}
	}
	last := -1
	for _, step := range steps {
		first, end := len(created), -1
		for _, o := range step {
			p, ok := pos[o]
			if !ok {
				t.Fatalf("%s was never created; created: %v", o, created)
			}
			first, end = min(first, p), max(end, p)
		}
		if first < last {
			t.Fatalf("step %v created before the step before it ended; created: %v", step, created)
		}
		last = end
	}
}

// releaseJobPods makes the held pods of Job job in ns succeed, as a
// kubelet reports a finished container.
func releaseJobPods(t *testing.T, ns, job string) {
	t.Helper()
	releasePods(t, ns, map[string]string{"job-name": job}, func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}})
		}
	})
}

// failJobPods makes the held pods of Job job in ns fail (exit code 1).
func failJobPods(t *testing.T, ns, job string) {
	t.Helper()
	releasePods(t, ns, map[string]string{"job-name": job}, func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: now, FinishedAt: now}}})
		}
	})
}

// readyPods makes the held pods labelled labels in ns Running and Ready.
func readyPods(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	releasePods(t, ns, labels, func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
	})
}

// releasePods waits for pods labelled labels in ns and sets their status
// with set.
func releasePods(t *testing.T, ns string, labels map[string]string, set func(*corev1.Pod, metav1.Time)) {
	t.Helper()
	var pods corev1.PodList
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels))
		return err == nil && len(pods.Items) > 0, nil
	})
	if err != nil {
		t.Fatalf("no pod %v in %s", labels, ns)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		// The scheduler and kwok write the pod too: read it again on a conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			set(p, metav1.Now())
			return env.Client.Status().Update(t.Context(), p)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// gone waits until obj (typed, its name and namespace set) is deleted.
func gone(t *testing.T, obj client.Object, what string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)), nil
	})
	if err != nil {
		t.Fatalf("%s: still there", what)
	}
}

func inNS(ns string) client.ListOption { return client.InNamespace(ns) }

// manualApp is an Application of path in url without automated sync.
func manualApp(name, url, path, ns string) *argov1.Application {
	return &argov1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argocd},
		Spec: argov1.ApplicationSpec{
			Project:     "default",
			Source:      &argov1.ApplicationSource{RepoURL: url, TargetRevision: "HEAD", Path: path},
			Destination: argov1.ApplicationDestination{Server: argov1.InClusterServer, Namespace: ns},
		},
	}
}

// startSync creates a manual Application of repo's app/ directory into a
// new namespace (both named after prefix), waits until it is OutOfSync and
// requests a sync with CreateNamespace; it returns the app and namespace.
func startSync(t *testing.T, repo *testenv.Repo, prefix string) (*argov1.Application, string) {
	t.Helper()
	ns := uniqueName(prefix)
	app := manualApp(uniqueName(prefix), repo.URL(), "app", ns)
	create(t, app)
	waitApp(t, app, "OutOfSync", func() bool { return app.Status.Sync.Status == argov1.SyncStatusOutOfSync })
	requestSync(t, app, syncOp("CreateNamespace=true"))
	return app, ns
}

// syncOp is an operation patch: a sync by user "e2e" with options.
func syncOp(opts ...string) string {
	q := make([]string, len(opts))
	for i, o := range opts {
		q[i] = strconv.Quote(o)
	}
	return `{"operation":{"initiatedBy":{"username":"e2e"},"sync":{"prune":true,"syncOptions":[` + strings.Join(q, ",") + `]}}}`
}

// opPhase: the last operation ended in phase (the operation field cleared).
func opPhase(app *argov1.Application, phase string) func() bool {
	return func() bool {
		st := app.Status.OperationState
		return app.Operation == nil && st != nil && st.Phase == phase
	}
}

// running: the operation is Running with a message starting with prefix.
func running(app *argov1.Application, prefix string) func() bool {
	return func() bool {
		st := app.Status.OperationState
		return st != nil && st.Phase == argov1.OperationRunning && strings.HasPrefix(st.Message, prefix)
	}
}

// jobNames lists the Jobs of ns.
func jobNames(t *testing.T, ns string) []string {
	t.Helper()
	var jobs unstructured.UnstructuredList
	jobs.SetAPIVersion("batch/v1")
	jobs.SetKind("JobList")
	if err := env.Client.List(t.Context(), &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range jobs.Items {
		if j.GetDeletionTimestamp() == nil {
			out = append(out, j.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// exists: the object kind (a typed object) named name is in ns.
func exists(t *testing.T, obj client.Object, ns, name string) bool {
	t.Helper()
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	return err == nil && obj.GetDeletionTimestamp() == nil
}

// resultOf is the sync result of Kind/name in app's last operation.
func resultOf(app *argov1.Application, kind, name string) *argov1.ResourceResult {
	if st := app.Status.OperationState; st != nil && st.SyncResult != nil {
		for _, r := range st.SyncResult.Resources {
			if r.Kind == kind && r.Name == name {
				return r
			}
		}
	}
	return nil
}

func describeResults(app *argov1.Application) string {
	var b strings.Builder
	if st := app.Status.OperationState; st != nil && st.SyncResult != nil {
		for _, r := range st.SyncResult.Resources {
			fmt.Fprintf(&b, "%s %s/%s %s %s %q; ", r.SyncPhase, r.Kind, r.Name, r.Status, r.HookPhase, r.Message)
		}
	}
	return b.String()
}

package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitTimeout is how long WaitFor waits for a condition.
const WaitTimeout = 60 * time.Second

// WaitFor re-reads obj with c every 50ms until cond holds, at most
// WaitTimeout; on timeout it fails t with what and obj's status. cond reads
// obj, which each read overwrites. When obj has status conditions, the state
// that satisfied cond is checked with CheckStatus, and obj is checked again
// with CheckSettledStatus when t ends: each controller scenario that waits
// on an object thereby checks its status conventions.
func WaitFor(t testing.TB, c client.Client, obj client.Object, what string, cond func() bool) {
	t.Helper()
	WaitForTimeout(t, c, obj, what, WaitTimeout, cond)
}

// WaitForTimeout is WaitFor waiting at most timeout instead of WaitTimeout,
// for conditions that take longer by design (a Helm release waiting for its
// Deployments).
func WaitForTimeout(t testing.TB, c client.Client, obj client.Object, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			// A failed read (not yet created, a conflict) is tried again.
			return c.Get(ctx, client.ObjectKeyFromObject(obj), obj) == nil && cond(), nil
		})
	if err != nil {
		t.Fatalf("%s/%s: %s not reached in %s; status: %s", obj.GetNamespace(), obj.GetName(), what, timeout, statusJSON(obj))
	}
	conds, ok := Conditions(obj)
	if !ok {
		return
	}
	for _, v := range StatusViolations(conds, obj.GetGeneration(), observedGeneration(obj)) {
		t.Errorf("%s/%s after %s: status conformance: %s; status: %s", obj.GetNamespace(), obj.GetName(), what, v, statusJSON(obj))
	}
	checkSettledOnCleanup(t, c, obj)
}

// WaitGone re-reads obj with c every 50ms until it is not found, at most
// WaitTimeout; on timeout it fails t with what and obj's status (and
// finalizers).
func WaitGone(t testing.TB, c client.Client, obj client.Object, what string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, WaitTimeout, true,
		func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)), nil
		})
	if err != nil {
		t.Fatalf("%s/%s: %s: still there after %s (finalizers %v); status: %s", obj.GetNamespace(), obj.GetName(), what,
			WaitTimeout, obj.GetFinalizers(), statusJSON(obj))
	}
}

// statusJSON is obj's .status as JSON, or the whole object when it has none.
func statusJSON(obj client.Object) string {
	var v any = obj
	if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil && u["status"] != nil {
		v = u["status"]
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// NewNamespace creates a namespace named <prefix><random> and returns its name.
func NewNamespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// RequestReconcile sets reconcile.fluxcd.io/requestedAt on obj (a merge
// patch) and waits until handled, which reads obj, returns the token: the
// object's status.lastHandledReconcileAt.
func RequestReconcile(t testing.TB, c client.Client, obj client.Object, handled func() string) {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	if err := c.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, c, obj, "reconcile request "+token, func() bool { return handled() == token })
}

// KubeEvents returns the messages of the Kubernetes Events in ns about the
// object called name with the given reason ("" for any reason).
func KubeEvents(t testing.TB, c client.Client, ns, name, reason string) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && (reason == "" || e.Reason == reason) {
			out = append(out, e.Message)
		}
	}
	return out
}

// WaitListening waits up to WaitTimeout until something accepts TCP connections on
// addr (host:port).
func WaitListening(addr string) error {
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, WaitTimeout, true,
		func(context.Context) (bool, error) {
			conn, err := net.Dial("tcp", addr)
			if err == nil {
				conn.Close()
			}
			return err == nil, nil
		})
	if err != nil {
		return fmt.Errorf("nothing listens on %s after %s", addr, WaitTimeout)
	}
	return nil
}

package health

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// noList is a reader that cannot list, as an account without the right.
type noList struct{ client.Reader }

func (noList) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("forbidden")
}

func TestPodsDetailOfAPodSaysWhatItsContainersShow(t *testing.T) {
	for _, c := range []struct{ name, status, want string }{
		{"crash loop", `{phase: Running, containerStatuses: [{name: app, ready: false, restartCount: 3,
			state: {waiting: {reason: CrashLoopBackOff, message: "back-off 40s restarting failed container=app"}},
			lastState: {terminated: {exitCode: 1, reason: Error, message: "boom\n"}}}]}`,
			"container app: CrashLoopBackOff, exit code 1 (Error)"},
		{"image pull", `{phase: Pending, containerStatuses: [{name: app, ready: false,
			state: {waiting: {reason: ImagePullBackOff, message: "Back-off pulling image \"x:1\""}}}]}`,
			`container app: ImagePullBackOff (Back-off pulling image "x:1")`},
		{"config", `{phase: Pending, initContainerStatuses: [{name: init, ready: false,
			state: {waiting: {reason: CreateContainerConfigError, message: "secret \"s\" not found"}}}]}`,
			`container init: CreateContainerConfigError (secret "s" not found)`},
		{"exited", `{phase: Failed, containerStatuses: [{name: run, ready: false,
			state: {terminated: {exitCode: 2, reason: Error}}}]}`,
			"container run: terminated, exit code 2 (Error)"},
		{"unscheduled", `{phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: Unschedulable,
			message: "0/1 nodes are available"}]}`,
			"not scheduled: Unschedulable (0/1 nodes are available)"},
		{"unready, events unreadable", `{phase: Running, containerStatuses: [{name: app, ready: false, state: {running: {}}}]}`,
			"container app: running, not ready"},
		{"crash loop caught running", `{phase: Running, containerStatuses: [{name: app, ready: false, restartCount: 4,
			state: {running: {}}, lastState: {terminated: {exitCode: 1, reason: Error}}}]}`,
			"container app: running, not ready, last exit code 1 (Error)"},
		{"evicted", `{phase: Failed, reason: Evicted, message: "low on memory"}`, "failed: Evicted (low on memory)"},
		{"ready", `{phase: Running, conditions: [{type: Ready, status: "True"}], containerStatuses: [{name: app, ready: true, state: {running: {}}}]}`, ""},
		{"succeeded", `{phase: Succeeded}`, ""},
	} {
		pod := obj(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {containers: [{name: app, image: x}]}\nstatus: "+
			strings.ReplaceAll(c.status, "\t", " "))
		if got := PodsDetail(context.Background(), noList{}, pod); got != c.want {
			t.Errorf("%s: got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestPodsDetailOfOtherKindsIsEmpty(t *testing.T) {
	cm := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\n")
	if got := PodsDetail(context.Background(), noList{}, cm); got != "" {
		t.Errorf("got %q", got)
	}
	// A Deployment whose pods cannot be listed: nothing to add.
	d := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec: {selector: {matchLabels: {app: d}}}\n")
	if got := PodsDetail(context.Background(), noList{}, d); got != "" {
		t.Errorf("got %q", got)
	}
}

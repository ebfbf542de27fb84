package health

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingReader serves pods for a pod LIST and counts the event LISTs.
type countingReader struct {
	client.Reader
	pods       []unstructured.Unstructured
	eventLists int
}

func (r *countingReader) List(_ context.Context, l client.ObjectList, _ ...client.ListOption) error {
	u := l.(*unstructured.UnstructuredList)
	if u.GetKind() == "EventList" {
		r.eventLists++
		return nil
	}
	u.Items = append(u.Items, r.pods...)
	return nil
}

// A workload of 100 pods running but not ready: their one problem is said
// once, without pod names, and only the pod described has its events read.
func TestPodsDetailReadsEventsOfTheDescribedPodsOnly(t *testing.T) {
	r := &countingReader{}
	for i := 0; i < 100; i++ {
		p := obj(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: web-%03d, namespace: ns, uid: u%d}\n"+
			"status: {phase: Running, containerStatuses: [{name: app, ready: false, state: {running: {}}}]}\n", i, i))
		r.pods = append(r.pods, *p)
	}
	d := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec: {selector: {matchLabels: {app: d}}}\n")
	got := PodsDetail(context.Background(), r, d)
	want := "container app: running, not ready"
	if got != want || r.eventLists != 1 {
		t.Errorf("got %q with %d event LISTs\nwant %q with 1", got, r.eventLists, want)
	}
}

// Pods of a workload with different problems: the first maxPods problems
// are said, the pods with yet others counted; the message names no pod, so
// new pods with the same problems give the same message.
func TestPodsDetailSaysEachProblemOnceWithoutPodNames(t *testing.T) {
	pod := func(name, reason string) unstructured.Unstructured {
		return *obj(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: ns, uid: %s}\n"+
			"status: {phase: Pending, containerStatuses: [{name: app, state: {waiting: {reason: %s}}}]}\n", name, name, reason))
	}
	d := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec: {selector: {matchLabels: {app: d}}}\n")
	first := &countingReader{pods: []unstructured.Unstructured{pod("a-1", "ErrImagePull"), pod("a-2", "ErrImagePull"),
		pod("a-3", "CreateContainerConfigError"), pod("a-4", "InvalidImageName"), pod("a-5", "InvalidImageName")}}
	want := "container app: ErrImagePull; container app: CreateContainerConfigError; other problems in 2 more pod(s)"
	if got := PodsDetail(context.Background(), first, d); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	replaced := &countingReader{pods: []unstructured.Unstructured{pod("b-1", "ErrImagePull"), pod("b-2", "ErrImagePull"), pod("b-3", "CreateContainerConfigError")}}
	if got, want := PodsDetail(context.Background(), replaced, d), "container app: ErrImagePull; container app: CreateContainerConfigError"; got != want {
		t.Errorf("after the pods were replaced: got %q\nwant %q", got, want)
	}
}

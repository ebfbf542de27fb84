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

// A workload of 100 pods running but not ready: the two pods described
// have their events read, the others are only counted.
func TestPodsDetailReadsEventsOfTheDescribedPodsOnly(t *testing.T) {
	r := &countingReader{}
	for i := 0; i < 100; i++ {
		p := obj(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: web-%03d, namespace: ns, uid: u%d}\n"+
			"status: {phase: Running, containerStatuses: [{name: app, ready: false, state: {running: {}}}]}\n", i, i))
		r.pods = append(r.pods, *p)
	}
	d := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec: {selector: {matchLabels: {app: d}}}\n")
	got := PodsDetail(context.Background(), r, d)
	want := "pod web-000: container app: running, not ready; pod web-001: container app: running, not ready; 98 more pod(s) not ready"
	if got != want || r.eventLists != maxPods {
		t.Errorf("got %q with %d event LISTs\nwant %q with %d", got, r.eventLists, want, maxPods)
	}
}

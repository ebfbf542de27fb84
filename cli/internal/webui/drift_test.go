package webui

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDriftReadFromAnnotation: a drift event's ssa.DriftAnnotation is
// what the page lists, even when its message cannot be parsed (cut at the
// event length limit); a combined event's message wins over its
// annotation, which client-go does not update.
func TestDriftReadFromAnnotation(t *testing.T) {
	ns := fixture(t, "ok")
	ctx := context.Background()
	var ks kustomizev1.Kustomization
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, &ks); err != nil {
		t.Fatal(err)
	}
	annotation := `[{"object":"Deployment/` + ns + `/web","state":"changed","fields":[{"path":".spec.replicas","desired":"2","live":"5","manager":"kubectl-edit"},{"path":".metadata.labels.x","desired":"\"a\"","live":"<absent>","liveAbsent":true}]}]`
	event := func(msg string, at time.Time) {
		t.Helper()
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "apps.", Namespace: ns, Annotations: map[string]string{ssa.DriftAnnotation: annotation}},
			Reason: "DriftCorrected", Message: msg, Type: "Normal",
			InvolvedObject: corev1.ObjectReference{APIVersion: kustomizev1.GroupVersion.String(), Kind: "Kustomization", Namespace: ns, Name: "apps", UID: ks.UID},
			FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1}
		if err := env.Client.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	event("Deployment/"+ns+"/web drifted: .spec.replicas 2 → 5 (by kubectl-edit), .metadata.labels.x \"a", now)
	event("(combined from similar events): Deployment/"+ns+"/web drifted: .spec.replicas 2 → 7; corrected", now.Add(time.Second))
	base := serve(t, Options{Config: env.Config})
	var dl DriftList
	getJSON(t, base+"api/drift?owner=Kustomization/"+ns+"/apps", &dl)
	if len(dl.Drift) != 2 {
		t.Fatalf("drift: %+v, want the combined and the cut event", dl)
	}
	if f := dl.Drift[0].Fields; len(f) != 1 || f[0].New != "7" {
		t.Errorf("combined event's fields %+v: want the message's (.spec.replicas 2 → 7)", f)
	}
	want := []FieldDrift{{Path: ".spec.replicas", Old: "2", New: "5", Manager: "kubectl-edit"}, {Path: ".metadata.labels.x", Old: `"a"`, New: ""}}
	d := dl.Drift[1]
	if d.Object.Kind != "Deployment" || d.Object.Name != "web" || len(d.Fields) != 2 || d.Fields[0] != want[0] || d.Fields[1] != want[1] {
		t.Errorf("drift from the annotation %+v, want fields %+v", d, want)
	}
}

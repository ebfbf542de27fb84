package controller

import (
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
)

// TestDriftEventMasksSecretValues: the DriftCorrected event of an object
// that is not a Secret (a SOPS-encrypted ConfigMap or custom resource, or
// one with values substituted from a Secret) names its fields with their
// values; decrypted and Secret-substituted values must be masked there as
// they are in apply errors.
func TestDriftEventMasksSecretValues(t *testing.T) {
	fake := record.NewFakeRecorder(10)
	r := &KustomizationReconciler{Events: events.NewRecorder(fake, nil, "", ControllerName, logr.Discard())}
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system"}}
	changes := []ssa.Change{{
		Meta:   ssa.ObjMeta{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "apps", Name: "conf"},
		Action: ssa.Configured,
		Drift: []ssa.FieldDrift{
			{Path: ".data.password", Desired: `"hunter2-decrypted"`, Live: `"edited"`},
			{Path: ".data.key", Desired: `"-----BEGIN KEY-----\nsecret-key-body\n"`, Live: `"x"`},
		},
	}}
	r.reportChanges(r.Events, obj, changes, redact.NewValues(kustomize.SecretMask, []string{"hunter2-decrypted", "-----BEGIN KEY-----\nsecret-key-body"}))
	close(fake.Events)
	var all []string
	for e := range fake.Events {
		all = append(all, e)
	}
	got := strings.Join(all, "\n")
	t.Log(got)
	if strings.Contains(got, "hunter2-decrypted") || strings.Contains(got, "secret-key-body") {
		t.Errorf("events hold a decrypted value: %s", got)
	}
	if !strings.Contains(got, `.data.password "*****" → "edited"`) {
		t.Errorf("events: %s", got)
	}
	// The drift also travels as JSON in the Event's annotation, masked alike.
	if !strings.Contains(got, ssa.DriftAnnotation+`:[{"object":"ConfigMap/apps/conf","state":"changed","fields":[{"path":".data.password","desired":"\"*****\"","live":"\"edited\""}`) {
		t.Errorf("events lack the masked %s annotation: %s", ssa.DriftAnnotation, got)
	}
}

package ssa

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/redact"
)

func TestDriftAnnotationHoldsMaskedValues(t *testing.T) {
	secret := "hunter2\"decrypted"
	mask := redact.NewValues("***", []string{secret}).Mask
	objects := []ObjectDrift{{Object: "Secret/apps/db", State: "changed", Fields: []FieldDrift{
		{Path: ".stringData.password", Desired: `"hunter2\"decrypted"`, Live: `"edited"`, Manager: "kubectl-edit"},
		{Path: ".stringData.note", Desired: absentValue, Live: `"x"`, desiredAbsent: true},
	}}, {Object: "ConfigMap/apps/gone", State: "removed"}}
	got := DriftAnnotations(objects, mask)[DriftAnnotation]
	if got == "" || strings.Contains(got, "hunter2") {
		t.Fatalf("annotation %q: want one without the secret", got)
	}
	back, ok := ParseDriftAnnotation(got)
	if !ok || len(back) != 2 {
		t.Fatalf("ParseDriftAnnotation(%q) = %+v, %v", got, back, ok)
	}
	// The annotation holds what the message shows.
	if msg := mask(ReleaseDriftMessage("apps/db.v1", objects)); ReleaseDriftMessage("apps/db.v1", back) != msg {
		t.Errorf("annotation renders\n%s\nthe message is\n%s", ReleaseDriftMessage("apps/db.v1", back), msg)
	}
	if da, _ := back[0].Fields[1].Absent(); !da || back[0].Fields[0].Manager != "kubectl-edit" {
		t.Errorf("fields read back %+v", back[0].Fields)
	}
}

func TestDriftAnnotationLeftOutPastItsSize(t *testing.T) {
	big := fmt.Sprintf("%q", strings.Repeat("x", MaxDriftAnnotationSize))
	objects := []ObjectDrift{{Object: "ConfigMap/apps/big", State: "changed", Fields: []FieldDrift{{Path: ".data.blob", Desired: big, Live: `""`}}}}
	if a := DriftAnnotations(objects, nil); a != nil {
		t.Errorf("annotation of %d bytes kept", len(a[DriftAnnotation]))
	}
	if _, ok := ParseDriftAnnotation("drifted: not JSON"); ok {
		t.Error("a value that is not JSON read as drift")
	}
}

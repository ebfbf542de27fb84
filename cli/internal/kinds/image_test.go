package kinds

import (
	"slices"
	"testing"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestImageRowsAreFluxsImageTables: the image kinds' cells and result
// lines are those of flux get images and flux reconcile image, and they
// come after the sources and before the appliers, as in flux get all.
func TestImageRowsAreFluxsImageTables(t *testing.T) {
	scan := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	repo := &imagev1.ImageRepository{Spec: imagev1.ImageRepositorySpec{Suspend: true},
		Status: imagev1.ImageRepositoryStatus{LastScanResult: &imagev1.ScanResult{TagCount: 3, ScanTime: scan}}}
	pol := &imagev1.ImagePolicy{Status: imagev1.ImagePolicyStatus{LatestRef: &imagev1.ImageRef{Name: "ghcr.io/org/app", Tag: "1.1.0", Digest: "sha256:abc"}}}
	auto := &imagev1.ImageUpdateAutomation{Status: imagev1.ImageUpdateAutomationStatus{LastAutomationRunTime: &scan,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Message: "repository up-to-date"}}}}
	for _, tc := range []struct {
		o           Object
		cells       []string
		done, human string
	}{
		{repo, []string{scan.Format(time.RFC3339), "True"}, "scan fetched 3 tags", "image repository"},
		{pol, []string{"ghcr.io/org/app", "1.1.0"}, "selected ref ghcr.io/org/app:1.1.0@sha256:abc", "image policy"},
		{auto, []string{scan.Format(time.RFC3339), "False"}, "repository up-to-date", "image update automation"},
		{&imagev1.ImageRepository{}, []string{"", "False"}, "scan fetched 0 tags", "image repository"},
		{&imagev1.ImageUpdateAutomation{}, []string{"", "False"}, "automation not yet run", "image update automation"},
	} {
		k, _ := Of(tc.o)
		if got := k.Cells(tc.o); !slices.Equal(got, tc.cells) {
			t.Errorf("%s cells %q, want %q", k.Kind, got, tc.cells)
		}
		if got := k.Done(tc.o); got != tc.done {
			t.Errorf("%s result %q, want %q", k.Kind, got, tc.done)
		}
		if k.Human != tc.human || !k.Image {
			t.Errorf("%s human %q image %v", k.Kind, k.Human, k.Image)
		}
	}
	var order []string
	for _, k := range Flux {
		order = append(order, k.Kind)
	}
	want := []string{"OCIRepository", "Bucket", "GitRepository", "HelmRepository", "HelmChart", "ImageRepository", "ImagePolicy",
		"ImageUpdateAutomation", "HelmRelease", "Kustomization", "Receiver", "Provider", "Alert"}
	if !slices.Equal(order, want) {
		t.Errorf("Flux kinds %v, want %v", order, want)
	}
}

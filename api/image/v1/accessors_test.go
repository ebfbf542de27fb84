package v1

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestScanTimeoutDefaultsToIntervalWithAOneSecondFloor: Flux's rule for
// an ImageRepository's timeout.
func TestScanTimeoutDefaultsToIntervalWithAOneSecondFloor(t *testing.T) {
	repo := ImageRepository{Spec: ImageRepositorySpec{Interval: metav1.Duration{Duration: 5 * time.Minute}}}
	if got := repo.GetTimeout(); got != 5*time.Minute {
		t.Errorf("no timeout: %s, want the interval 5m", got)
	}
	repo.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Millisecond}
	if got := repo.GetTimeout(); got != time.Second {
		t.Errorf("timeout 10ms: %s, want 1s", got)
	}
}

// TestUnsetFieldsReadAsFluxDefaults: the accessors give Flux's defaults
// for objects the API server did not default (e.g. built in Go).
func TestUnsetFieldsReadAsFluxDefaults(t *testing.T) {
	repo := ImageRepository{}
	if got := repo.GetExclusionList(); !reflect.DeepEqual(got, []string{"^.*\\.sig$"}) {
		t.Errorf("exclusion list %q", got)
	}
	if got := repo.GetProvider(); got != "generic" {
		t.Errorf("provider %q", got)
	}
	pol := ImagePolicy{}
	if got := pol.GetDigestReflectionPolicy(); got != ReflectNever {
		t.Errorf("digest reflection %q", got)
	}
	if got := pol.GetInterval(); got != 0 {
		t.Errorf("interval without Always: %s, want 0", got)
	}
	pol.Spec.DigestReflectionPolicy = ReflectAlways
	if got := pol.GetInterval(); got != 10*time.Minute {
		t.Errorf("interval with Always and none set: %s, want 10m", got)
	}
}

// TestImageRefStringIsTheMarkerValue: name:tag, with @digest when known.
func TestImageRefStringIsTheMarkerValue(t *testing.T) {
	ref := ImageRef{Name: "ghcr.io/org/app", Tag: "1.2.3"}
	if got := ref.String(); got != "ghcr.io/org/app:1.2.3" {
		t.Errorf("%q", got)
	}
	ref.Digest = "sha256:abc"
	if got := ref.String(); got != "ghcr.io/org/app:1.2.3@sha256:abc" {
		t.Errorf("%q", got)
	}
}

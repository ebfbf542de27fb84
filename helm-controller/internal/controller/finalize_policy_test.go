package controller

import (
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A failing uninstall is retried for the uninstall's timeout
// (spec.uninstall.timeout, else spec.timeout, else 5m), at most an hour,
// about five times.
func TestUninstallWindow(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	tests := []struct {
		name         string
		spec         helmv2.HelmReleaseSpec
		window, step time.Duration
	}{
		{"defaults", helmv2.HelmReleaseSpec{}, 5 * time.Minute, time.Minute},
		{"spec.timeout", helmv2.HelmReleaseSpec{Timeout: d(10 * time.Second)}, 10 * time.Second, 2 * time.Second},
		{"uninstall.timeout", helmv2.HelmReleaseSpec{Timeout: d(time.Minute), Uninstall: &helmv2.Uninstall{Timeout: d(20 * time.Second)}}, 20 * time.Second, 4 * time.Second},
		{"capped", helmv2.HelmReleaseSpec{Timeout: d(3 * time.Hour)}, time.Hour, 12 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := uninstallWindow(&helmv2.HelmRelease{Spec: tt.spec})
			if w != tt.window || uninstallRetryStep(w) != tt.step {
				t.Errorf("window %s step %s, want %s %s", w, uninstallRetryStep(w), tt.window, tt.step)
			}
		})
	}
}

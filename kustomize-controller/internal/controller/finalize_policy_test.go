package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Only a failure that trying again cannot cure leaves an object in place
// at once; anything the target may answer differently later is retried.
func TestPermanentReason(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"deletable now", nil, ""},
		{"gone", apierrors.NewNotFound(cm, "a"), ""},
		{"unknown kind", &apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}}, "unknown kind"},
		{"forbidden", apierrors.NewForbidden(cm, "a", errors.New("no")), "forbidden"},
		{"unauthorized", apierrors.NewUnauthorized("no"), "unauthorized"},
		{"refused connection", fmt.Errorf("delete: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), ""},
		{"deadline", context.DeadlineExceeded, ""},
		{"server timeout", apierrors.NewServerTimeout(cm, "delete", 1), ""},
		{"overloaded", apierrors.NewTooManyRequests("later", 1), ""},
		{"invalid", apierrors.NewBadRequest("bad"), "badrequest"},
		{"not an API error", errors.New("no version"), "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := permanentReason(tt.err); got != tt.want {
				t.Errorf("permanentReason(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestObjectList(t *testing.T) {
	tests := []struct {
		ids  []string
		want string
	}{
		{[]string{"ConfigMap/ns/a"}, "1 object of the inventory left in place: ConfigMap/ns/a"},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, "7 objects of the inventory left in place: a, b, c, d, e and 2 more"},
	}
	for _, tt := range tests {
		if got := objectList(tt.ids); got != tt.want {
			t.Errorf("objectList(%q) = %q, want %q", tt.ids, got, tt.want)
		}
	}
}

// The retry window is the Kustomization's timeout (Flux's GetTimeout:
// spec.timeout, else interval minus 30s, at least 30s), at most an hour.
func TestFinalizeWindow(t *testing.T) {
	d := func(s string) *metav1.Duration { v, _ := time.ParseDuration(s); return &metav1.Duration{Duration: v} }
	tests := []struct {
		interval string
		timeout  *metav1.Duration
		window   time.Duration
		step     time.Duration
	}{
		{"10m", nil, 9*time.Minute + 30*time.Second, 114 * time.Second},
		{"1m", d("30s"), 30 * time.Second, 6 * time.Second},
		{"1m", d("5s"), 30 * time.Second, 6 * time.Second},
		{"24h", nil, time.Hour, 12 * time.Minute},
	}
	for _, tt := range tests {
		k := &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{Interval: *d(tt.interval), Timeout: tt.timeout}}
		if w := finalizeWindow(k); w != tt.window || finalizeRetryStep(w) != tt.step {
			t.Errorf("interval %s timeout %v: window %s step %s, want %s %s", tt.interval, tt.timeout, w, finalizeRetryStep(w), tt.window, tt.step)
		}
	}
}

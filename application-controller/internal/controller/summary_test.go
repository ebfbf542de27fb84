package controller

import (
	"errors"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/appdiff"
	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(kind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "prod", "resourceVersion": "7",
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"c2VjcmV0"}}`}}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

// comparisonOf builds a comparison of desired and live ConfigMaps or
// Secrets by name (nil: absent) with their sync status.
func comparisonOf(desired, live map[string]*unstructured.Unstructured, prune []*unstructured.Unstructured) *comparison {
	c := &comparison{target: &target{}, desired: map[string]*unstructured.Unstructured{}, live: map[string]*unstructured.Unstructured{}, drift: map[string][]ssa.FieldDrift{}}
	for k, u := range desired {
		key := keyOf(u)
		c.desired[key] = u
		c.live[key] = live[k]
		status := argov1.SyncStatusSynced
		if live[k] == nil {
			status = argov1.SyncStatusOutOfSync
		} else if d := ssa.DiffFields(live[k], u); len(d) > 0 {
			c.drift[key], status = d, argov1.SyncStatusOutOfSync
		}
		c.resources = append(c.resources, argov1.ResourceStatus{Kind: u.GetKind(), Namespace: "prod", Name: u.GetName(), Status: status})
	}
	for _, u := range prune {
		c.live[keyOf(u)] = u
		c.resources = append(c.resources, argov1.ResourceStatus{Kind: u.GetKind(), Namespace: "prod", Name: u.GetName(),
			Status: argov1.SyncStatusOutOfSync, RequiresPruning: true})
	}
	return c
}

func TestPendingDiff(t *testing.T) {
	cm := func(v string) *unstructured.Unstructured {
		return obj("ConfigMap", "cm", map[string]any{"data": map[string]any{"k": v}})
	}
	secret := func(v string) *unstructured.Unstructured {
		return obj("Secret", "s", map[string]any{"data": map[string]any{"password": v}})
	}
	cases := []struct {
		name         string
		c            *comparison
		want         []string // substrings of the encoded diff
		wantEmpty    bool
		mustNotHold  []string
		wantFieldsOf map[string]int
	}{
		{name: "synced: no annotation", c: comparisonOf(map[string]*unstructured.Unstructured{"cm": cm("a")}, map[string]*unstructured.Unstructured{"cm": cm("a")}, nil), wantEmpty: true},
		{name: "a changed field with live and desired values",
			c:    comparisonOf(map[string]*unstructured.Unstructured{"cm": cm("git")}, map[string]*unstructured.Unstructured{"cm": cm("edited")}, nil),
			want: []string{`"path":"/data/k","live":"edited","desired":"git"`}, wantFieldsOf: map[string]int{"cm": 1}},
		{name: "a missing object whole, without its resourceVersion",
			c:           comparisonOf(map[string]*unstructured.Unstructured{"cm": cm("git")}, map[string]*unstructured.Unstructured{}, nil),
			want:        []string{`"path":"","desired":{`, `"k":"git"`},
			mustNotHold: []string{"resourceVersion"}},
		{name: "an object to prune whole, live only",
			c:    comparisonOf(map[string]*unstructured.Unstructured{}, nil, []*unstructured.Unstructured{cm("old")}),
			want: []string{`"path":"","live":{`, `"k":"old"`}},
		{name: "a missing Secret masked, its last-applied record dropped",
			c:           comparisonOf(map[string]*unstructured.Unstructured{"s": secret("Z2l0")}, map[string]*unstructured.Unstructured{}, nil),
			want:        []string{`"password":"` + appdiff.MaskedDesired + `"`},
			mustNotHold: []string{"Z2l0", "c2VjcmV0"}},
		{name: "a changed Secret value masked",
			c:           comparisonOf(map[string]*unstructured.Unstructured{"s": secret("Z2l0")}, map[string]*unstructured.Unstructured{"s": secret("ZWRpdA==")}, nil),
			want:        []string{`"path":"/data/password"`, appdiff.MaskedLive},
			mustNotHold: []string{"Z2l0", "ZWRpdA=="}},
		{name: "a failed comparison: no annotation", c: &comparison{err: errSample}, wantEmpty: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := pendingDiff(tc.c)
			if tc.wantEmpty != (got == "") {
				t.Fatalf("pendingDiff = %q, want empty %v", got, tc.wantEmpty)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("pendingDiff lacks %s: %s", w, got)
				}
			}
			for _, w := range tc.mustNotHold {
				if strings.Contains(got, w) {
					t.Errorf("pendingDiff holds %s: %s", w, got)
				}
			}
			objs, err := appdiff.Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			for name, n := range tc.wantFieldsOf {
				for _, o := range objs {
					if o.Name == name && len(o.Fields) != n {
						t.Errorf("%s has %d fields, want %d: %+v", name, len(o.Fields), n, o.Fields)
					}
				}
			}
		})
	}
}

func TestPendingDiffStaysUnderItsBound(t *testing.T) {
	desired := map[string]*unstructured.Unstructured{}
	big := strings.Repeat("x", 4096)
	for i := range 40 {
		u := obj("ConfigMap", "cm"+strings.Repeat("a", i), map[string]any{"data": map[string]any{"k": big}})
		desired[u.GetName()] = u
	}
	got := pendingDiff(comparisonOf(desired, map[string]*unstructured.Unstructured{}, nil))
	objs, err := appdiff.Decode(got)
	if err != nil || len(got) > maxDiffBytes || len(objs) != 40 {
		t.Fatalf("%d bytes, %d objects, %v; want every object within %d bytes", len(got), len(objs), err, maxDiffBytes)
	}
	if objs[0].Fields[0].Desired != nil {
		t.Errorf("whole objects kept past the bound: %s", objs[0].Fields[0].Desired)
	}
}

var errSample = errors.New("sample")

package ssa_test

import (
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// driftOf is the drift ssa.DiffFields finds between two objects, so the
// fields carry its own values and absent flags.
func driftOf(t *testing.T, desired, live map[string]any) []ssa.FieldDrift {
	t.Helper()
	base := func(m map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "app", "namespace": "apps"}}}
		for k, v := range m {
			u.Object[k] = v
		}
		return u
	}
	return ssa.DiffFields(base(live), base(desired))
}

type wantField struct {
	path, desired, live, manager string
	desiredAbsent, liveAbsent    bool
}

func checkFields(t *testing.T, got []ssa.FieldDrift, want []wantField) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d fields %v, want %d %v", len(got), got, len(want), want)
	}
	for i, w := range want {
		g := got[i]
		da, la := g.Absent()
		if g.Path != w.path || g.Desired != w.desired || g.Live != w.live || g.Manager != w.manager || da != w.desiredAbsent || la != w.liveAbsent {
			t.Errorf("field %d = {%q %q %q %q absent %v %v}, want %+v", i, g.Path, g.Desired, g.Live, g.Manager, da, la, w)
		}
	}
}

func TestDriftMessage(t *testing.T) {
	meta := ssa.ObjMeta{Namespace: "apps", Name: "app", GroupKind: schema.GroupKind{Kind: "ConfigMap"}}
	fields := driftOf(t,
		map[string]any{"data": map[string]any{"a": "x, y → z (by w)", "b": "1", "gone": "v"}},
		map[string]any{"data": map[string]any{"a": "plain", "b": "2", "extra": "e"}})
	for i := range fields {
		if fields[i].Path == ".data.a" {
			fields[i].Manager = "kubectl-edit"
		}
		if fields[i].Path == ".data.b" {
			fields[i].Manager = "odd), manager"
		}
	}
	msg := ssa.DriftMessage(meta, fields)
	want := `ConfigMap/apps/app drifted: .data.a "x, y → z (by w)" → "plain" (by kubectl-edit), ` +
		`.data.b "1" → "2" (by odd), manager), .data.extra <absent> → "e", .data.gone "v" → <absent>; corrected`
	if msg != want {
		t.Fatalf("DriftMessage:\n got %s\nwant %s", msg, want)
	}
	obj, got, ok := ssa.ParseDriftMessage(msg)
	if !ok || obj != "ConfigMap/apps/app" {
		t.Fatalf("ParseDriftMessage = %q, ok %v", obj, ok)
	}
	// A manager holding "), " is outside the round trip: it is cut at its first ")".
	if got[1].Manager == "odd), manager" {
		t.Fatalf("manager %q read whole, which the doc says cannot be", got[1].Manager)
	}

	fields[1].Manager = "odd (manager)"
	obj, got, ok = ssa.ParseDriftMessage(ssa.DriftMessage(meta, fields))
	if !ok || obj != "ConfigMap/apps/app" {
		t.Fatalf("ParseDriftMessage = %q, ok %v", obj, ok)
	}
	checkFields(t, got, []wantField{
		{".data.a", `"x, y → z (by w)"`, `"plain"`, "kubectl-edit", false, false},
		{".data.b", `"1"`, `"2"`, "odd (manager)", false, false},
		{".data.extra", "<absent>", `"e"`, "", true, false},
		{".data.gone", `"v"`, "<absent>", "", false, true},
	})
}

func TestParseDriftMessageMasked(t *testing.T) {
	meta := ssa.ObjMeta{Namespace: "apps", Name: "app", GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}}
	fields := driftOf(t,
		map[string]any{"spec": map[string]any{"replicas": int64(4242), "token": "s3cret-x", "port": int64(12345)}},
		map[string]any{"spec": map[string]any{"replicas": int64(1), "token": "other", "port": int64(1)}})
	// As the controller does: secret values masked after formatting; 4242
	// whole, 234 inside 12345 (no JSON left there).
	msg := redact.NewValues("*****", []string{"4242", "s3cret", "234"}).Mask(ssa.DriftMessage(meta, fields))
	obj, got, ok := ssa.ParseDriftMessage(msg)
	if !ok || obj != "Deployment/apps/app" {
		t.Fatalf("ParseDriftMessage(%s) = %q, ok %v", msg, obj, ok)
	}
	checkFields(t, got, []wantField{
		{".spec.port", "1*****5", "1", "", false, false},
		{".spec.replicas", "*****", "1", "", false, false},
		{".spec.token", `"*****-x"`, `"other"`, "", false, false},
	})
}

func TestParseDriftMessageRefuses(t *testing.T) {
	for _, msg := range []string{
		"",
		"; corrected",
		"ConfigMap/apps/app drifted: ; corrected",
		"ConfigMap/apps/app drifted: .data.a \"x\" → \"y\"",                 // no "; corrected"
		"ConfigMap/apps/app drifted: .data.a \"x\" \"y\"; corrected",        // no arrow
		"ConfigMap/apps/app drifted: .data.a \"x → \"y\"; corrected",        // broken JSON, no mask
		"ConfigMap/apps/app drifted: .data.a \"x\" → \"y\" (by ; corrected", // manager unterminated
		"Cluster state of release apps/app has been corrected:\nConfigMap/apps/app changed",
	} {
		if obj, fields, ok := ssa.ParseDriftMessage(msg); ok {
			t.Errorf("ParseDriftMessage(%q) = %q %v, want not ok", msg, obj, fields)
		}
	}
}

// FuzzDriftMessage: no input makes the parser panic, and a message written
// by DriftMessage reads back as its fields (in the documented domain).
func FuzzDriftMessage(f *testing.F) {
	f.Add(".data.a", `x, y → z`, "plain", "kubectl-edit", false, false, "ConfigMap/apps/app drifted: .data.a \"1\" → 2; corrected")
	f.Add(".spec.replicas", "3", "", "", false, true, "x drifted: a *** → <absent> (by m); corrected")
	f.Add(".metadata.labels.a b", "", `"q"`, "m (x)", true, false, "")
	f.Fuzz(func(t *testing.T, path, desired, live, manager string, desiredAbsent, liveAbsent bool, raw string) {
		ssa.ParseDriftMessage(raw) // must not panic

		// The documented domain of the round trip.
		if path == "" || strings.HasPrefix(path, " ") || strings.Contains(path, " → ") || strings.Contains(path, " (by ") ||
			strings.Contains(manager, "), ") {
			return
		}
		if desiredAbsent && liveAbsent {
			return // Diff never reports a field absent on both sides
		}
		d, l := map[string]any{}, map[string]any{}
		if !desiredAbsent {
			d["v"] = desired
		}
		if !liveAbsent {
			l["v"] = live
		}
		if !desiredAbsent && !liveAbsent && desired == live {
			return
		}
		fields := driftOf(t, map[string]any{"spec": d}, map[string]any{"spec": l})
		for i := range fields {
			fields[i].Path = path + fields[i].Path
			fields[i].Manager = manager
		}
		meta := ssa.ObjMeta{Namespace: "apps", Name: "app", GroupKind: schema.GroupKind{Kind: "ConfigMap"}}
		msg := ssa.DriftMessage(meta, fields)
		obj, got, ok := ssa.ParseDriftMessage(msg)
		if !ok || obj != "ConfigMap/apps/app" {
			t.Fatalf("ParseDriftMessage(%q) = %q, ok %v", msg, obj, ok)
		}
		want := make([]wantField, len(fields))
		for i, fd := range fields {
			da, la := fd.Absent()
			want[i] = wantField{fd.Path, fd.Desired, fd.Live, fd.Manager, da, la}
		}
		checkFields(t, got, want)
	})
}

// TestParseReleaseDriftMessage reads helm-controller's DriftDetected
// message as its drift.Report.Summary writes it.
func TestParseReleaseDriftMessage(t *testing.T) {
	msg := "Cluster state of release apps/web.v3 has drifted from the desired state:\n" +
		`Deployment/apps/web changed (1 additions, 1 changes, 0 removals): .spec.replicas 1 → 3 (by kubectl-scale), .spec.paused false → <absent>` + "\n" +
		"ConfigMap/apps/web removed\n" +
		"Secret/apps/web changed (0 additions, 1 changes, 0 removals)\n" +
		"Service/apps/web excluded"
	rel, objs, ok := ssa.ParseReleaseDriftMessage(msg)
	if !ok || rel != "apps/web.v3" || len(objs) != 4 {
		t.Fatalf("ParseReleaseDriftMessage = %q %+v %v", rel, objs, ok)
	}
	for i, want := range []string{"Deployment/apps/web changed", "ConfigMap/apps/web removed", "Secret/apps/web changed", "Service/apps/web excluded"} {
		if got := objs[i].Object + " " + objs[i].State; got != want {
			t.Errorf("object %d = %q, want %q", i, got, want)
		}
	}
	checkFields(t, objs[0].Fields, []wantField{
		{".spec.replicas", "1", "3", "kubectl-scale", false, false},
		{".spec.paused", "false", "<absent>", "", false, true},
	})
	if len(objs[2].Fields) != 0 {
		t.Errorf("fields of a line without any: %v", objs[2].Fields)
	}
	for _, bad := range []string{
		"Cluster state of release apps/web.v3 has been corrected:\nConfigMap/apps/web created",
		"Cluster state of release apps/web.v3 has drifted from the desired state:\nConfigMap/apps/web moved",
		"Cluster state of release apps/web.v3 has drifted from the desired state:\nConfigMap/apps/web changed (x)",
	} {
		if _, _, ok := ssa.ParseReleaseDriftMessage(bad); ok {
			t.Errorf("ParseReleaseDriftMessage(%q) ok", bad)
		}
	}
}

// TestReleaseDriftMessageRoundTrip: the DriftDetected message helm-controller
// writes is read back whole, objects, states and fields.
func TestReleaseDriftMessageRoundTrip(t *testing.T) {
	fields := driftOf(t,
		map[string]any{"data": map[string]any{"a": "1", "gone": "v"}},
		map[string]any{"data": map[string]any{"a": "2", "extra": "e"}})
	fields[0].Manager = "kubectl-edit"
	objects := []ssa.ObjectDrift{
		{Object: "ConfigMap/apps/web", State: "changed", Fields: fields},
		{Object: "Secret/apps/web", State: "removed"},
		{Object: "ClusterRole/web", State: "excluded"},
	}
	msg := ssa.ReleaseDriftMessage("apps/web.v3", objects)
	want := "Cluster state of release apps/web.v3 has drifted from the desired state:\n" +
		`ConfigMap/apps/web changed (1 additions, 1 changes, 1 removals): .data.a "1" → "2" (by kubectl-edit), .data.extra <absent> → "e", .data.gone "v" → <absent>` + "\n" +
		"Secret/apps/web removed\nClusterRole/web excluded"
	if msg != want {
		t.Fatalf("ReleaseDriftMessage:\n got %s\nwant %s", msg, want)
	}
	rel, got, ok := ssa.ParseReleaseDriftMessage(msg)
	if !ok || rel != "apps/web.v3" || len(got) != len(objects) {
		t.Fatalf("ParseReleaseDriftMessage = %q %+v %v", rel, got, ok)
	}
	for i, o := range objects {
		if got[i].Object != o.Object || got[i].State != o.State || len(got[i].Fields) != len(o.Fields) {
			t.Errorf("object %d = %+v, want %+v", i, got[i], o)
		}
	}
	checkFields(t, got[0].Fields, []wantField{
		{".data.a", `"1"`, `"2"`, "kubectl-edit", false, false},
		{".data.extra", "<absent>", `"e"`, "", true, false},
		{".data.gone", `"v"`, "<absent>", "", false, true},
	})
}

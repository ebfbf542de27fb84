package ssa

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldDrift is one field in which a live object differs from the desired one.
type FieldDrift struct {
	// Path like `.data.FEATURE_X` or `.spec.template.spec.containers[0].image`.
	Path string
	// Desired and Live are the values as JSON ("" when absent); Secret
	// values are masked.
	Desired, Live string
	// Manager is the field manager that last wrote the live value, read from
	// managedFields; empty when unknown.
	Manager string

	segments                  []segment
	desiredAbsent, liveAbsent bool
}

// String renders `<path> "<desired>" → "<live>" (by <manager>)`.
func (f FieldDrift) String() string {
	s := fmt.Sprintf("%s %s → %s", f.Path, f.Desired, f.Live)
	if f.Manager != "" {
		s += " (by " + f.Manager + ")"
	}
	return s
}

// Pointer is the field's path as an RFC 6901 JSON pointer, e.g.
// "/spec/template/spec/containers/0/image" ("~" and "/" in keys escaped
// as "~0" and "~1"): unlike Path, exact for keys that hold dots.
func (f FieldDrift) Pointer() string {
	var b strings.Builder
	for _, s := range f.segments {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
			continue
		}
		b.WriteString(escapePointer(s.field))
	}
	return b.String()
}

// Absent reports whether the field is missing from the desired object, and
// whether it is missing from the live one.
func (f FieldDrift) Absent() (desired, live bool) { return f.desiredAbsent, f.liveAbsent }

// ObjectDiff is one desired object against its live one, as Manager.Diff
// found it.
type ObjectDiff struct {
	// Live is the live object, nil when there is none; Dry is the API
	// server's dry-run result of the desired object.
	Live, Dry *unstructured.Unstructured
	// CmpLive and CmpDry are Live and Dry as compared: copies without the
	// ignored fields (Live and Dry themselves when none is ignored). CmpLive
	// is nil when Live is.
	CmpLive, CmpDry *unstructured.Unstructured
}

// Fields lists the fields in which the live object differs from the
// dry-run result (DiffFields of CmpLive and CmpDry); nil when there is no
// live object.
func (d *ObjectDiff) Fields() []FieldDrift {
	if d.CmpLive == nil {
		return nil
	}
	return DiffFields(d.CmpLive, d.CmpDry)
}

// Diff dry-runs desired with server-side apply as field manager m.Owner,
// conflicts forced, nothing written, and pairs the result with live (nil:
// the object does not exist), both less the fields (RFC 6901 pointers) of
// the ignore rules that match desired; an ignored list item is blanked
// (null), not removed, so the items after it keep their positions. A core
// Secret's stringData in desired is moved into data first (base64), in
// place, as ApplyAll does. The error is the API server's, unwrapped, for
// the caller to word. Used by ApplyAll's plans and helm-controller's drift
// detection.
func (m *Manager) Diff(ctx context.Context, desired, live *unstructured.Unstructured, ignore []IgnoreRule) (*ObjectDiff, error) {
	normalizeSecret(desired)
	return m.diff(ctx, desired, live, ignoredPaths(ignore, desired))
}

// diff is Diff with the ignored fields as pointer tokens.
func (m *Manager) diff(ctx context.Context, desired, live *unstructured.Unstructured, ignored [][]string) (*ObjectDiff, error) {
	dry := desired.DeepCopy()
	if err := m.Client.Patch(ctx, dry, client.Apply, client.DryRunAll, client.FieldOwner(m.Owner), client.ForceOwnership); err != nil {
		return nil, err
	}
	d := &ObjectDiff{Live: live, Dry: dry, CmpLive: live, CmpDry: dry}
	if live != nil && len(ignored) > 0 {
		d.CmpLive, d.CmpDry = withoutPaths(live, ignored), withoutPaths(dry, ignored)
	}
	return d, nil
}

// DryRun plans one desired object as ApplyAll would and writes nothing:
// the action ApplyAll would take (Created, Configured, Unchanged, Skipped
// or Replaced) and, for an existing object, every field in which the API
// server's dry-run result differs from the live object, whoever set it
// (fields of opts.Ignore left out; Secret values masked). u is not
// modified. The error is ApplyAll's dry-run error ("<Kind>/<ns>/<name>
// dry-run failed: <reason>"). Used by `eddy diff kustomization`.
func (m *Manager) DryRun(ctx context.Context, u *unstructured.Unstructured, opts ApplyOptions) (Action, []FieldDrift, error) {
	p, err := m.plan(ctx, u.DeepCopy(), opts, nil)
	if err != nil {
		return "", nil, err
	}
	if p.action == Skipped || p.action == Created || p.cmpLive == nil || p.cmpDry == nil {
		return p.action, nil, nil
	}
	return p.action, DiffFields(p.cmpLive, p.cmpDry), nil
}

// DiffFields lists the fields in which live differs from desired (a dry-run
// result), with the manager of each live value, sorted by path. Metadata
// other than labels and annotations, and status, are not compared.
func DiffFields(live, desired *unstructured.Unstructured) []FieldDrift {
	var out []FieldDrift
	walkDiff("", nil, comparableForDiff(desired), comparableForDiff(live), &out)
	secret := live.GetKind() == "Secret" && live.GroupVersionKind().Group == ""
	managers := live.GetManagedFields()
	for i := range out {
		if secret && (strings.HasPrefix(out[i].Path, ".data") || strings.HasPrefix(out[i].Path, ".stringData")) {
			out[i].Desired, out[i].Live = mask(out[i].Desired), mask(out[i].Live)
		}
		out[i].Manager = managerOf(managers, out[i].segments, live.Object)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func mask(v string) string {
	if v == "" {
		return v
	}
	return `"***"`
}

func comparableForDiff(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
			out[k] = v
		}
	}
	md := map[string]any{}
	if l := u.GetLabels(); len(l) > 0 {
		md["labels"] = toAny(l)
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		md["annotations"] = toAny(a)
	}
	if len(md) > 0 {
		out["metadata"] = md
	}
	return out
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// walkDiff appends the leaves where desired and live differ. segs is path
// split into fields and indices (a key may hold dots: label keys do).
func walkDiff(path string, segs []segment, desired, live any, out *[]FieldDrift) {
	if equality.Semantic.DeepEqual(desired, live) {
		return
	}
	dm, dok := desired.(map[string]any)
	lm, lok := live.(map[string]any)
	// A map on one side only is walked against an empty one, so the
	// leaves added or removed are listed one by one.
	if dok && live == nil {
		lm, lok = map[string]any{}, true
	}
	if lok && desired == nil {
		dm, dok = map[string]any{}, true
	}
	if dok && lok {
		keys := map[string]bool{}
		for k := range dm {
			keys[k] = true
		}
		for k := range lm {
			keys[k] = true
		}
		for k := range keys {
			walkDiff(path+"."+k, append(segs[:len(segs):len(segs)], segment{field: k, index: -1}), dm[k], lm[k], out)
		}
		return
	}
	ds, dok := desired.([]any)
	ls, lok := live.([]any)
	if dok && lok && len(ds) == len(ls) {
		for i := range ds {
			walkDiff(fmt.Sprintf("%s[%d]", path, i), append(segs[:len(segs):len(segs)], segment{index: i}), ds[i], ls[i], out)
		}
		return
	}
	*out = append(*out, FieldDrift{Path: path, Desired: render(desired), Live: render(live), segments: segs,
		desiredAbsent: desired == nil, liveAbsent: live == nil})
}

func render(v any) string {
	if v == nil {
		return "<absent>"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

type segment struct {
	field string
	index int // -1 for fields
}

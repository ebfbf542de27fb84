// Package drift compares a Helm release's manifest with the cluster and
// corrects the difference, as Flux's helm-controller does
// (flux-contract-2.10.md §2.1 fact 5): server-side apply dry-runs as field
// owner helm-controller, objects opted out by label or annotation left out,
// driftDetection.ignore pointers dropped; correction by Create and JSON
// patch, not by apply.
package drift

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/ssa"
)

// FieldOwner is the field manager of the dry-runs and corrections.
const FieldOwner = "helm-controller"

// Opt-out: an object labelled or annotated DisabledKey: DisabledValue, in
// the manifest or in the cluster, is not compared. Flux compatible.
const (
	DisabledKey   = "helm.toolkit.fluxcd.io/driftDetection"
	DisabledValue = "disabled"
)

// The metadata Helm sets on the objects it creates, and which the release
// manifest lacks.
const (
	managedByLabel             = "app.kubernetes.io/managed-by"
	managedByHelm              = "Helm"
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// State is how an object of the release stands against the cluster; the
// words are Flux's summary words.
type State string

const (
	// Changed: the cluster object differs from the release's.
	Changed State = "changed"
	// Missing: the object is not in the cluster (Flux's word: removed).
	Missing State = "removed"
	// Excluded: the object opted out of drift detection.
	Excluded State = "excluded"
)

// Object is one object of the release that drifted or was left out.
type Object struct {
	Meta    ssa.ObjMeta
	Version string
	State   State
	// Fields lists, for a Changed object, each field whose cluster value
	// differs: path, release value → cluster value, and the field manager
	// that wrote the cluster value (pkg/ssa's drift wording; Secret data
	// masked).
	Fields []ssa.FieldDrift

	desired *unstructured.Unstructured
	patch   []byte // JSON patch turning the cluster object into the release's
}

// Report is the result of Detect: the objects that changed, are missing or
// are excluded, in manifest order. Unchanged objects are not listed.
type Report struct {
	Objects []Object
}

// Drifted reports whether an object changed or is missing (excluded ones
// are no drift).
func (r *Report) Drifted() bool {
	for _, o := range r.Objects {
		if o.State == Changed || o.State == Missing {
			return true
		}
	}
	return false
}

// Drifts is the report as pkg/ssa words it: each object as
// `Kind/ns/name`, its state and, for a changed one, its fields.
func (r *Report) Drifts() []ssa.ObjectDrift {
	out := make([]ssa.ObjectDrift, len(r.Objects))
	for i, o := range r.Objects {
		out[i] = ssa.ObjectDrift{Object: o.Meta.String(), State: string(o.State)}
		if o.State == Changed {
			out[i].Fields = o.Fields
		}
	}
	return out
}

// Summary is the text after "Cluster state of release <rel> has drifted
// from the desired state:\n" (ssa.ReleaseDriftSummary): one line per
// object, as Flux writes it (`Kind/ns/name removed`, `Kind/ns/name
// excluded`, `Kind/ns/name changed (A additions, C changes, R removals)`),
// a changed object's line followed by ": " and its fields (`<path>
// <release value> → <cluster value> (by <manager>)`, comma-separated, as
// kustomize-controller's drift events). Empty when nothing is listed.
func (r *Report) Summary() string { return ssa.ReleaseDriftSummary(r.Drifts()) }

// Detect compares the objects of a release manifest (Helm storage's
// manifest, hooks not included) with the cluster. Each object gets the
// metadata Helm sets (label app.kubernetes.io/managed-by: Helm, annotations
// meta.helm.sh/release-name and -namespace) and, if namespaced and without
// one, the release namespace; then it is dry-run with server-side apply
// (field owner helm-controller, conflicts forced) and the result compared
// with the live object: labels, annotations (added or changed only) and
// everything outside metadata and status, less the driftDetection.ignore
// pointers of the rules whose target matches the object (a rule with the
// pointer "" excludes it). Objects opted out (DisabledKey) are Excluded.
//
// c must read the API server directly (not a cache). Errors of single
// objects (kind not served, dry-run refused) are joined into the returned
// error, next to a report of the other objects; an unreadable manifest or
// an invalid ignore target returns no report. Error texts hold no Secret
// data.
func Detect(ctx context.Context, c client.Client, manifest string, releaseName, releaseNamespace string, dd helmv2.DriftDetection) (*Report, error) {
	objs, err := readObjects(manifest)
	if err != nil {
		return nil, fmt.Errorf("failed to read objects from release manifest: %w", err)
	}
	rules := make([]ssa.IgnoreRule, 0, len(dd.Ignore))
	for i, r := range dd.Ignore {
		rule, err := ssa.NewIgnoreRule(r.Paths, (*ssa.Selector)(r.Target))
		if err != nil {
			return nil, fmt.Errorf("driftDetection.ignore[%d].target: %w", i, err)
		}
		rules = append(rules, rule)
	}

	report := &Report{}
	var errs []error
	namespaced := map[string]bool{}
	for _, u := range objs {
		setHelmMetadata(u, releaseName, releaseNamespace)
		if u.GetNamespace() == "" {
			gvk := u.GroupVersionKind().String()
			if _, ok := namespaced[gvk]; !ok {
				ns, err := c.IsObjectNamespaced(u)
				if err != nil {
					errs = append(errs, fmt.Errorf("failed to determine if %s is namespace scoped: %w", u.GetKind(), err))
					continue
				}
				namespaced[gvk] = ns
			}
			if namespaced[gvk] {
				u.SetNamespace(releaseNamespace)
			}
		}
		o, err := detectObject(ctx, c, u, rules)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if o != nil {
			report.Objects = append(report.Objects, *o)
		}
	}
	return report, kerrors.Reduce(kerrors.NewAggregate(errs))
}

// detectObject compares one object; nil when it is in sync.
func detectObject(ctx context.Context, c client.Client, u *unstructured.Unstructured, rules []ssa.IgnoreRule) (*Object, error) {
	meta := ssa.MetaOf(u)
	o := &Object{Meta: meta, Version: u.GroupVersionKind().Version, desired: u}
	if optedOut(u) || ignoresRoot(rules, u) {
		o.State = Excluded
		return o, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	switch err := c.Get(ctx, client.ObjectKeyFromObject(u), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, fmt.Errorf("%s query failed: %s", meta, reason(err, u))
	}
	if live != nil && optedOut(live) {
		o.State = Excluded
		return o, nil
	}
	m := &ssa.Manager{Client: c, Owner: FieldOwner}
	d, err := m.Diff(ctx, u, live, rules)
	if err != nil {
		return nil, fmt.Errorf("%s dry-run failed: %s", meta, reason(err, u))
	}
	if live == nil {
		o.State = Missing
		return o, nil
	}
	for _, f := range d.Fields() {
		// Labels and annotations only the cluster has are no drift (Flux
		// compares metadata for additions and changes only).
		if desiredAbsent, _ := f.Absent(); desiredAbsent && strings.HasPrefix(f.Path, ".metadata.") {
			continue
		}
		o.Fields = append(o.Fields, f)
	}
	if len(o.Fields) == 0 {
		return nil, nil
	}
	patch, err := jsonPatch(d.CmpLive, d.CmpDry)
	if err != nil {
		return nil, fmt.Errorf("%s diff failed: %w", meta, err)
	}
	o.State, o.patch = Changed, patch
	return o, nil
}

// Correct makes the cluster match the release where the report found drift:
// missing objects are created, changed ones patched with a JSON patch (the
// fields the report lists, nothing else), as field manager helm-controller;
// excluded objects are left alone. It returns the change set, one
// `Kind/ns/name created|configured` line per corrected object (objects in
// apply order, creations first), and the failures joined as
// `Kind/ns/name creation|patch failure: <reason>` (Secret data masked).
// Both may be non-empty: a partial correction.
func Correct(ctx context.Context, c client.Client, report *Report) (string, error) {
	var create, patch []*unstructured.Unstructured
	byObject := map[*unstructured.Unstructured]Object{}
	for _, o := range report.Objects {
		switch o.State {
		case Missing:
			create = append(create, o.desired)
		case Changed:
			patch = append(patch, o.desired)
		default:
			continue
		}
		byObject[o.desired] = o
	}
	ssa.SortObjects(create)
	ssa.SortObjects(patch)

	var changes []string
	var errs []error
	for _, u := range create {
		o := byObject[u]
		if err := c.Create(ctx, u.DeepCopy(), client.FieldOwner(FieldOwner)); err != nil {
			errs = append(errs, fmt.Errorf("%s creation failure: %s", o.Meta, reason(err, u)))
			continue
		}
		changes = append(changes, ssa.Change{Meta: o.Meta, Version: o.Version, Action: ssa.Created}.String())
	}
	for _, u := range patch {
		o := byObject[u]
		if err := c.Patch(ctx, u.DeepCopy(), client.RawPatch(types.JSONPatchType, o.patch), client.FieldOwner(FieldOwner)); err != nil {
			errs = append(errs, fmt.Errorf("%s patch failure: %s", o.Meta, reason(err, u)))
			continue
		}
		changes = append(changes, ssa.Change{Meta: o.Meta, Version: o.Version, Action: ssa.Configured}.String())
	}
	return strings.Join(changes, "\n"), kerrors.NewAggregate(errs)
}

// readObjects splits a manifest into objects, skipping empty documents.
func readObjects(manifest string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("object %q has no apiVersion or kind", u.GetName())
		}
		objs = append(objs, u)
	}
}

func setHelmMetadata(u *unstructured.Unstructured, name, namespace string) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = managedByHelm
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[releaseNameAnnotation] = name
	annotations[releaseNamespaceAnnotation] = namespace
	u.SetAnnotations(annotations)
}

func optedOut(u *unstructured.Unstructured) bool {
	return u.GetLabels()[DisabledKey] == DisabledValue || u.GetAnnotations()[DisabledKey] == DisabledValue
}

// ignoresRoot reports whether a matching rule ignores the whole object.
func ignoresRoot(rules []ssa.IgnoreRule, u *unstructured.Unstructured) bool {
	for _, r := range rules {
		if r.Match != nil && !r.Match(u) {
			continue
		}
		for _, p := range r.Paths {
			if p == "" {
				return true
			}
		}
	}
	return false
}

// comparable is what drift compares and corrects: labels, annotations and
// everything outside metadata and status. metadata is always present, so a
// patch adds labels under it rather than replacing it.
func comparable(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
			out[k] = v
		}
	}
	md := map[string]any{}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := u.Object["metadata"].(map[string]any)[k]; ok {
			md[k] = v
		}
	}
	out["metadata"] = md
	return out
}

// jsonPatch is the RFC 6902 patch from live to desired, without removals of
// labels or annotations.
func jsonPatch(live, desired *unstructured.Unstructured) ([]byte, error) {
	a, err := json.Marshal(comparable(live))
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(comparable(desired))
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(a, b)
	if err != nil {
		return nil, err
	}
	kept := ops[:0]
	for _, op := range ops {
		if op.Operation == "remove" && (strings.HasPrefix(op.Path, "/metadata/labels/") || strings.HasPrefix(op.Path, "/metadata/annotations/")) {
			continue
		}
		kept = append(kept, op)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(kept); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// reason is the API server's message; for a core Secret an Invalid error
// keeps only its last part, as values may be quoted before it.
func reason(err error, u *unstructured.Unstructured) string {
	msg := err.Error()
	var s apierrors.APIStatus
	if errors.As(err, &s) && s.Status().Message != "" {
		msg = s.Status().Message
	}
	if u.GetKind() == "Secret" && u.GroupVersionKind().Group == "" && apierrors.IsInvalid(err) {
		if i := strings.LastIndex(msg, ":"); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
	}
	return msg
}

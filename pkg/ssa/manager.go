// Package ssa applies sets of objects with server-side apply the way Flux's
// kustomize-controller does (contract §4.3–4.4): in stages, validating the
// whole set with server-side dry-runs before writing, writing only objects
// that are new or drifted, and deleting objects that left the set.
package ssa

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Annotations and labels that steer the applier; matched case-insensitively
// as label or annotation. Flux compatible.
const (
	ReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile" // "disabled": never applied nor pruned
	SSAAnnotation       = "kustomize.toolkit.fluxcd.io/ssa"       // "IfNotPresent", "Ignore", "Merge"
	ForceAnnotation     = "kustomize.toolkit.fluxcd.io/force"     // "enabled": recreate on immutable-field errors
	PruneAnnotation     = "kustomize.toolkit.fluxcd.io/prune"     // "disabled": never pruned
)

// Action is what the applier did to an object.
type Action string

// Actions of a change set. Flux compatible.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	Deleted    Action = "deleted"
	Skipped    Action = "skipped"
	// Replaced (beyond Flux): the object was deleted and created again, with
	// force, because the API server kept a field that the desired object no
	// longer has (see ApplyAll).
	Replaced Action = "replaced"
)

// Change is one object's entry of a change set.
type Change struct {
	Meta    ObjMeta
	Version string
	Action  Action
	// Drift lists, for an existing object that was configured, the fields
	// in which the live object differed from the desired one because
	// another field manager changed them: the live field has a value, set
	// by that manager, and the desired object has another. A change in Git
	// is not drift, nor is a field the applier adds (an owner label on an
	// object it adopts), nor anything on an object the applier had never
	// applied before (its first apply over one made with `kubectl apply`:
	// no Apply entry of the applier, kubectl's last-applied-configuration).
	Drift []FieldDrift
	// Removed lists, sorted, the fields the apply deletes from the live
	// object, like `.data.OLD` or `.spec.ports[port=9090,protocol=TCP]`
	// (a list item by its key; never a value): removed from the desired
	// object (a change in Git), or set by kubectl before the applier
	// adopted the object. A field the server keeps or defaults again is
	// not listed.
	Removed []string
}

// String is `<Kind>/<ns>/<name> <action>`. Flux compatible.
func (c Change) String() string { return c.Meta.String() + " " + string(c.Action) }

// Manager applies and deletes objects as one field manager.
type Manager struct {
	Client client.Client
	// Owner is the field manager, e.g. "kustomize-controller".
	Owner string
	// StageTimeout bounds the wait for CRDs and Namespaces of the first
	// stage (Flux: 60s); Poll is the wait's interval (Flux: 2s).
	StageTimeout, Poll time.Duration
	// Concurrency is the number of dry-runs in flight (Flux's
	// --concurrent-ssa, 4); 0 means 4. Writes stay sequential.
	Concurrency int
	// Memo, when set, skips the dry-run of an object planned Unchanged
	// before against the same live version (see UnchangedMemo); MemoScope
	// names what else the outcome depends on and keys the entries, e.g.
	// the Kustomization and the identity it applies as.
	Memo      *UnchangedMemo
	MemoScope string
}

// ApplyOptions modify ApplyAll.
type ApplyOptions struct {
	// Force recreates objects whose change fails on an immutable field
	// (spec.force); the force annotation does it per object.
	Force bool
	// Ignore leaves fields out of drift detection; an ignored field that
	// another field manager owns (an HPA through the scale subresource, an
	// operator, kubectl) is also left out of the apply, so its value stays
	// theirs.
	Ignore []IgnoreRule
}

type planned struct {
	obj      *unstructured.Unstructured
	live     *unstructured.Unstructured
	action   Action
	drift    []FieldDrift
	removed  []string
	recreate bool
	dry      *unstructured.Unstructured // the dry-run result, when the cleanup hands fields (taken) to the applier
	taken    *fieldpath.Set
	cleanup  []byte // JSON patch of managed fields and stale metadata, written before the apply
	// cmpLive and cmpDry are the live object and the dry-run result as
	// compared (ignored fields left out), for DryRun.
	cmpLive, cmpDry *unstructured.Unstructured
}

// ApplyAll applies objs in Flux's stages: CRDs, Namespaces and ClusterRoles
// first (then it waits for the CRDs to be Established), then `*Class`
// kinds, then the rest. Every object is dry-run before any is written,
// except those that cannot be dry-run yet: custom resources of CRDs and
// objects in Namespaces that this set creates, which are dry-run once the
// first stage is applied and before anything else is written. One failed
// dry-run means nothing (more) is written; the error names each object and
// the API server's reason. Objects whose dry-run equals the live object are
// not written. The returned change set lists every object, in apply order.
//
// A field removed from the desired object that the API server keeps (a
// Service's `clusterIP: None`: removing it does not give the Service a
// cluster IP) is found from the applier's managed fields: a field it
// owned, no longer in the desired object, still in the dry-run result and
// owned by no one. It counts when its value differs from the one the
// server gives a new object made from the desired one (see serverKeeps; a
// default such as `type: ClusterIP` does not count; labels and
// annotations never do). On an adopted object, kubectl's fields the
// applier drops count when they are known kept ones (knownKept). With
// force (opts.Force or the force annotation) the object is recreated and
// reported Replaced; without, the set fails naming the object and the
// field, and nothing is written. A Namespace is never recreated (that
// deletes everything in it): the set fails, even with force.
func (m *Manager) ApplyAll(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) ([]Change, error) {
	objs = append([]*unstructured.Unstructured(nil), objs...)
	sortObjects(objs)
	crdKinds := map[schema.GroupKind]int{} // kind → index of its CRD in objs
	newNamespaces := map[string]bool{}
	for i, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			g, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			crdKinds[schema.GroupKind{Group: g, Kind: k}] = i
		}
		if u.GetKind() == "Namespace" && u.GroupVersionKind().Group == "" {
			ns := &unstructured.Unstructured{}
			ns.SetGroupVersionKind(u.GroupVersionKind())
			if err := m.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, ns); apierrors.IsNotFound(err) {
				newNamespaces[u.GetName()] = true
			}
		}
	}
	served := func(u *unstructured.Unstructured) bool {
		gvk := u.GroupVersionKind()
		_, err := m.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil
	}
	// Custom resources whose CRD is in the set wait for it, unless the API
	// server serves their kind already: then they are dry-run at once
	// (tentatively, as the set may change the CRD), so that an invalid one
	// stops the set before anything is written.
	plans := make([]*planned, len(objs))
	tentative := make([]bool, len(objs))
	crdUnchanged := func(u *unstructured.Unstructured) bool {
		p := plans[crdKinds[u.GroupVersionKind().GroupKind()]]
		return p != nil && p.action == Unchanged
	}
	deferred := func(i int, u *unstructured.Unstructured) bool {
		if stage(u) == 0 {
			return false
		}
		if newNamespaces[u.GetNamespace()] {
			return true
		}
		if _, ok := crdKinds[u.GroupVersionKind().GroupKind()]; ok {
			if served(u) {
				tentative[i] = true
				return false
			}
			return true
		}
		return false
	}

	var changes []Change
	// planWhere dry-runs the selected objects; any failure means nothing
	// more is written, and the error lists every failed object.
	planWhere := func(selected func(i int, u *unstructured.Unstructured) bool) error {
		errs := make([]error, len(objs))
		work := make(chan int)
		var wg sync.WaitGroup
		workers := m.Concurrency
		if workers <= 0 {
			workers = 4
		}
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					plans[i], errs[i] = m.plan(ctx, objs[i], opts)
				}
			}()
		}
		for i, u := range objs {
			if selected(i, u) {
				work <- i
			}
		}
		close(work)
		wg.Wait()
		// Failures are listed in apply order, whatever order they came in.
		// A tentative plan that failed is tried again after the first
		// stage, unless the set leaves its CRD unchanged.
		var msgs []string
		for i, err := range errs {
			switch {
			case err == nil:
			case tentative[i] && !crdUnchanged(objs[i]):
				tentative[i], plans[i] = false, nil
			default:
				msgs = append(msgs, err.Error())
			}
		}
		if len(msgs) > 0 {
			return errors.New(strings.Join(msgs, "\n"))
		}
		return nil
	}
	applyWhere := func(selected func(u *unstructured.Unstructured) bool) error {
		for i, u := range objs {
			if !selected(u) {
				continue
			}
			c, err := m.apply(ctx, plans[i])
			if err != nil {
				return err
			}
			changes = append(changes, c)
		}
		return nil
	}

	if err := planWhere(func(i int, u *unstructured.Unstructured) bool { return !deferred(i, u) }); err != nil {
		return nil, err
	}
	if err := applyWhere(func(u *unstructured.Unstructured) bool { return stage(u) == 0 }); err != nil {
		return changes, err
	}
	if err := m.waitFirstStage(ctx, objs); err != nil {
		return changes, err
	}
	if err := planWhere(func(i int, u *unstructured.Unstructured) bool { return plans[i] == nil && stage(u) > 0 }); err != nil {
		return changes, err
	}
	if err := applyWhere(func(u *unstructured.Unstructured) bool { return stage(u) > 0 }); err != nil {
		return changes, err
	}
	return changes, nil
}

func flag(u *unstructured.Unstructured, key string) string {
	if v, ok := u.GetAnnotations()[key]; ok {
		return strings.ToLower(v)
	}
	return strings.ToLower(u.GetLabels()[key])
}

// plan reads the live object and dry-runs the desired one.
func (m *Manager) plan(ctx context.Context, u *unstructured.Unstructured, opts ApplyOptions) (*planned, error) {
	// kustomize sets namespaces on kinds it does not know; a cluster-scoped
	// object keeps none, so its inventory id and messages are right.
	gvk := u.GroupVersionKind()
	if mapping, err := m.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		switch namespaced := mapping.Scope.Name() == apimeta.RESTScopeNameNamespace; {
		case !namespaced && u.GetNamespace() != "":
			u.SetNamespace("")
		case namespaced && u.GetNamespace() == "":
			// Flux compatible: no default namespace is guessed; the
			// Kustomization's targetNamespace or the manifest must set one.
			return nil, fmt.Errorf("%s namespace not specified", MetaOf(u))
		}
	}
	id := MetaOf(u).String()
	p := &planned{obj: u}
	if flag(u, ReconcileAnnotation) == "disabled" || flag(u, SSAAnnotation) == "ignore" {
		p.action = Skipped
		return p, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	switch err := m.Client.Get(ctx, client.ObjectKeyFromObject(u), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, fmt.Errorf("%s dry-run failed: %s", id, reason(err))
	}
	p.live = live
	// Flux compatible: the flags count on the live object too, so an
	// object can be paused in the cluster during an incident.
	if live != nil && (flag(u, SSAAnnotation) == "ifnotpresent" ||
		flag(live, ReconcileAnnotation) == "disabled" || flag(live, SSAAnnotation) == "ignore") {
		p.action = Skipped
		return p, nil
	}
	normalizeSecret(u)
	ignored := ignoredPaths(opts.Ignore, u)
	if live != nil && len(ignored) > 0 {
		for _, path := range ignored {
			if field, ok := ownedByOther(live.GetManagedFields(), m.Owner, path, live.Object); ok {
				if p.obj == u {
					p.obj = u.DeepCopy()
				}
				removeField(p.obj.Object, field)
			}
		}
		u = p.obj
	}
	memoKey := m.MemoScope + "\x00" + id
	digest, digestOK := desiredDigest(u, m.MemoScope, ignored)
	digestOK = digestOK && memoizable(u.GroupVersionKind())
	if digestOK && m.Memo.unchanged(memoKey, live, digest) {
		p.action = Unchanged
		return p, nil
	}
	defer func() {
		if p.action == Unchanged && p.cleanup == nil && !p.recreate && digestOK {
			m.Memo.record(memoKey, live, digest)
		} else {
			m.Memo.forget(memoKey)
		}
	}()
	dry := u.DeepCopy()
	err := m.Client.Patch(ctx, dry, client.Apply, client.DryRunAll, client.FieldOwner(m.Owner), client.ForceOwnership)
	if err != nil {
		if live != nil && isImmutable(err) && (opts.Force || flag(u, ForceAnnotation) == "enabled") {
			p.action, p.recreate = Created, true
			return p, nil
		}
		return nil, fmt.Errorf("%s dry-run failed: %s", id, reason(err))
	}
	cmpLive, cmpDry := live, dry
	if live != nil && len(ignored) > 0 {
		cmpLive, cmpDry = withoutPaths(live, ignored), withoutPaths(dry, ignored)
	}
	p.cmpLive, p.cmpDry = cmpLive, cmpDry
	switch {
	case live == nil:
		p.action = Created
	case equalObjects(cmpLive, cmpDry):
		p.action = Unchanged
	default:
		p.action = Configured
		// Drift is a value another field manager wrote over one the
		// applier had applied; the applier's own values differ only because
		// Git changed, and a field the live object lacks cannot be told
		// from one Git added. An object that holds no Apply entry of the
		// applier and still carries kubectl's last-applied-configuration
		// (which the applier's first apply removes) was never applied by
		// it: adopting it is no drift.
		_, kubectlApplied := live.GetAnnotations()[lastAppliedAnnotation]
		applied := ownApplyEntry(live.GetManagedFields(), m.Owner) != nil || !kubectlApplied
		// Fields only the live object has are the ones Git removed (listed
		// below from the field sets) or another manager's: no drift.
		for _, d := range Diff(cmpLive, cmpDry) {
			if applied && !d.desiredAbsent && !d.liveAbsent && d.Manager != "" && d.Manager != m.Owner {
				p.drift = append(p.drift, d)
			}
		}
		p.removed = removedFields(live, dry, m.Owner, nil)
		sort.Strings(p.removed)
	}
	if p.cleanup, p.taken = m.cleanupPatch(u, live); p.cleanup != nil {
		if p.action == Unchanged {
			p.action = Configured
		}
		p.dry = dry
	}
	if live != nil {
		var fields []string
		if kept := keptFields(live, dry, m.Owner); len(kept) > 0 {
			// Written even when nothing else changed, so the applier's
			// ownership of the removed fields ends and the next reconcile
			// does not look at them again.
			if p.action == Unchanged {
				p.action = Configured
			}
			fields = m.serverKeeps(ctx, u, dry, kept)
		}
		// An adopted object: fields kubectl set that the API server keeps
		// once the applier, which takes them over, drops them. Only the
		// known ones (knownKept), which costs no request.
		fields = append(fields, m.takenKept(live, dry, p.taken)...)
		if len(fields) > 0 {
			sort.Strings(fields)
			fields = slices.Compact(fields)
			if live.GetKind() == "Namespace" && live.GroupVersionKind().Group == "" {
				// Recreating a Namespace deletes everything in it.
				return nil, fmt.Errorf("%s dry-run failed: %s removed from the desired state but kept by the API server; "+
					"a Namespace is not recreated: set the field in the desired state",
					id, strings.Join(fields, ", "))
			}
			if !opts.Force && flag(u, ForceAnnotation) != "enabled" {
				return nil, fmt.Errorf("%s dry-run failed: %s removed from the desired state but kept by the API server; "+
					"the object must be recreated: enable force (spec.force or the %s: enabled annotation)",
					id, strings.Join(fields, ", "), ForceAnnotation)
			}
			p.action, p.recreate = Replaced, true
		}
	}
	return p, nil
}

// apply writes a planned object unless it is unchanged or skipped.
func (m *Manager) apply(ctx context.Context, p *planned) (Change, error) {
	c := Change{Meta: MetaOf(p.obj), Version: p.obj.GroupVersionKind().Version, Action: p.action, Drift: p.drift, Removed: p.removed}
	if p.action == Unchanged || p.action == Skipped {
		return c, nil
	}
	if p.recreate {
		if err := m.deleteAndWait(ctx, p.live); err != nil {
			return c, fmt.Errorf("%s recreate failed: %s", c.Meta, reason(err))
		}
	}
	if p.cleanup != nil && !p.recreate {
		if err := m.Client.Patch(ctx, p.live.DeepCopy(), client.RawPatch(types.JSONPatchType, p.cleanup)); err != nil {
			if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
				// The object changed since it was planned (the patch tests
				// its resourceVersion): the next reconcile cleans it.
				return c, fmt.Errorf("%s changed while being applied, retrying", c.Meta)
			}
			return c, fmt.Errorf("%s managed fields cleanup failed: %s", c.Meta, reason(err))
		}
	}
	obj := p.obj.DeepCopy()
	if err := m.Client.Patch(ctx, obj, client.Apply, client.FieldOwner(m.Owner), client.ForceOwnership); err != nil {
		return c, fmt.Errorf("%s apply failed: %s", c.Meta, reason(err))
	}
	if p.cleanup != nil && !p.recreate {
		// Which of the fields handed over the apply deleted shows only in
		// its result: the dry-run ran while kubectl still held them, and
		// the server defaults some again.
		c.Removed = append(c.Removed, m.takenRemoved(p.live, obj, p.taken)...)
		sort.Strings(c.Removed)
		c.Removed = slices.Compact(c.Removed)
	}
	return c, nil
}

func (m *Manager) deleteAndWait(ctx context.Context, live *unstructured.Unstructured) error {
	if err := m.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return m.poll(ctx, func() (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(live.GroupVersionKind())
		err := m.Client.Get(ctx, client.ObjectKeyFromObject(live), got)
		return apierrors.IsNotFound(err), nil
	})
}

// waitFirstStage waits until the set's CRDs are Established and its
// Namespaces exist.
func (m *Manager) waitFirstStage(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		if stage(u) > 0 || flag(u, ReconcileAnnotation) == "disabled" || flag(u, SSAAnnotation) == "ignore" {
			continue
		}
		switch u.GetKind() {
		case "CustomResourceDefinition":
			err := m.poll(ctx, func() (bool, error) { return m.crdReady(ctx, u), nil })
			if err != nil {
				return fmt.Errorf("%s is not Established: %w", MetaOf(u), err)
			}
		case "Namespace":
			err := m.poll(ctx, func() (bool, error) {
				ns := &unstructured.Unstructured{}
				ns.SetGroupVersionKind(u.GroupVersionKind())
				return m.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, ns) == nil, nil
			})
			if err != nil {
				return fmt.Errorf("%s was not created: %w", MetaOf(u), err)
			}
		}
	}
	return nil
}

// crdReady reports whether the CRD named like u is Established and its
// kind is mapped by the client's REST mapper. The CRD is read as
// unstructured, so the wait works whatever the client's scheme registers
// (a controller's scheme need not know apiextensions.k8s.io).
func (m *Manager) crdReady(ctx context.Context, u *unstructured.Unstructured) bool {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := m.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd); err != nil {
		return false
	}
	// kstatus reads a CRD as Current once it is Established.
	if res, err := status.Compute(crd); err != nil || res.Status != status.CurrentStatus {
		return false
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	var versions []string
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range vs {
		v, _ := v.(map[string]any)
		if name, _ := v["name"].(string); name != "" && v["served"] == true {
			versions = append(versions, name)
		}
	}
	// The kind must also be mapped before its objects are applied. Naming
	// the versions makes a lazy mapper that already knows the group (from
	// an earlier CRD of it) fetch them, instead of answering from the
	// group's cached version list.
	_, err := m.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind}, versions...)
	return err == nil
}

// crdGVK is the kind of CustomResourceDefinitions (apiextensions.k8s.io/v1).
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

func (m *Manager) poll(ctx context.Context, done func() (bool, error)) error {
	timeout, interval := m.StageTimeout, m.Poll
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	if interval <= 0 {
		interval = 2 * time.Second
	}
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) { return done() })
	if wait.Interrupted(err) {
		return fmt.Errorf("timeout after %s", timeout)
	}
	return err
}

// PruneOptions select what DeleteStale may delete.
type PruneOptions struct {
	// OwnerLabels must all be on a live object for it to be deleted.
	OwnerLabels map[string]string
}

// DeleteStale deletes the objects of stale (inventory entries no longer in
// the set), in reverse apply order with background propagation, when their
// owner labels match and they are not opted out (prune: disabled,
// reconcile: disabled, ssa: Ignore). It returns the change set and the
// entries whose deletion failed, to be kept in the inventory and retried.
func (m *Manager) DeleteStale(ctx context.Context, stale []Change, opts PruneOptions) ([]Change, []Change, error) {
	objs := make([]*unstructured.Unstructured, 0, len(stale))
	versions := map[ObjMeta]string{}
	for _, s := range stale {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(s.Meta.GroupKind.WithVersion(s.Version))
		u.SetNamespace(s.Meta.Namespace)
		u.SetName(s.Meta.Name)
		objs = append(objs, u)
		versions[s.Meta] = s.Version
	}
	sortObjects(objs)
	var changes, failed []Change
	var errs []string
	for i := len(objs) - 1; i >= 0; i-- {
		u := objs[i]
		meta := MetaOf(u)
		c := Change{Meta: meta, Version: versions[meta], Action: Deleted}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		err := m.Client.Get(ctx, client.ObjectKeyFromObject(u), live)
		switch {
		case apierrors.IsNotFound(err):
			changes = append(changes, c)
			continue
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s delete failed: %s", meta, reason(err)))
			failed = append(failed, c)
			continue
		}
		if !ownedBy(live, opts.OwnerLabels) || flag(live, PruneAnnotation) == "disabled" ||
			flag(live, ReconcileAnnotation) == "disabled" || flag(live, SSAAnnotation) == "ignore" {
			c.Action = Skipped
			changes = append(changes, c)
			continue
		}
		if err := m.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Sprintf("%s delete failed: %s", meta, reason(err)))
			failed = append(failed, c)
			continue
		}
		changes = append(changes, c)
	}
	if len(errs) > 0 {
		return changes, failed, errors.New(strings.Join(errs, "\n"))
	}
	return changes, nil, nil
}

func ownedBy(u *unstructured.Unstructured, labels map[string]string) bool {
	if len(labels) == 0 {
		return false
	}
	for k, v := range labels {
		if u.GetLabels()[k] != v {
			return false
		}
	}
	return true
}

// equalObjects compares a live object with a dry-run result: labels,
// annotations and everything outside metadata and status. Flux compatible.
func equalObjects(live, dry *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(comparable(live), comparable(dry))
}

func comparable(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	if l := u.GetLabels(); len(l) > 0 {
		out["labels"] = l
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		out["annotations"] = a
	}
	return out
}

func isImmutable(err error) bool {
	if !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) && !apierrors.IsForbidden(err) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "immutable") || strings.Contains(msg, "cannot change") || strings.Contains(msg, "may not change")
}

// reason is the API server's message without the request's object prefix.
func reason(err error) string {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		if msg := s.Status().Message; msg != "" {
			return msg
		}
	}
	return err.Error()
}

// SortChanges orders a change set by object for stable messages.
func SortChanges(cs []Change) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Meta.String() < cs[j].Meta.String() })
}

// normalizeSecret moves a core Secret's stringData into data (base64), so
// that a key removed from stringData in Git is removed from the Secret: the
// API server keeps stringData out of managed fields. Flux compatible.
func normalizeSecret(u *unstructured.Unstructured) {
	if u.GetKind() != "Secret" || u.GroupVersionKind().Group != "" {
		return
	}
	sd, ok := u.Object["stringData"].(map[string]any)
	if !ok {
		return
	}
	data, _ := u.Object["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	u.Object["data"] = data
	delete(u.Object, "stringData")
}

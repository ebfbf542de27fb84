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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
	run := m.newApplyRun(objs, opts)
	// The Namespaces are planned first: their dry-runs tell which are new,
	// and the objects in those wait for the first stage.
	run.planWhere(ctx, func(_ int, u *unstructured.Unstructured) bool { return isNamespace(u) })
	run.findNewNamespaces(ctx)
	run.planWhere(ctx, func(i int, u *unstructured.Unstructured) bool { return !isNamespace(u) && !run.deferred(i, u) })
	if err := run.planErrors(); err != nil {
		return nil, err
	}
	if opts.BeforeWrite != nil {
		opts.BeforeWrite()
	}
	if err := run.applyWhere(ctx, func(u *unstructured.Unstructured) bool { return stage(u) == 0 }); err != nil {
		return run.changes, err
	}
	if err := m.waitFirstStage(ctx, objs); err != nil {
		return run.changes, err
	}
	run.planWhere(ctx, func(i int, u *unstructured.Unstructured) bool { return run.plans[i] == nil && stage(u) > 0 })
	if err := run.planErrors(); err != nil {
		return run.changes, err
	}
	if err := run.applyWhere(ctx, func(u *unstructured.Unstructured) bool { return stage(u) > 0 }); err != nil {
		return run.changes, err
	}
	return run.changes, nil
}

// applyRun is one ApplyAll: the sorted set, its plans (nil until dry-run)
// and the change set written so far.
type applyRun struct {
	m    *Manager
	objs []*unstructured.Unstructured
	opts ApplyOptions
	// crdKinds maps each kind whose CRD is in the set to that CRD's index;
	// newNamespaces are the Namespaces of the set not yet in the cluster.
	crdKinds      map[schema.GroupKind]int
	newNamespaces map[string]bool
	plans         []*planned
	// pre are what prefetch learnt of the objects before their plans.
	pre []*prefetched
	// tentative marks custom resources dry-run before their CRD (in the
	// set) was applied, because the API server serves their kind already.
	tentative []bool
	// errs are the failed dry-runs not yet reported (planErrors).
	errs    []error
	changes []Change
}

func (m *Manager) newApplyRun(objs []*unstructured.Unstructured, opts ApplyOptions) *applyRun {
	run := &applyRun{m: m, objs: objs, opts: opts, crdKinds: map[schema.GroupKind]int{}, newNamespaces: map[string]bool{},
		plans: make([]*planned, len(objs)), pre: make([]*prefetched, len(objs)), tentative: make([]bool, len(objs)), errs: make([]error, len(objs))}
	for i, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			g, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			run.crdKinds[schema.GroupKind{Group: g, Kind: k}] = i
		}
	}
	return run
}

func isNamespace(u *unstructured.Unstructured) bool {
	return u.GetKind() == "Namespace" && u.GroupVersionKind().Group == ""
}

// findNewNamespaces records the set's Namespaces that are not in the
// cluster: from their plans (a Created one is new), else (a failed or
// skipped dry-run) by reading them.
func (run *applyRun) findNewNamespaces(ctx context.Context) {
	for i, u := range run.objs {
		if !isNamespace(u) {
			continue
		}
		switch p := run.plans[i]; {
		case p != nil && p.action == Created && !p.recreate:
			run.newNamespaces[u.GetName()] = true
		case p == nil || p.action == Skipped && p.live == nil:
			ns := &unstructured.Unstructured{}
			ns.SetGroupVersionKind(u.GroupVersionKind())
			if err := run.m.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, ns); apierrors.IsNotFound(err) {
				run.newNamespaces[u.GetName()] = true
			}
		}
	}
}

func (run *applyRun) served(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	_, err := run.m.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

func (run *applyRun) crdUnchanged(u *unstructured.Unstructured) bool {
	p := run.plans[run.crdKinds[u.GroupVersionKind().GroupKind()]]
	return p != nil && p.action == Unchanged
}

// deferred reports whether objs[i] waits for the first stage. Custom
// resources whose CRD is in the set wait for it, unless the API server
// serves their kind already: then they are dry-run at once (tentatively,
// as the set may change the CRD), so that an invalid one stops the set
// before anything is written.
func (run *applyRun) deferred(i int, u *unstructured.Unstructured) bool {
	if stage(u) == 0 {
		return false
	}
	if run.newNamespaces[u.GetNamespace()] {
		return true
	}
	if _, ok := run.crdKinds[u.GroupVersionKind().GroupKind()]; ok {
		if run.served(u) {
			run.tentative[i] = true
			return false
		}
		return true
	}
	return false
}

// planWhere dry-runs the selected objects, m.Concurrency at a time; a
// failure is kept for planErrors.
func (run *applyRun) planWhere(ctx context.Context, selected func(i int, u *unstructured.Unstructured) bool) {
	errs := run.errs
	run.prefetch(ctx, selected)
	work := make(chan int)
	var wg sync.WaitGroup
	workers := run.m.Concurrency
	if workers <= 0 {
		workers = 4
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				run.plans[i], errs[i] = run.m.plan(ctx, run.objs[i], run.opts, run.pre[i])
			}
		}()
	}
	for i, u := range run.objs {
		if selected(i, u) {
			work <- i
		}
	}
	close(work)
	wg.Wait()
}

// planErrors reports the failed dry-runs so far: any failure means
// nothing more is written, and the error lists every failed object.
func (run *applyRun) planErrors() error {
	errs := run.errs
	defer clear(errs)
	// Failures are listed in apply order, whatever order they came in.
	// A tentative plan that failed is tried again after the first
	// stage, unless the set leaves its CRD unchanged.
	var msgs []string
	for i, err := range errs {
		switch {
		case err == nil:
		case run.tentative[i] && !run.crdUnchanged(run.objs[i]):
			run.tentative[i], run.plans[i] = false, nil
		default:
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "\n"))
	}
	return nil
}

// applyWhere writes the planned selected objects in order and appends
// their changes; it stops at the first failure.
func (run *applyRun) applyWhere(ctx context.Context, selected func(u *unstructured.Unstructured) bool) error {
	for i, u := range run.objs {
		if !selected(u) {
			continue
		}
		c, err := run.m.apply(ctx, run.plans[i])
		if err != nil {
			return err
		}
		run.changes = append(run.changes, c)
	}
	return nil
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
	if p.memoOK && p.cleanup == nil && !p.recreate {
		// The apply's answer is the live object a dry-run of the same
		// desired object would leave unchanged (an apply is idempotent):
		// the next plan reads it and skips the dry-run.
		m.Memo.record(p.memoKey, obj, p.digest)
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

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/health"
	"github.com/eddyops/eddy/application-controller/internal/normalize"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/eddyops/eddy/application-controller/internal/project"
	"github.com/eddyops/eddy/application-controller/internal/tracking"
	"github.com/eddyops/eddy/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// comparison is one full comparison of an Application's target with the
// live objects (argocd-contract §6.1).
type comparison struct {
	target  *target
	project *argov1.AppProject
	// err is the comparison's failure, with its condition type in errType.
	err     error
	errType string
	// pending: a source is still being fetched; nothing is decided.
	pending    bool
	pendingMsg string

	desired map[string]*unstructured.Unstructured // non-hook objects by plan.Key
	order   []string                              // keys of desired in render order
	hooks   []*unstructured.Unstructured
	live    map[string]*unstructured.Unstructured
	prune   []*unstructured.Unstructured // tracked live objects no longer rendered
	status  map[string]string            // key → Synced | OutOfSync | Unknown
	drift   map[string][]ssa.FieldDrift  // key → differing fields (existing objects)
	shared  []string                     // SharedResourceWarning messages

	sync      string
	health    argov1.AppHealthStatus
	resources []argov1.ResourceStatus
	summary   argov1.ApplicationSummary
}

// compare loads the target (at revision, "" for targetRevision) and the
// live objects, and compares them.
func (r *ApplicationReconciler) compare(ctx context.Context, app *argov1.Application, revision string) *comparison {
	c := &comparison{sync: argov1.SyncStatusUnknown}
	proj, err := r.project(ctx, app)
	if err != nil {
		c.err, c.errType = err, argov1.ConditionInvalidSpecError
		return c
	}
	c.project = proj
	if err := r.checkSpec(app, proj); err != nil {
		c.err, c.errType = err, argov1.ConditionInvalidSpecError
		return c
	}
	if _, ok := app.Annotations[argov1.AnnotationRefresh]; ok && revision == "" {
		r.requestSourceRefresh(ctx, app)
	}
	var revs []string
	if revision != "" {
		revs = []string{revision}
	}
	t, err := r.loadTarget(ctx, app, app.GetSources(), revs)
	switch {
	case errors.Is(err, errPending):
		c.pending, c.pendingMsg = true, err.Error()
		return c
	case err != nil:
		c.err, c.errType = err, argov1.ConditionComparisonError
		var se *specError
		if errors.As(err, &se) { // an object without a namespace (argocd-contract §1.8)
			c.errType = argov1.ConditionInvalidSpecError
		}
		return c
	}
	c.target = t
	if err := r.compareObjects(ctx, app, c); err != nil {
		c.err, c.errType = err, argov1.ConditionComparisonError
		var se *specError
		if errors.As(err, &se) {
			c.errType = argov1.ConditionInvalidSpecError
		}
		c.sync = argov1.SyncStatusUnknown
	}
	return c
}

// checkSpec is Argo CD's spec validation against the project
// (argocd-contract §1.2, §1.8, §8.1).
func (r *ApplicationReconciler) checkSpec(app *argov1.Application, proj *argov1.AppProject) error {
	d := app.Spec.Destination // resolved by target before the comparison
	srcs := app.GetSources()
	if len(srcs) == 0 {
		return errors.New("spec.source.repoURL and either spec.source.path or spec.source.chart are required")
	}
	for _, s := range srcs {
		if s.RepoURL == "" || (s.Path == "" && s.Chart == "" && s.Ref == "") {
			return errors.New("spec.source.repoURL and either spec.source.path or spec.source.chart are required")
		}
		if s.Chart != "" && s.TargetRevision == "" {
			return errors.New("spec.source.targetRevision is required if the manifest source is a helm chart")
		}
		if err := project.CheckSource(proj, s.RepoURL); err != nil {
			return err
		}
	}
	server, name := r.destination()
	if !project.DestinationPermitted(proj, server, name, d.Namespace) {
		shown := d.Server // the destination as the Application writes it
		if shown == "" {
			shown = d.Name
		}
		return fmt.Errorf("application destination server '%s' and namespace '%s' do not match any of the allowed destinations in project '%s'",
			shown, d.Namespace, proj.Name)
	}
	return nil
}

// specError is a comparison failure of the spec against the project:
// an InvalidSpecError, not a ComparisonError.
type specError struct{ msg string }

func (e *specError) Error() string { return e.msg }

// compareObjects reads the live objects and compares each with its
// desired one; it fills c's per-object status, health and summary.
func (r *ApplicationReconciler) compareObjects(ctx context.Context, app *argov1.Application, c *comparison) error {
	rules, err := normalize.Compile(app.Spec.IgnoreDifferences)
	if err != nil {
		return err
	}
	instance := app.InstanceName(r.Namespace)
	c.desired, c.live, c.status = map[string]*unstructured.Unstructured{}, map[string]*unstructured.Unstructured{}, map[string]string{}
	c.drift = map[string][]ssa.FieldDrift{}
	for _, u := range c.target.objects {
		if _, isHook := plan.Hook(u); isHook {
			c.hooks = append(c.hooks, u)
			continue
		}
		k := keyOf(u)
		c.desired[k] = u
		c.order = append(c.order, k)
	}
	unpermitted := r.unpermittedHooks(c)
	applied := appliedKeys(app)
	for _, k := range c.order {
		u := c.desired[k]
		var live *unstructured.Unstructured
		// The cache's "absent" is trusted except for what the last
		// operation applied, which it may not show yet: a false Missing
		// there would start a needless self-heal.
		if !r.local() || applied[k] || !r.live.absent(ctx, u.GroupVersionKind(), u.GetNamespace(), u.GetName()) {
			if live, err = r.getLive(ctx, u.GroupVersionKind(), u.GetNamespace(), u.GetName()); err != nil {
				return err
			}
		}
		c.live[k] = live
		if msg := r.notPermitted(c.project, u); msg != "" {
			c.status[k] = argov1.SyncStatusUnknown
			unpermitted = append(unpermitted, msg)
			continue
		}
		if live != nil {
			if other := tracking.OtherOwner(live, instance, u.GetNamespace() == ""); other != "" {
				c.shared = append(c.shared, fmt.Sprintf("%s/%s is part of applications %s and %s", u.GetKind(), u.GetName(), appRef(app), strings.ReplaceAll(other, "_", "/")))
			}
		}
		c.status[k] = r.compareOne(ctx, c, k, u, live, rules)
	}
	if len(unpermitted) > 0 {
		// Argo CD fails the sync with this message per object; refusing
		// at comparison applies nothing (argocd-contract §8.1).
		slices.Sort(unpermitted)
		return &specError{strings.Join(slices.Compact(unpermitted), "; ")}
	}
	if err := r.findPrunable(ctx, app, c, instance); err != nil {
		return err
	}
	r.summarize(app, c)
	return nil
}

// appliedKeys are the keys (plan.Key) of the objects the last operation
// applied or pruned.
func appliedKeys(app *argov1.Application) map[string]bool {
	out := map[string]bool{}
	if st := app.Status.OperationState; st != nil && st.SyncResult != nil {
		for _, res := range st.SyncResult.Resources {
			if res != nil {
				out[plan.Key(res.Group, res.Kind, res.Namespace, res.Name)] = true
			}
		}
	}
	return out
}

// notPermitted is Argo CD's sync permission check of one object
// (controller/sync.go validateSyncPermissions): its kind, and for a
// namespaced object its namespace, against the project; "" when
// permitted. An object may name any namespace, so the Application's
// destination alone does not bound where it writes.
func (r *ApplicationReconciler) notPermitted(proj *argov1.AppProject, u *unstructured.Unstructured) string {
	if !project.Permitted(proj, u.GroupVersionKind().Group, u.GetKind(), u.GetName(), u.GetNamespace() == "") {
		return fmt.Sprintf("resource %s:%s is not permitted in project %s", u.GroupVersionKind().Group, u.GetKind(), proj.Name)
	}
	server, name := r.destination()
	if ns := u.GetNamespace(); ns != "" && !project.DestinationPermitted(proj, server, name, ns) {
		return fmt.Sprintf("namespace %s is not permitted in project '%s'", ns, proj.Name)
	}
	return ""
}

// unpermittedHooks are the permission failures of c's hooks.
func (r *ApplicationReconciler) unpermittedHooks(c *comparison) []string {
	var out []string
	for _, u := range c.hooks {
		if msg := r.notPermitted(c.project, u); msg != "" {
			out = append(out, msg)
		}
	}
	return out
}

// compareOne compares one desired object with its live one by a
// server-side dry-run (three-way in effect: fields others add are kept by
// the apply, so they are not drift). A dry-run made on a newer version
// of the object than the live one read (a controller wrote it meanwhile,
// e.g. a Deployment's revision annotation) is compared again with the
// object read anew, so another writer's race is not reported as drift.
func (r *ApplicationReconciler) compareOne(ctx context.Context, c *comparison, k string, desired, live *unstructured.Unstructured, rules *normalize.Rules) string {
	if live == nil {
		return argov1.SyncStatusOutOfSync
	}
	for attempt := 0; ; attempt++ {
		fields, dryVersion, status := r.diffOne(ctx, desired, live, rules)
		if status != argov1.SyncStatusOutOfSync || fields == nil {
			return status
		}
		if attempt < 2 && dryVersion != "" && dryVersion != live.GetResourceVersion() {
			fresh, err := r.getLive(ctx, desired.GroupVersionKind(), desired.GetNamespace(), desired.GetName())
			if err == nil && fresh != nil {
				live = fresh
				c.live[k] = fresh
				continue
			}
		}
		c.drift[k] = fields
		return status
	}
}

// diffOne is one dry-run comparison: the differing fields (nil when
// none or the dry-run failed), the resourceVersion the dry-run saw, and
// the object's status.
func (r *ApplicationReconciler) diffOne(ctx context.Context, desired, live *unstructured.Unstructured, rules *normalize.Rules) ([]ssa.FieldDrift, string, string) {
	paths, err := rules.Paths(live, live) // the dry-run keeps live's list order
	if err != nil {
		return nil, "", argov1.SyncStatusUnknown
	}
	var ignore []ssa.IgnoreRule
	if len(paths) > 0 {
		ignore = []ssa.IgnoreRule{{Paths: paths}}
	}
	d, err := r.SSA.Diff(ctx, desired.DeepCopy(), live, ignore)
	for try := 0; try < 2 && apierrors.IsConflict(err); try++ {
		// Another writer changed the object meanwhile: a dry-run that
		// lost that race says nothing about drift.
		d, err = r.SSA.Diff(ctx, desired.DeepCopy(), live, ignore)
	}
	if err != nil {
		// The apply would fail the same way: the sync reports why.
		return nil, "", argov1.SyncStatusOutOfSync
	}
	if fields := d.Fields(); len(fields) > 0 {
		return fields, d.Dry.GetResourceVersion(), argov1.SyncStatusOutOfSync
	}
	return nil, "", argov1.SyncStatusSynced
}

// findPrunable reads the objects tracked by this Application that are no
// longer rendered: pruning candidates (argocd-contract §5). They are found
// by tracking id in the live watches' cache, as Argo CD finds them in its
// cluster cache, and among the last status.resources (kinds not watched,
// remote clusters); each is read once to confirm it.
func (r *ApplicationReconciler) findPrunable(ctx context.Context, app *argov1.Application, c *comparison, instance string) error {
	type candidate struct {
		gvk             schema.GroupVersionKind
		namespace, name string
	}
	var cands []candidate
	seen := map[string]bool{}
	add := func(gvk schema.GroupVersionKind, ns, name string) {
		k := plan.Key(gvk.Group, gvk.Kind, ns, name)
		if _, desired := c.desired[k]; !desired && !seen[k] {
			seen[k] = true
			cands = append(cands, candidate{gvk, ns, name})
		}
	}
	for _, res := range app.Status.Resources {
		if !res.Hook {
			add(schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}, res.Namespace, res.Name)
		}
	}
	if r.local() {
		for _, u := range r.live.tracked(ctx, instance) {
			if _, isHook := plan.Hook(u); !isHook {
				add(u.GroupVersionKind(), u.GetNamespace(), u.GetName())
			}
		}
	}
	for _, cd := range cands {
		live, err := r.getLive(ctx, cd.gvk, cd.namespace, cd.name)
		if err != nil {
			return err
		}
		if live == nil || !tracking.OwnedBy(live, instance, cd.namespace == "") {
			continue
		}
		if _, isHook := plan.Hook(live); isHook {
			continue
		}
		if msg := r.notPermitted(c.project, live); msg != "" {
			return &specError{msg} // Argo CD validates a prune as an apply
		}
		k := plan.Key(cd.gvk.Group, cd.gvk.Kind, cd.namespace, cd.name)
		c.live[k] = live
		c.prune = append(c.prune, live)
		c.status[k] = argov1.SyncStatusOutOfSync
	}
	return nil
}

// getLive reads an object uncached; nil when it or its kind does not exist.
func (r *ApplicationReconciler) getLive(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %s", gvk.Kind, name, apiReason(err))
	}
	return u, nil
}

// summarize sets c's sync status, health, resources and summary.
func (r *ApplicationReconciler) summarize(app *argov1.Application, c *comparison) {
	c.sync = argov1.SyncStatusSynced
	var items []health.Item
	images, urls := map[string]bool{}, map[string]bool{}
	add := func(k string, u, live *unstructured.Unstructured, requiresPruning bool) {
		gvk := u.GroupVersionKind()
		rs := argov1.ResourceStatus{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: u.GetNamespace(),
			Name: u.GetName(), Status: c.status[k], RequiresPruning: requiresPruning, SyncWave: int64(plan.Wave(u))}
		item := health.Item{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName(),
			Live: live, Ignore: u.GetAnnotations()[argov1.AnnotationIgnoreHealth] == "true" || isSelf(app, u)}
		rs.Health = health.ResourceHealth(item)
		if live != nil {
			collectImages(live, images)
			collectURLs(live, urls)
		}
		if rs.Status == argov1.SyncStatusOutOfSync && !(requiresPruning && plan.IgnoreExtraneous(u)) {
			c.sync = argov1.SyncStatusOutOfSync
		}
		if rs.Status == argov1.SyncStatusUnknown && c.sync == argov1.SyncStatusSynced {
			c.sync = argov1.SyncStatusUnknown
		}
		c.resources = append(c.resources, rs)
		if !requiresPruning {
			items = append(items, item)
		}
	}
	for _, k := range c.order {
		add(k, c.desired[k], c.live[k], false)
	}
	for _, u := range c.prune {
		add(keyOf(u), u, u, true)
	}
	sort.Slice(c.resources, func(i, j int) bool {
		a, b := c.resources[i], c.resources[j]
		return a.Group+"/"+a.Kind+"/"+a.Namespace+"/"+a.Name < b.Group+"/"+b.Kind+"/"+b.Namespace+"/"+b.Name
	})
	c.health = health.Aggregate(items)
	c.summary = argov1.ApplicationSummary{Images: sortedKeys(images), ExternalURLs: sortedKeys(urls)}
	for _, u := range c.target.objects {
		if u.GetKind() == argov1.ApplicationKind && u.GroupVersionKind().Group == argov1.GroupVersion.Group {
			c.summary.IsAppOfApps = true
		}
	}
}

func keyOf(u *unstructured.Unstructured) string {
	return plan.Key(u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName())
}

func isSelf(app *argov1.Application, u *unstructured.Unstructured) bool {
	return u.GetKind() == argov1.ApplicationKind && u.GetName() == app.Name && u.GetNamespace() == app.Namespace
}

func appRef(app *argov1.Application) string { return app.Namespace + "/" + app.Name }

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func apiReason(err error) string {
	var s apierrors.APIStatus
	if errors.As(err, &s) && s.Status().Message != "" {
		return s.Status().Message
	}
	return err.Error()
}

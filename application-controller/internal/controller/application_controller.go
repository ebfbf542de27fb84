package controller

import (
	"context"
	"errors"
	"math/rand/v2"
	"path"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/cluster"
	"github.com/eddyops/eddy/application-controller/internal/source"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplicationReconciler reconciles Applications: each reconcile is a full
// comparison of the rendered source with the live objects (argocd-contract
// §2, §6), then, when an operation is requested or auto-sync asks for one,
// the next step of that sync (§3, §4). Status, the operation and the
// normalised spec are written on the object itself, as Argo CD does: the
// kind has no status subresource.
type ApplicationReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Mapper    meta.RESTMapper
	// Clusters resolves destinations; nil: in-cluster only. The fields
	// above act on the controller's cluster; a reconcile acts on its
	// destination through on(target).
	Clusters *cluster.Registry
	Sources  *source.Manager
	// SSA compares and applies as FieldManager.
	SSA    *ssa.Manager
	Events *events.Recorder
	Log    logr.Logger

	// Namespace is the controller's; AppNamespaces the other namespaces
	// (globs) whose Applications are reconciled.
	Namespace     string
	AppNamespaces []string
	// Resync and ResyncJitter: the period of a full comparison.
	Resync, ResyncJitter time.Duration
	SelfHeal             SelfHealBackoff
	WaveDelay            time.Duration
	// RenderTimeout bounds one render; 0 means none.
	RenderTimeout time.Duration
	// KubeVersion and APIVersions describe the cluster to Helm.
	KubeVersion string
	APIVersions []string

	renders *renderCache
	waves   *waveGate
	fetches *fetchWait
	held    *eventHold
	stale   *staleCopies
	live    *liveWatches
	now     func() time.Time
	// dest is the cluster this copy of the reconciler acts on (see on).
	dest *cluster.Target
}

// SelfHealBackoff is the wait before a self-heal: Timeout for the first
// after a full sync, then Backoff × Factor^(n-1), at most Cap
// (argocd-contract §3.3).
type SelfHealBackoff struct {
	Timeout, Backoff, Cap time.Duration
	Factor                int
}

// Wait is the wait before self-heal attempt n+1 after n attempts.
func (b SelfHealBackoff) Wait(n int64) time.Duration {
	if n == 0 {
		return b.Timeout
	}
	d := b.Backoff
	for i := int64(1); i < n && d < b.Cap; i++ {
		d *= time.Duration(b.Factor)
	}
	if b.Cap > 0 && d > b.Cap {
		d = b.Cap
	}
	return d
}

// Reconcile compares one Application and moves its operation on.
func (r *ApplicationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &argov1.Application{}
	err := r.Client.Get(ctx, req.NamespacedName, app)
	if err == nil && r.stale.stale(req.NamespacedName, app.ResourceVersion) {
		// The cache has not seen this controller's last write yet.
		err = r.APIReader.Get(ctx, req.NamespacedName, app)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.stale.forget(req.NamespacedName)
			return ctrl.Result{}, r.gcSources(ctx)
		}
		return ctrl.Result{}, err
	}
	if !r.watched(app.Namespace) || app.Annotations[argov1.AnnotationSkipReconcile] == "true" {
		return ctrl.Result{}, nil
	}
	orig := app.DeepCopy()
	t, terr := r.target(ctx, app)
	if terr == nil && t.SkipReconcile {
		return ctrl.Result{}, nil // the cluster Secret's skip-reconcile (argocd-contract §8.2)
	}
	if !app.DeletionTimestamp.IsZero() {
		switch {
		case errors.Is(terr, cluster.ErrNoCluster):
			return r.forgetResources(ctx, app, orig)
		case terr != nil:
			return ctrl.Result{}, terr
		}
		return r.on(t).finalize(ctx, app, orig)
	}
	normalizeSpec(app)
	written := false
	r.held.hold(req.String())
	defer func() { r.held.release(req.String(), written) }()
	cmp := destinationFailure(terr)
	if terr == nil {
		r = r.on(t)
		cmp = r.compare(ctx, app, "")
	}
	r.setComparison(app, cmp)
	next := r.resyncAfter()
	if cmp.pending {
		next = 2 * time.Second
	}
	if app.Operation == nil && cmp.err == nil && !cmp.pending {
		if after, started := r.autoSync(app, cmp); started {
			next = time.Millisecond
		} else if after > 0 && after < next {
			next = after
		}
	}
	if app.Operation != nil && !cmp.pending {
		if after := r.runOperation(ctx, app, cmp); after < next {
			next = after
		}
	}
	if app.Operation != nil {
		// A sync is under way: the diff it resolves is not published
		// (an automated app's would be written and dropped at once).
		setPendingDiff(app, "")
	}
	if err := r.patch(ctx, orig, app); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, err
	}
	written = true
	r.conditionEvents(orig, app)
	if r.local() {
		r.live.track(ctx, app, cmp)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// watched reports whether Applications of ns are reconciled: the
// controller's namespace and those matching --application-namespaces.
func (r *ApplicationReconciler) watched(ns string) bool {
	if ns == r.Namespace {
		return true
	}
	for _, g := range r.AppNamespaces {
		if ok, _ := path.Match(g, ns); ok {
			return true
		}
	}
	return false
}

func (r *ApplicationReconciler) resyncAfter() time.Duration {
	if r.Resync <= 0 {
		return 0
	}
	d := r.Resync
	if r.ResyncJitter > 0 {
		d += time.Duration(rand.Int64N(int64(r.ResyncJitter)))
	}
	return d
}

func (r *ApplicationReconciler) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// normalizeSpec is Argo CD's spec normalisation (argocd-contract §1.11):
// an empty project becomes "default", an empty syncPolicy and empty tool
// blocks are dropped.
func normalizeSpec(app *argov1.Application) {
	if app.Spec.Project == "" {
		app.Spec.Project = argov1.DefaultProject
	}
	if p := app.Spec.SyncPolicy; p != nil && p.Automated == nil && len(p.SyncOptions) == 0 && p.Retry == nil && p.ManagedNamespaceMetadata == nil {
		app.Spec.SyncPolicy = nil
	}
	clean := func(s *argov1.ApplicationSource) {
		if s.Helm != nil && isZeroHelm(s.Helm) {
			s.Helm = nil
		}
		if s.Kustomize != nil && isZeroKustomize(s.Kustomize) {
			s.Kustomize = nil
		}
		if d := s.Directory; d != nil && !d.Recurse && d.Include == "" && d.Exclude == "" && !d.DisableExtensionFilter &&
			len(d.Jsonnet.ExtVars) == 0 && len(d.Jsonnet.TLAs) == 0 && len(d.Jsonnet.Libs) == 0 {
			s.Directory = nil
		}
	}
	if app.Spec.Source != nil {
		clean(app.Spec.Source)
	}
	for i := range app.Spec.Sources {
		clean(&app.Spec.Sources[i])
	}
}

func isZeroHelm(h *argov1.ApplicationSourceHelm) bool {
	return len(h.ValueFiles) == 0 && len(h.Parameters) == 0 && h.ReleaseName == "" && h.Values == "" &&
		len(h.FileParameters) == 0 && h.Version == "" && !h.PassCredentials && !h.IgnoreMissingValueFiles &&
		!h.SkipCrds && h.ValuesObject == nil && h.Namespace == "" && h.KubeVersion == "" &&
		len(h.APIVersions) == 0 && !h.SkipTests && !h.SkipSchemaValidation
}

func isZeroKustomize(k *argov1.ApplicationSourceKustomize) bool {
	return k.NamePrefix == "" && k.NameSuffix == "" && len(k.Images) == 0 && len(k.CommonLabels) == 0 &&
		k.Version == "" && len(k.CommonAnnotations) == 0 && !k.ForceCommonLabels && !k.ForceCommonAnnotations &&
		k.Namespace == "" && !k.CommonAnnotationsEnvsubst && len(k.Replicas) == 0 && len(k.Patches) == 0 &&
		len(k.Components) == 0 && !k.IgnoreMissingComponents && !k.LabelWithoutSelector && k.KubeVersion == "" &&
		len(k.APIVersions) == 0 && !k.LabelIncludeTemplates
}

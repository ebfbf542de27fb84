package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/source-watcher/internal/builder"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// requeueAfter is how often a Ready ArtifactGenerator is checked again
// for drift (Flux's GetRequeueAfter: the kind has no spec.interval).
const requeueAfter = time.Hour

// ArtifactGeneratorReconciler composes the artifacts of ArtifactGenerators
// from their sources' artifacts, stores them, and publishes each as an
// ExternalArtifact's status.artifact.
type ArtifactGeneratorReconciler struct {
	client.Client
	Storage *artifact.Storage
	// Fetcher downloads the sources' artifacts: source-controller's are
	// checked against its signature, ExternalArtifacts' against their digest.
	Fetcher              *artifact.Fetcher
	Events               *events.Recorder
	NoCrossNamespaceRefs bool
	RequeueDependency    time.Duration
	JitterPercent        float64
	// WorkDir holds the per-reconcile download and build directories (a
	// dot directory in it, never served).
	WorkDir string
}

// built is one composed artifact, stored, waiting to be published.
type built struct {
	out swv1.OutputArtifact
	art *meta.Artifact
}

func (r *ArtifactGeneratorReconciler) skeleton() *reconciler.Skeleton[*swv1.ArtifactGenerator] {
	return &reconciler.Skeleton[*swv1.ArtifactGenerator]{
		Client: r.Client, Kind: swv1.ArtifactGeneratorKind, FieldOwner: ControllerName, Finalizer: swv1.Finalizer,
		Finalize:  r.finalize,
		Suspended: func(o *swv1.ArtifactGenerator) bool { return o.IsSuspended() },
	}
}

// Reconcile builds the ArtifactGenerator's artifacts when its spec, its
// sources' artifacts or its published artifacts changed, then publishes
// them all and removes the ExternalArtifacts no longer listed.
func (r *ArtifactGeneratorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.skeleton().Reconcile(ctx, req, &swv1.ArtifactGenerator{},
		func(ctx context.Context, obj *swv1.ArtifactGenerator, p *reconciler.StatusPatcher) (ctrl.Result, error) {
			old := obj.DeepCopy()
			f := r.reconcile(ctx, obj, p)
			if f == noDrift { // nothing to build: only the handled request is written
				reconciler.RecordHandledRequest(obj)
				return ctrl.Result{RequeueAfter: controllerkit.Jitter(requeueAfter, r.JitterPercent)}, nil
			}
			msg := ""
			if f == nil {
				msg = fmt.Sprintf("reconciliation succeeded, generated %d artifact(s)", len(obj.Status.Inventory))
			}
			reconciler.Summarize(obj, f, meta.SucceededReason, msg)
			if err := p.Finish(ctx); err != nil {
				return ctrl.Result{}, err
			}
			if f != nil {
				if f.Waiting {
					ctrl.LoggerFrom(ctx).Info(f.Message)
				} else {
					r.Events.Event(obj, corev1.EventTypeWarning, f.Reason, f.EventMessage(), nil)
				}
				if f.Stalled {
					return ctrl.Result{}, f
				}
				retry := f.Retry
				if retry == 0 {
					return ctrl.Result{}, f
				}
				return ctrl.Result{RequeueAfter: retry}, nil
			}
			r.notify(old, obj)
			return ctrl.Result{RequeueAfter: controllerkit.Jitter(requeueAfter, r.JitterPercent)}, nil
		})
}

// noDrift is the outcome of a reconcile that found nothing to do.
var noDrift = &reconciler.Failure{}

// reconcile runs the steps; nil is success, noDrift nothing done.
func (r *ArtifactGeneratorReconciler) reconcile(ctx context.Context, obj *swv1.ArtifactGenerator, p *reconciler.StatusPatcher) *reconciler.Failure {
	if f := r.validate(obj); f != nil {
		return f
	}
	observed, f := r.observeSources(ctx, obj)
	if f != nil {
		return f
	}
	digest := swv1.SourcesDigest(observed)
	if why := r.drift(ctx, obj, digest); why == "" {
		ctrl.LoggerFrom(ctx).V(1).Info("no drift, artifacts up to date", "artifacts", len(obj.Status.Inventory))
		return noDrift
	} else {
		ctrl.LoggerFrom(ctx).Info("building artifacts", "reason", why)
	}
	reconciler.Progressing(obj, "Reconciliation in progress")
	if err := p.Patch(ctx); err != nil {
		return reconciler.Fail(meta.ReconciliationFailedReason, "failed to update status: %s", err)
	}
	if err := os.MkdirAll(filepath.Join(r.WorkDir, ".work"), 0o700); err != nil {
		return reconciler.Fail(meta.ReconciliationFailedReason, "work directory: %s", err)
	}
	work, err := builder.MkdirWork(filepath.Join(r.WorkDir, ".work"))
	if err != nil {
		return reconciler.Fail(meta.ReconciliationFailedReason, "work directory: %s", err)
	}
	defer os.RemoveAll(work)
	local, f := r.fetchSources(ctx, obj, observed, work)
	if f != nil {
		return f
	}
	// Every artifact is composed before any is stored, and stored before
	// any ExternalArtifact is written: a failing one leaves the storage
	// and the ExternalArtifacts as they were.
	staged := make([]string, len(obj.Spec.OutputArtifacts))
	for i, oa := range obj.Spec.OutputArtifacts {
		if staged[i], err = builder.Stage(ctx, oa, local, work); err != nil {
			return reconciler.Fail(meta.BuildFailedReason, "%s build failed: %s", oa.Name, err)
		}
	}
	var outs []built
	for i, oa := range obj.Spec.OutputArtifacts {
		a, err := builder.Store(r.Storage, obj.Namespace, oa.Name, staged[i], work)
		if err != nil {
			return reconciler.Fail(meta.BuildFailedReason, "%s build failed: %s", oa.Name, err)
		}
		setRevisions(a, oa, observed)
		outs = append(outs, built{out: oa, art: a})
	}
	refs, f := r.publish(ctx, obj, outs)
	if f != nil {
		return f
	}
	r.collect(ctx, obj.Status.Inventory, refs, outs)
	obj.Status.Inventory = refs
	obj.Status.ObservedSourcesDigest = digest
	return nil
}

// validate refuses, stalled, a spec that can never build.
func (r *ArtifactGeneratorReconciler) validate(obj *swv1.ArtifactGenerator) *reconciler.Failure {
	if obj.Spec.PathPattern != "" {
		return reconciler.Fail(swv1.ValidationFailedReason, "spec.pathPattern is not supported by Eddy's source-watcher").Stall()
	}
	aliases := map[string]bool{}
	for _, s := range obj.Spec.Sources {
		if aliases[s.Alias] {
			return reconciler.Fail(swv1.ValidationFailedReason, "duplicate source alias '%s' found", s.Alias).Stall()
		}
		aliases[s.Alias] = true
		if r.NoCrossNamespaceRefs && s.Namespace != "" && s.Namespace != obj.Namespace {
			return reconciler.Fail(swv1.AccessDeniedReason, "cross-namespace reference to source %s/%s/%s is not allowed",
				s.Kind, s.Namespace, s.Name).Stall()
		}
	}
	names := map[string]bool{}
	for _, a := range obj.Spec.OutputArtifacts {
		if names[a.Name] {
			return reconciler.Fail(swv1.ValidationFailedReason, "duplicate artifact name '%s' found", a.Name).Stall()
		}
		names[a.Name] = true
		for _, ref := range []string{a.Revision, a.OriginRevision} {
			if alias := strings.TrimPrefix(ref, "@"); ref != "" && !aliases[alias] {
				return reconciler.Fail(swv1.ValidationFailedReason, "artifact %s revision source alias '%s' not found", a.Name, alias).Stall()
			}
		}
	}
	return nil
}

// setRevisions gives a the revision of the source revision names, if set,
// and the origin revision of the source originRevision names (else that
// source's revision) in its metadata.
func setRevisions(a *meta.Artifact, oa swv1.OutputArtifact, observed map[string]swv1.ObservedSource) {
	if s, ok := observed[strings.TrimPrefix(oa.Revision, "@")]; oa.Revision != "" && ok {
		a.Revision = s.Revision
	}
	if s, ok := observed[strings.TrimPrefix(oa.OriginRevision, "@")]; oa.OriginRevision != "" && ok {
		if a.Metadata == nil {
			a.Metadata = map[string]string{}
		}
		a.Metadata[swv1.OriginRevisionKey] = s.Revision
		if s.OriginRevision != "" {
			a.Metadata[swv1.OriginRevisionKey] = s.OriginRevision
		}
	}
}

// notify sends one Normal event naming the ExternalArtifacts whose
// artifact changed, if any.
func (r *ArtifactGeneratorReconciler) notify(old, obj *swv1.ArtifactGenerator) {
	var changed []string
	for _, ref := range obj.Status.Inventory {
		if !old.InInventory(ref.Name, ref.Namespace, ref.Digest) {
			changed = append(changed, fmt.Sprintf("%s/%s (%s)", ref.Namespace, ref.Name, ref.Digest))
		}
	}
	if len(changed) > 0 {
		r.Events.Event(obj, corev1.EventTypeNormal, meta.ReadyCondition,
			"external artifacts reconciled: "+strings.Join(changed, "\n"), nil)
	}
}

// readyAt tells whether obj is Ready for its present generation.
func readyAt(obj *swv1.ArtifactGenerator) bool {
	c := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == "True" && c.ObservedGeneration == obj.Generation
}

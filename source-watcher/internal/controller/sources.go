package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/reconciler"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newSource returns an empty object of a source kind an ArtifactGenerator
// may name, nil for another kind.
func newSource(kind string) sourcev1.Source {
	switch kind {
	case sourcev1.GitRepositoryKind:
		return &sourcev1.GitRepository{}
	case sourcev1.OCIRepositoryKind:
		return &sourcev1.OCIRepository{}
	case sourcev1.BucketKind:
		return &sourcev1.Bucket{}
	case sourcev1.HelmChartKind:
		return &sourcev1.HelmChart{}
	case sourcev1.ExternalArtifactKind:
		return &sourcev1.ExternalArtifact{}
	}
	return nil
}

// sourceKey is the namespace/name of a source reference: the
// ArtifactGenerator's namespace unless it names one.
func sourceKey(obj *swv1.ArtifactGenerator, s swv1.SourceReference) client.ObjectKey {
	ns := s.Namespace
	if ns == "" {
		ns = obj.Namespace
	}
	return client.ObjectKey{Namespace: ns, Name: s.Name}
}

// observeSources reads each source's status.artifact. A source missing or
// without an artifact is SourceFetchFailed ("get sources failed: …", the
// API server's not-found message as Flux's), retried after
// --requeue-dependency.
func (r *ArtifactGeneratorReconciler) observeSources(ctx context.Context, obj *swv1.ArtifactGenerator) (map[string]swv1.ObservedSource, *reconciler.Failure) {
	out := map[string]swv1.ObservedSource{}
	for _, s := range obj.Spec.Sources {
		src := newSource(s.Kind)
		if src == nil {
			return nil, reconciler.Fail(swv1.ValidationFailedReason, "source '%s' kind '%s' not supported", s.Name, s.Kind).Stall()
		}
		key := sourceKey(obj, s)
		err := r.Get(ctx, key, src.(client.Object))
		if err != nil && !apierrors.IsNotFound(err) {
			err = fmt.Errorf("unable to get source '%s': %w", key, err)
		}
		if err == nil && src.GetArtifact() == nil {
			err = fmt.Errorf("source '%s/%s' is not ready", s.Kind, key)
		}
		if err != nil {
			f := reconciler.Fail(swv1.SourceFetchFailedReason, "get sources failed: %s", err)
			f.Retry = r.RequeueDependency
			return nil, f
		}
		a := src.GetArtifact()
		o := swv1.ObservedSource{Digest: a.Digest, Revision: a.Revision, URL: a.URL}
		o.OriginRevision = a.Metadata[swv1.OriginRevisionKey]
		out[s.Alias] = o
	}
	return out, nil
}

// fetchSources downloads each source's artifact, verified, and extracts
// it into work/<alias>. source-controller's artifacts must carry its
// signature for the source object (so a status forged by a tenant is not
// fetched); an ExternalArtifact's is checked against its digest only (its
// status writers are the trust boundary, docs/security.md). The artifact
// fetched is the one re-read now, and must be the one observed: a source
// that changed in between is fetched at the next reconcile.
func (r *ArtifactGeneratorReconciler) fetchSources(ctx context.Context, obj *swv1.ArtifactGenerator,
	observed map[string]swv1.ObservedSource, work string) (map[string]string, *reconciler.Failure) {
	dirs := map[string]string{}
	for _, s := range obj.Spec.Sources {
		dir := filepath.Join(work, "sources", s.Alias)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, reconciler.Fail(swv1.SourceFetchFailedReason, "fetch sources failed: %s", err)
		}
		if err := r.fetchOne(ctx, obj, s, observed[s.Alias], dir); err != nil {
			f := reconciler.Fail(swv1.SourceFetchFailedReason, "fetch sources failed: %s", err)
			f.Retry = r.RequeueDependency
			return nil, f
		}
		dirs[s.Alias] = dir
	}
	return dirs, nil
}

func (r *ArtifactGeneratorReconciler) fetchOne(ctx context.Context, obj *swv1.ArtifactGenerator, s swv1.SourceReference,
	want swv1.ObservedSource, dir string) error {
	src := newSource(s.Kind)
	key := sourceKey(obj, s)
	if err := r.Get(ctx, key, src.(client.Object)); err != nil {
		return err
	}
	a := src.GetArtifact()
	if a == nil || a.Digest != want.Digest || a.URL != want.URL {
		return fmt.Errorf("source '%s/%s' changed while fetching", s.Kind, key)
	}
	owner := artifact.Owner{Kind: s.Kind, Namespace: key.Namespace, Name: key.Name}
	fetch := r.Fetcher.FetchArtifact
	if s.Kind == sourcev1.ExternalArtifactKind {
		fetch = r.Fetcher.FetchExternal
	}
	err := fetch(ctx, owner, a, func(rd io.Reader, lim artifact.Limits) error { return artifact.Extract(rd, dir, lim) })
	if errors.Is(err, artifact.ErrNotFound) {
		return fmt.Errorf("artifact of %s not found: %w", owner, err)
	}
	return err
}

package source

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// Refresh asks source-controller to look at src's remote again now
// instead of at the next interval, for Argo CD's refresh annotation
// (argocd-contract §3.2, which re-resolves the revision): it sets Flux's
// reconcile.fluxcd.io/requestedAt on each of the objects Ensure keeps for
// app's src (app's project picks the credential scope, as in Ensure).
// Objects not created yet are skipped; the Ensure after the fetch returns
// the new artifact. Errors are API errors.
func (m *Manager) Refresh(ctx context.Context, app *argov1.Application, src argov1.ApplicationSource, revision string) error {
	scope, err := m.CredentialScope(ctx, projectOf(app), src.RepoURL)
	if err != nil {
		return err
	}
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	for kind, name := range objectNames(SourceUse{Source: src, Revision: revision}, scope) {
		var obj client.Object
		switch kind {
		case sourcev1.GitRepositoryKind:
			obj = &sourcev1.GitRepository{}
		case sourcev1.HelmRepositoryKind:
			obj = &sourcev1.HelmRepository{}
		case sourcev1.HelmChartKind:
			obj = &sourcev1.HelmChart{}
		default:
			obj = &sourcev1.OCIRepository{}
		}
		obj.SetNamespace(m.Namespace)
		obj.SetName(name)
		err := m.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("requesting a fetch of %s %s: %w", kind, name, err)
		}
	}
	return nil
}

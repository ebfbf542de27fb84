package source

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// SourceUse is one source an Application uses and the revision Ensure is
// called with for it ("" for its targetRevision).
type SourceUse struct {
	Source   argov1.ApplicationSource
	Revision string
}

// Uses lists the sources app references: its spec's sources at their
// targetRevision, and those of its requested operation and of a running
// one (operation.sync.source(s) or the spec's, at sync.revision(s), e.g. a
// rollback's commit).
func Uses(app *argov1.Application) []SourceUse {
	var out []SourceUse
	for _, s := range app.GetSources() {
		out = append(out, SourceUse{Source: s})
	}
	ops := []*argov1.Operation{app.Operation}
	if st := app.Status.OperationState; st != nil && st.Phase == argov1.OperationRunning {
		ops = append(ops, &st.Operation)
	}
	for _, op := range ops {
		if op == nil || op.Sync == nil {
			continue
		}
		srcs := op.Sync.Sources
		if len(srcs) == 0 && op.Sync.Source != nil {
			srcs = []argov1.ApplicationSource{*op.Sync.Source}
		}
		if len(srcs) == 0 {
			srcs = app.GetSources()
		}
		for i, s := range srcs {
			rev := op.Sync.Revision
			if i < len(op.Sync.Revisions) {
				rev = op.Sync.Revisions[i]
			}
			out = append(out, SourceUse{Source: s, Revision: rev})
		}
	}
	return out
}

// objectNames returns kind → names of the source objects Ensure creates
// for one use with the credential scope scope (CredentialScope).
func objectNames(u SourceUse, scope string) map[string]string {
	name := ScopedObjectName(u.Source, u.Revision, scope)
	switch kindOf(u.Source) {
	case kindHelm, kindOCIHelm:
		return map[string]string{sourcev1.HelmRepositoryKind: repositoryName(u.Source, scope), sourcev1.HelmChartKind: name}
	case kindOCI:
		return map[string]string{sourcev1.OCIRepositoryKind: name}
	}
	return map[string]string{sourcev1.GitRepositoryKind: name}
}

// GC deletes the source objects in m.Namespace made by Ensure (labelled
// LabelSource) that no Application in apps uses (Uses, named with the
// credential scope the repository Secrets give each Application now: an
// object left behind when a project-scoped Secret came or went is
// deleted), and their Secrets. apps must be every Application the
// controller reconciles, in every namespace: the objects are shared
// across namespaces.
func (m *Manager) GC(ctx context.Context, apps []argov1.Application) error {
	repoSecrets, err := m.repoSecrets(ctx)
	if err != nil {
		return err
	}
	wanted := map[string]map[string]bool{}
	for i := range apps {
		project := projectOf(&apps[i])
		for _, u := range Uses(&apps[i]) {
			_, _, scope := matchRepository(repoSecrets, project, u.Source.RepoURL)
			for kind, name := range objectNames(u, scope) {
				if wanted[kind] == nil {
					wanted[kind] = map[string]bool{}
				}
				wanted[kind][name] = true
			}
		}
	}
	lists := map[string]client.ObjectList{
		sourcev1.GitRepositoryKind:  &sourcev1.GitRepositoryList{},
		sourcev1.HelmChartKind:      &sourcev1.HelmChartList{},
		sourcev1.HelmRepositoryKind: &sourcev1.HelmRepositoryList{},
		sourcev1.OCIRepositoryKind:  &sourcev1.OCIRepositoryList{},
	}
	kept := map[string]bool{}
	for _, kind := range []string{sourcev1.HelmChartKind, sourcev1.GitRepositoryKind, sourcev1.HelmRepositoryKind, sourcev1.OCIRepositoryKind} {
		list := lists[kind]
		if err := m.Client.List(ctx, list, client.InNamespace(m.Namespace), client.HasLabels{LabelSource}); err != nil {
			return fmt.Errorf("listing %s objects: %w", kind, err)
		}
		objs, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, o := range objs {
			obj := o.(client.Object)
			if wanted[kind][obj.GetName()] {
				kept[obj.GetName()] = true
				continue
			}
			if err := m.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting %s %s: %w", kind, obj.GetName(), err)
			}
		}
	}
	// Owner references would collect the Secrets too, but only where a
	// garbage collector runs; deleting them here does not depend on it.
	var secrets corev1.SecretList
	if err := m.Client.List(ctx, &secrets, client.InNamespace(m.Namespace), client.HasLabels{LabelSource}); err != nil {
		return fmt.Errorf("listing Secrets: %w", err)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if kept[s.Name] {
			continue
		}
		if err := m.Client.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s: %w", s.Name, err)
		}
	}
	return nil
}

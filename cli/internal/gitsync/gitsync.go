// Package gitsync builds the pair of objects that syncs a cluster with a
// Git repository, as `flux bootstrap` writes it in gotk-sync.yaml: a
// GitRepository and a Kustomization of the same name that applies a path
// of it. Every command that makes the pair (bootstrap, dev) builds it here.
package gitsync

import (
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KustomizationInterval is the Kustomization's spec.interval, flux's 10m.
const KustomizationInterval = 10 * time.Minute

// Options say what the pair syncs.
type Options struct {
	// Name and Namespace of both objects (flux: flux-system, flux-system).
	Name, Namespace string
	// URL is the GitRepository's spec.url, Branch its spec.ref.branch.
	URL, Branch string
	// Secret is the GitRepository's spec.secretRef.name; "" for none.
	Secret string
	// Interval is the GitRepository's spec.interval (flux: --interval, 1m).
	Interval time.Duration
	// Path is the Kustomization's spec.path, written "./<path>".
	Path string
	// TargetNamespace is the Kustomization's spec.targetNamespace; "" for
	// none.
	TargetNamespace string
}

// Objects are the GitRepository and the Kustomization (pruning, at
// KustomizationInterval) of o, with apiVersion and kind set: new objects
// with the spec fields SetRepository and SetKustomization write.
func Objects(o Options) (*sourcev1.GitRepository, *kustomizev1.Kustomization) {
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace},
	}
	SetRepository(repo, o)
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace},
	}
	SetKustomization(ks, o)
	return repo, ks
}

// SetRepository writes the spec fields of the pair's GitRepository that o
// says into repo, a new object or one read from the cluster: spec.url,
// spec.interval, spec.ref (the branch) and, when o.Secret is set,
// spec.secretRef. Other fields keep what they hold, so an update of a live
// object leaves what others set (a suspend, an ignore) alone.
func SetRepository(repo *sourcev1.GitRepository, o Options) {
	repo.Spec.URL = o.URL
	repo.Spec.Interval = metav1.Duration{Duration: o.Interval}
	repo.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: o.Branch}
	if o.Secret != "" {
		repo.Spec.SecretRef = &meta.LocalObjectReference{Name: o.Secret}
	}
}

// SetKustomization writes the spec fields of the pair's Kustomization into
// ks, a new object or one read from the cluster: spec.interval
// (KustomizationInterval), spec.path ("./<o.Path>"), spec.prune (true),
// spec.targetNamespace and spec.sourceRef (the GitRepository o.Name).
// Other fields, spec.suspend among them, keep what they hold.
func SetKustomization(ks *kustomizev1.Kustomization, o Options) {
	ks.Spec.Interval = metav1.Duration{Duration: KustomizationInterval}
	ks.Spec.Path = "./" + strings.TrimPrefix(o.Path, "./")
	ks.Spec.Prune = true
	ks.Spec.TargetNamespace = o.TargetNamespace
	ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: o.Name}
}

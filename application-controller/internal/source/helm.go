package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// errChartRevision is Argo CD's InvalidSpecError for a chart without a
// version (argocd-contract §1.2).
var errChartRevision = errors.New("spec.source.targetRevision is required if the manifest source is a helm chart")

// ensureHelm keeps the HelmRepository (one per repository URL; type oci
// for an OCI registry) and the HelmChart (chart, version: an exact
// version or a semver constraint, argocd-contract §1.3) of src, and
// returns the unpacked chart when the HelmChart's artifact satisfies the
// version. Argo CD's insecure sets spec.insecure of an OCI repository
// (source-controller then also allows plain HTTP); for an HTTP repository
// it has no effect.
func (m *Manager) ensureHelm(ctx context.Context, project string, src argov1.ApplicationSource, revision string) (*Fetched, error) {
	version := wantedRevision(src, revision)
	if version == "" {
		return nil, errChartRevision
	}
	repo, scope, err := m.ensureHelmRepository(ctx, project, src)
	if err != nil {
		return nil, err
	}
	chart := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: ScopedObjectName(src, revision, scope)}}
	_, err = controllerutil.CreateOrUpdate(ctx, m.Client, chart, func() error {
		setLabel(chart)
		chart.Spec.Chart = src.Chart
		chart.Spec.Version = version
		chart.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: repo.Name}
		chart.Spec.Interval = metav1.Duration{Duration: m.interval()}
		return nil
	})
	if err != nil {
		return nil, objectError(sourcev1.HelmChartKind, chart.Name, err)
	}
	if art := chart.Status.Artifact; art != nil && satisfies(version, art.Revision) {
		dir, err := m.unpack(ctx, sourcev1.HelmChartKind, chart.Name, art)
		if err != nil {
			return nil, err
		}
		return &Fetched{Dir: chartDir(dir, src.Chart), Revision: art.Revision, Artifact: art, Object: chart.Name}, nil
	}
	nr := notReady(sourcev1.HelmChartKind, chart, chart.Status.Conditions, waitingMessage)
	// The repository's own failure (unreachable, refused credentials) says
	// more than the chart's.
	if rn := notReady(sourcev1.HelmRepositoryKind, repo, repo.Status.Conditions, ""); rn.Message != "" &&
		repo.Spec.Type != sourcev1.HelmRepositoryTypeOCI {
		return nil, rn
	}
	return nil, nr
}

// ensureHelmRepository keeps the HelmRepository of src's URL for the
// credential scope of project, and returns it with that scope.
func (m *Manager) ensureHelmRepository(ctx context.Context, project string, src argov1.ApplicationSource) (*sourcev1.HelmRepository, string, error) {
	u := canonicalURL(src)
	argo, scope, err := m.repoData(ctx, project, src.RepoURL)
	if err != nil {
		return nil, "", err
	}
	data, err := m.helmSecretData(ctx, argo, u)
	if err != nil {
		return nil, "", err
	}
	repo := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: repositoryName(src, scope)}}
	if err := m.presetSecret(ctx, repo.Name, data, corev1.SecretTypeOpaque); err != nil {
		return nil, "", err
	}
	_, err = controllerutil.CreateOrUpdate(ctx, m.Client, repo, func() error {
		setLabel(repo)
		repo.Spec.URL = u
		repo.Spec.Interval = metav1.Duration{Duration: m.interval()}
		repo.Spec.SecretRef = secretRef(repo.Name, data)
		repo.Spec.CertSecretRef = nil
		if hasAny(data, "tls.crt", "ca.crt") {
			repo.Spec.CertSecretRef = &meta.LocalObjectReference{Name: repo.Name}
		}
		repo.Spec.Type = sourcev1.HelmRepositoryTypeDefault
		repo.Spec.Insecure = false
		if kindOf(src) == kindOCIHelm {
			repo.Spec.Type = sourcev1.HelmRepositoryTypeOCI
			repo.Spec.Insecure = isTrue(argo, "insecure")
		}
		return nil
	})
	if err != nil {
		return nil, "", objectError(sourcev1.HelmRepositoryKind, repo.Name, err)
	}
	if _, err := m.syncSecret(ctx, repo, helmRepoGVK, data, corev1.SecretTypeOpaque); err != nil {
		return nil, "", err
	}
	return repo, scope, nil
}

// chartDir is the chart's directory in an unpacked chart package: the
// top-level directory named chart, else the only one holding Chart.yaml,
// else dir itself.
func chartDir(dir, chart string) string {
	if isChart(filepath.Join(dir, chart)) {
		return filepath.Join(dir, chart)
	}
	entries, _ := os.ReadDir(dir)
	found := ""
	for _, e := range entries {
		if e.IsDir() && isChart(filepath.Join(dir, e.Name())) {
			if found != "" {
				return dir
			}
			found = filepath.Join(dir, e.Name())
		}
	}
	if found != "" {
		return found
	}
	return dir
}

func isChart(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil && fi.Mode().IsRegular()
}

// ensureOCI keeps the OCIRepository of src (ref: digest, semver
// constraint or tag; latest for none), with a dockerconfigjson Secret
// when the repository Secret has credentials, and returns its artifact
// when it matches the ref. Argo CD's insecure sets spec.insecure.
func (m *Manager) ensureOCI(ctx context.Context, project string, src argov1.ApplicationSource, revision string) (*Fetched, error) {
	u := canonicalURL(src)
	ref := ociRef(wantedRevision(src, revision))
	argo, scope, err := m.repoData(ctx, project, src.RepoURL)
	if err != nil {
		return nil, err
	}
	data, err := m.ociSecretData(ctx, argo, u)
	if err != nil {
		return nil, err
	}
	obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: ScopedObjectName(src, revision, scope)}}
	typ := corev1.SecretTypeOpaque
	if len(data[corev1.DockerConfigJsonKey]) > 0 {
		typ = corev1.SecretTypeDockerConfigJson
	}
	if err := m.presetSecret(ctx, obj.Name, data, typ); err != nil {
		return nil, err
	}
	_, err = controllerutil.CreateOrUpdate(ctx, m.Client, obj, func() error {
		setLabel(obj)
		obj.Spec.URL = u
		obj.Spec.Reference = ref
		obj.Spec.Interval = &metav1.Duration{Duration: m.interval()}
		obj.Spec.SecretRef, obj.Spec.CertSecretRef = nil, nil
		if typ == corev1.SecretTypeDockerConfigJson {
			obj.Spec.SecretRef = &meta.LocalObjectReference{Name: obj.Name}
		}
		if hasAny(data, "tls.crt", "ca.crt") {
			obj.Spec.CertSecretRef = &meta.LocalObjectReference{Name: obj.Name}
		}
		obj.Spec.Insecure = isTrue(argo, "insecure")
		return nil
	})
	if err != nil {
		return nil, objectError(sourcev1.OCIRepositoryKind, obj.Name, err)
	}
	if _, err := m.syncSecret(ctx, obj, ociGVK, data, typ); err != nil {
		return nil, err
	}
	if art := obj.Status.Artifact; art != nil && matchesOCI(ref, art.Revision) {
		dir, err := m.unpack(ctx, sourcev1.OCIRepositoryKind, obj.Name, art)
		if err != nil {
			return nil, err
		}
		return &Fetched{Dir: dir, Revision: ociDigest(art.Revision), Artifact: art, Object: obj.Name}, nil
	}
	return nil, notReady(sourcev1.OCIRepositoryKind, obj, obj.Status.Conditions, waitingMessage)
}

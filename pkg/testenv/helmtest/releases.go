package helmtest

import (
	"errors"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// ActionConfig returns a Helm action configuration for the cluster of the kubeconfig file (e.g.
// testenv's Environment.KubeconfigPath) whose release storage is the secrets driver in
// namespace storageNamespace, helm-controller's storage (and the helm CLI's default). Tests use
// it to run Helm actions as a user would, e.g. an out-of-band `helm upgrade`. Discovery is
// cached under t.TempDir(), not ~/.kube/cache; Helm's debug log is dropped.
func ActionConfig(t testing.TB, kubeconfig, storageNamespace string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	cacheDir := t.TempDir()
	flags.KubeConfig, flags.Namespace, flags.CacheDir = &kubeconfig, &storageNamespace, &cacheDir
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, storageNamespace, "secret", func(string, ...any) {}); err != nil {
		t.Fatalf("helmtest: Helm action configuration: %v", err)
	}
	return cfg
}

// Releases returns the releases stored in storageNamespace, as `helm list -a -n
// <storageNamespace>` shows them: the latest revision of each release whatever its status
// (deployed, failed, pending-*, superseded, uninstalling, or uninstalled with --keep-history),
// sorted by name. None gives an empty slice.
func Releases(t testing.TB, kubeconfig, storageNamespace string) []*release.Release {
	t.Helper()
	list := action.NewList(ActionConfig(t, kubeconfig, storageNamespace))
	list.All = true
	list.SetStateMask()
	rels, err := list.Run()
	if err != nil {
		t.Fatalf("helmtest: listing the Helm releases in %s: %v", storageNamespace, err)
	}
	return rels
}

// History returns every stored revision of release name in storageNamespace, oldest first, as
// `helm history` shows them (without its --max limit); nil when no revision is stored.
func History(t testing.TB, kubeconfig, storageNamespace, name string) []*release.Release {
	t.Helper()
	rels, err := action.NewHistory(ActionConfig(t, kubeconfig, storageNamespace)).Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("helmtest: history of Helm release %s/%s: %v", storageNamespace, name, err)
	}
	releaseutil.SortByRevision(rels)
	return rels
}

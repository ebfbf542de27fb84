package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runBinaryShard runs the built source-controller on the objects labelled
// shard.
func runBinaryShard(t *testing.T, shard string) {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"="+shard, "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s")
}

// TestBinaryGitHubAppProvider: the built binary clones with a GitHub App's
// installation token, bought from a fake GitHub API at githubAppBaseURL.
func TestBinaryGitHubAppProvider(t *testing.T) {
	runBinaryShard(t, "binary-github")
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a: 1\n"})
	f := newGitHubAppFixture(t, r)
	obj := newGitRepository(t, ns, "app", f.url, func(o *sourcev1.GitRepository) {
		o.Labels = map[string]string{shardKey: "binary-github"}
		o.Spec.Provider = sourcev1.GitProviderGitHub
		o.Spec.SecretRef = &meta.LocalObjectReference{Name: "app"}
	})
	createSecret(t, ns, "app", f.secret)
	f.checkFetchedWithToken(t, waitReady(t, obj))
}

func createSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

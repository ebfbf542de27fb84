package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/google/go-containerregistry/pkg/crane"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ociArtifactFlow is the OCI path a Flux user takes, end to end against
// eddy dev's controllers: `eddy push artifact` of podinfo's kustomize/
// directory to a registry, OCIRepositories by tag, semver and digest made
// with `eddy create source oci`, a Kustomization applying the semver one; a
// reconcile of an unchanged digest downloads nothing; a new version pushed
// by the real flux CLI (Flux's own artifact format) is fetched and applied;
// `eddy pull artifact` gives back the pushed files.
func ociArtifactFlow(t *testing.T, u *user, c client.Client) {
	ctx := context.Background()
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // neither CLI reads the user's Docker credentials
	reg := testenv.NewRegistry(t)
	repo := "oci://" + reg.Host() + "/manifests/podinfo"
	src := filepath.Join(t.TempDir(), "kustomize")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testenv.TestdataDir(t), "repos", "podinfo", "kustomize"))); err != nil {
		t.Fatal(err)
	}
	const source = "https://github.com/stefanprodan/podinfo"
	pushedRe := regexp.MustCompile(`(?m)^✔ artifact successfully pushed to ` + regexp.QuoteMeta(reg.Host()) + `/manifests/podinfo@(sha256:[0-9a-f]{64})$`)
	out := u.must("push", "artifact", repo+":6.0.0", "--path", src, "--source", source, "--revision", "6.0.0@sha1:"+strings.Repeat("a", 40))
	m := pushedRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("eddy push artifact did not print the digest URL")
	}
	d600 := m[1]

	for _, s := range []struct{ name, ref, revision string }{
		{"podinfo-tag", "--tag=6.0.0", "6.0.0@" + d600},
		{"podinfo-semver", "--tag-semver=>=6.0.0", "6.0.0@" + d600},
		{"podinfo-digest", "--digest=" + d600, d600},
	} {
		out := u.must("create", "source", "oci", s.name, "--url="+repo, s.ref, "--insecure", "--interval=1h")
		hasLines(t, out, "✔ OCIRepository created", "✔ fetched revision: "+s.revision)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oci"}}); err != nil {
		t.Fatal(err)
	}
	out = u.must("create", "ks", "podinfo-oci", "--source=OCIRepository/podinfo-semver", "--path=./", "--prune", "--target-namespace=oci")
	hasLines(t, out, "✔ Kustomization podinfo-oci is ready", "✔ applied revision 6.0.0@"+d600)
	want := expectedLines(t, "podinfo/kustomize-build/kustomize/expected-objects.txt", "oci")
	if got := inventoryLines(u.kustomization("podinfo-oci")); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("objects applied from the OCIRepository:\n%s\nwant (kustomize build, namespace oci):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The same push again: the controller asks for the digest, downloads nothing.
	blobs := reg.Requests(testenv.RegistryBlobGet)
	for _, name := range []string{"podinfo-tag", "podinfo-semver", "podinfo-digest"} {
		hasLines(t, u.must("reconcile", "source", "oci", name), "✔ fetched revision "+map[bool]string{true: d600, false: "6.0.0@" + d600}[name == "podinfo-digest"])
	}
	if n := reg.Requests(testenv.RegistryBlobGet); n != blobs {
		t.Errorf("reconciling unchanged digests downloaded %d blobs; want none", n-blobs)
	}

	// 6.1.0, pushed by the real flux CLI, adds a ConfigMap: the semver source
	// and its Kustomization take it; the tag and digest sources stay.
	extra := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-extra\ndata:\n  greeting: hello\n"
	if err := os.WriteFile(filepath.Join(src, "extra.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	kz, _ := os.ReadFile(filepath.Join(src, "kustomization.yaml"))
	if err := os.WriteFile(filepath.Join(src, "kustomization.yaml"), []byte(strings.Replace(string(kz), "resources:\n", "resources:\n  - extra.yaml\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	flux := newFluxCLI(t, filepath.Join(t.TempDir(), "no-kubeconfig"))
	flux.on(t).must([]string{"push", "artifact", repo + ":6.1.0", "--path", src, "--source", source, "--revision", "6.1.0@sha1:" + strings.Repeat("b", 40)})
	d610, err := crane.Digest(reg.Host() + "/manifests/podinfo:6.1.0")
	if err != nil {
		t.Fatal(err)
	}
	hasLines(t, u.must("reconcile", "ks", "podinfo-oci", "--with-source"), "✔ fetched revision 6.1.0@"+d610, "✔ applied revision 6.1.0@"+d610)
	if err := c.Get(ctx, types.NamespacedName{Namespace: "oci", Name: "podinfo-extra"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap of 6.1.0 was not applied: %v", err)
	}
	hasLines(t, u.must("reconcile", "source", "oci", "podinfo-tag"), "✔ fetched revision 6.0.0@"+d600)

	// The real flux CLI reads and reconciles Eddy's OCIRepositories.
	fluxOn := newFluxCLI(t, filepath.Join(u.dir(), "cluster", "kubeconfig"))
	fluxOn.must([]string{"get", "sources", "oci"}, `^podinfo-semver\s+6\.1\.0@sha256:`+d610[len("sha256:"):len("sha256:")+8]+`\s+False\s+True\s+stored artifact`)
	fluxOn.must([]string{"reconcile", "source", "oci", "podinfo-digest"}, `fetched revision `+regexp.QuoteMeta(d600))

	// What eddy pushed, eddy pulls back.
	pulled := t.TempDir()
	u.must("pull", "artifact", repo+":6.0.0", "--output", pulled)
	orig := filepath.Join(testenv.TestdataDir(t), "repos", "podinfo", "kustomize")
	if got, want := testenv.ReadFiles(t, pulled), testenv.ReadFiles(t, orig); !maps.Equal(got, want) {
		t.Errorf("eddy pull artifact of eddy's 6.0.0 push: files differ from podinfo's kustomize/")
	}

	u.must("delete", "ks", "podinfo-oci", "--silent")
	waitUntil(t, "the Kustomization's objects pruned", time.Minute, func() (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Namespace: "oci", Name: "podinfo-extra"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), "ConfigMap oci/podinfo-extra still there"
	})
	for _, name := range []string{"podinfo-tag", "podinfo-semver", "podinfo-digest"} {
		u.must("delete", "source", "oci", name, "--silent")
	}
}

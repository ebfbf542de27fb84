package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// imageAutomationRepo writes a repository (branch main, path
// ./clusters/dev) whose Deployment's image carries a marker of the
// ImagePolicy flux-system/podinfo, beside that policy, its
// ImageRepository on host and an ImageUpdateAutomation that pushes to main.
func imageAutomationRepo(t *testing.T, host string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "config")
	files := map[string]string{
		"images.yaml": "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: podinfo, namespace: flux-system}\n" +
			"spec: {image: " + host + "/podinfo, interval: 1m}\n---\n" +
			"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: podinfo, namespace: flux-system}\n" +
			"spec: {imageRepositoryRef: {name: podinfo}, policy: {semver: {range: 6.x}}}\n---\n" +
			"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {name: flux-system, namespace: flux-system}\n" +
			"spec:\n  interval: 1m\n  sourceRef: {kind: GitRepository, name: flux-system}\n" +
			"  git:\n    checkout: {ref: {branch: main}}\n    commit: {author: {name: fluxbot, email: fluxbot@example.com}}\n    push: {branch: main}\n" +
			"  update: {path: ./clusters/dev, strategy: Setters}\n",
		"app.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: podinfo, namespace: default}\nspec:\n" +
			"  selector: {matchLabels: {app: podinfo}}\n  template:\n    metadata: {labels: {app: podinfo}}\n    spec:\n      containers:\n" +
			"      - name: podinfo\n        image: " + host + "/podinfo:6.6.0 # {\"$imagepolicy\": \"flux-system:podinfo\"}\n",
	}
	for name, data := range files {
		p := filepath.Join(repo, "clusters", "dev", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return gitInit(t, repo)
}

// TestDevServerTakesTheAutomationsPushIntoTheWorkTree: on a repository
// using image automation, eddy dev's Git server takes
// image-automation-controller's push into the user's work tree (its files
// follow, its .git/config is not written), the GitRepository fetches the
// pushed commit at once rather than at its 1m interval, and the Deployment
// rolls to the new tag; a work tree with changes not committed refuses the
// next push with Git's own message, which the automation reports.
func TestDevServerTakesTheAutomationsPushIntoTheWorkTree(t *testing.T) {
	root, _ := built(t)
	if !fileExists(filepath.Join(root, "bin", "image-automation-controller")) {
		t.Skip("bin/image-automation-controller is not built")
	}
	u := newUser(t)
	reg := testenv.NewRegistry(t)
	reg.Push(t, "podinfo", "6.6.0")
	repo := imageAutomationRepo(t, reg.Host())
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := gitserver.Git(repo, "rev-parse", "HEAD")
	out := u.must("dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev")
	if !strings.Contains(out, "(image-automation-controller's commits) are taken into "+repo+" and fetched at once") {
		t.Errorf("dev up does not say where pushes go:\n%s", out)
	}
	c := u.client()
	ctx := context.Background()

	reg.Push(t, "podinfo", "6.7.1")
	u.must("reconcile", "image", "repository", "podinfo")
	var pushed string
	waitUntil(t, "the automation's commit in the work tree", 2*time.Minute, func() (bool, string) {
		pushed, _ = gitserver.Git(repo, "rev-parse", "HEAD")
		auto := &imagev1.ImageUpdateAutomation{}
		_ = c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, auto)
		return pushed != first, "automation conditions: " + conditionsOf(auto.Status.Conditions)
	})
	landed := time.Now()
	data, _ := os.ReadFile(filepath.Join(repo, "clusters", "dev", "app.yaml"))
	if !strings.Contains(string(data), "/podinfo:6.7.1 # {\"$imagepolicy\": \"flux-system:podinfo\"}") {
		t.Errorf("the work tree's app.yaml after the push:\n%s", data)
	}
	if status, _ := gitserver.Git(repo, "status", "--porcelain"); status != "" {
		t.Errorf("the work tree after the push: %q", status)
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); string(after) != string(config) {
		t.Errorf("eddy dev wrote the repository's .git/config:\n%s", after)
	}
	waitUntil(t, "the GitRepository fetched the pushed commit", 30*time.Second, func() (bool, string) {
		src := &sourcev1.GitRepository{}
		_ = c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, src)
		return src.Status.Artifact != nil && strings.HasSuffix(src.Status.Artifact.Revision, pushed), "artifact: " + artifactOf(src)
	})
	if d := time.Since(landed); d > 20*time.Second {
		t.Errorf("the pushed commit was fetched %s after it landed: the push did not ask for a reconcile", d.Round(time.Second))
	}
	waitUntil(t, "the Deployment runs 6.7.1", time.Minute, func() (bool, string) {
		d := &appsv1.Deployment{}
		_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "podinfo"}, d)
		img := ""
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			img = cs[0].Image
		}
		return strings.HasSuffix(img, "/podinfo:6.7.1"), "image: " + img
	})

	if err := os.WriteFile(filepath.Join(repo, "clusters", "dev", "app.yaml"), append(data, "# not committed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	reg.Push(t, "podinfo", "6.7.2")
	u.must("reconcile", "image", "repository", "podinfo")
	waitUntil(t, "the automation reports the refused push", 2*time.Minute, func() (bool, string) {
		auto := &imagev1.ImageUpdateAutomation{}
		_ = c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, auto)
		r := apimeta.FindStatusCondition(auto.Status.Conditions, meta.ReadyCondition)
		return r != nil && strings.Contains(r.Message, "Working directory has unstaged changes"), "automation conditions: " + conditionsOf(auto.Status.Conditions)
	})
	if head, _ := gitserver.Git(repo, "rev-parse", "HEAD"); head != pushed {
		t.Errorf("a push into a dirty work tree moved HEAD to %s", head)
	}
}

func artifactOf(r *sourcev1.GitRepository) string {
	if r.Status.Artifact == nil {
		return "none"
	}
	return r.Status.Artifact.Revision
}

func conditionsOf(conds []metav1.Condition) string {
	var s []string
	for _, c := range conds {
		s = append(s, c.Type+"="+string(c.Status)+" "+c.Reason+": "+c.Message)
	}
	return strings.Join(s, "; ")
}

// TestDevUpOnARepositoryThatNowUsesImageKindsSaysToRestart: image objects
// committed into the repository of a running environment started without
// the image controllers; `eddy dev up --repo … --path …` then says in one
// line that the repository now uses image.toolkit.fluxcd.io and to run
// down then up, and leaves the sync as it was; a plain `eddy dev up` warns
// the same. Before that, `eddy create image repository` fails with the API
// server's text and one hint line.
func TestDevUpOnARepositoryThatNowUsesImageKindsSaysToRestart(t *testing.T) {
	u := newUser(t)
	repo := gitInitFiles(t, map[string]string{"clusters/dev/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n"})
	u.must("dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev")
	out := u.fails("create", "image", "repository", "podinfo", "--image=127.0.0.1:5999/podinfo")
	if !strings.Contains(out, "no matches for") || !strings.HasSuffix(strings.TrimSpace(out), "\n"+imageCRDHint) {
		t.Errorf("create image repository without the image CRDs:\n%s", out)
	}
	images := imageAutomationRepo(t, "127.0.0.1:5999")
	data, err := os.ReadFile(filepath.Join(images, "clusters", "dev", "images.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "clusters", "dev", "images.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "images"}} {
		if _, err := gitserver.Git(repo, args...); err != nil {
			t.Fatal(err)
		}
	}
	out = u.fails("dev", "up", "--repo", repo, "--path", "./clusters/dev")
	oneLineError(t, out, "the repository now uses image.toolkit.fluxcd.io", "image-reflector-controller, image-automation-controller",
		"run `eddy dev down`, then `eddy dev up`")
	out = u.must("dev", "up")
	if !strings.Contains(out, "the repository now uses image.toolkit.fluxcd.io") {
		t.Errorf("a plain dev up on the running environment does not warn:\n%s", out)
	}
}

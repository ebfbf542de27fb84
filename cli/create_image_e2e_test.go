package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// imageCreates are `create image` commands whose --export bin/eddy and
// bin/flux print alike.
var imageCreates = [][]string{
	{"repository", "podinfo", "--image=ghcr.io/stefanprodan/podinfo"},
	{"repository", "app", "--image=registry.example.com/team/app", "--interval=5m", "--scan-timeout=30s",
		"--secret-ref=regcred", "--cert-ref=ca", "--label=team=a,tier=web", "-n", "apps"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-semver=>=6.0.0 <7.0.0"},
	{"policy", "app", "--image-ref=app", "--select-numeric=asc", "--filter-regex=^main-[a-f0-9]+-(?P<ts>[0-9]+)$",
		"--filter-extract=$ts", "--reflect-digest=Always", "--interval=10m"},
	{"policy", "alpha", "--image-ref=app", "--select-alpha=desc", "--filter-regex=^rc-", "--reflect-digest=IfNotPresent"},
	{"update", "flux-system", "--git-repo-ref=flux-system", "--git-repo-path=./clusters/dev", "--checkout-branch=main",
		"--author-name=fluxbot", "--author-email=fluxbot@example.com"},
	{"update", "apps", "--git-repo-ref=apps", "--git-repo-namespace=flux-system", "--checkout-branch=main",
		"--push-branch=image-updates", "--author-name=bot", "--author-email=bot@example.com", "--interval=30m",
		"--commit-template={{range .Changed.Changes}}{{.NewValue}} {{end}}", "--signing-key-secret=sk", "--signing-key-type=ssh", "-n", "apps"},
}

// imageCreateErrors are invalid `create image` commands, each failing with
// the same message from bin/eddy and bin/flux.
var imageCreateErrors = [][]string{
	{"repository", "podinfo"},
	{"repository", "Podinfo", "--image=x"},
	{"repository", "podinfo", "--image=a/b", "--label=x"},
	{"policy", "podinfo"},
	{"policy", "podinfo", "--image-ref=podinfo"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-alpha=up"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-numeric=1"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-alpha=asc", "--select-numeric=asc"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-semver=1.x", "--filter-regex=("},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-semver=1.x", "--filter-extract=$v"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-semver=1.x", "--filter-regex=^(?P<v>.*)$", "--filter-extract=$w"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-semver=1.x", "--filter-regex=^(?P<v>.*)$", "--filter-extract=${v"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-semver=1.x", "--reflect-digest=Sometimes"},
	{"policy", "podinfo", "--image-ref=podinfo", "--select-semver=1.x", "--interval=1m"},
	{"update", "auto"},
	{"update", "auto", "--git-repo-ref=r"},
	{"update", "auto", "--git-repo-ref=r", "--checkout-branch=main"},
	{"update", "auto", "--git-repo-ref=r", "--checkout-branch=main", "--author-name=bot"},
	{"update", "auto", "--git-repo-ref=r", "--checkout-branch=main", "--author-name=bot", "--author-email=b@x", "--signing-key-type=gpg"},
	{"update", "auto", "--git-repo-ref=r", "--checkout-branch=main", "--author-name=bot", "--author-email=b@x",
		"--signing-key-secret=sk", "--signing-key-type=x509"},
}

// TestCreateImageExportsAndFailsAsFlux: bin/eddy's `create image ...
// --export` YAML is byte for byte bin/flux's, and each invalid command
// fails with flux's message; two --select flags fail in eddy (flux 2.9
// writes an empty policy).
func TestCreateImageExportsAndFailsAsFlux(t *testing.T) {
	u := newUser(t)
	flux := newFluxCLI(t, filepath.Join(t.TempDir(), "no-kubeconfig"))
	for _, args := range imageCreates {
		args = append([]string{"create", "image"}, append(args, "--export")...)
		got := u.must(args...)
		want, err := flux.run(args...)
		if err != nil || got != want {
			t.Errorf("%s:\neddy:\n%s\nflux (err=%v):\n%s", strings.Join(args, " "), got, err, want)
		}
	}
	for _, args := range imageCreateErrors {
		args = append([]string{"create", "image"}, append(args, "--export")...)
		got := u.fails(args...)
		want, err := flux.run(args...)
		if err == nil || got != want {
			t.Errorf("%s:\neddy:\n%s\nflux (err=%v):\n%s", strings.Join(args, " "), got, err, want)
		}
	}
	oneLineError(t, u.fails("create", "image", "policy", "pp", "--image-ref=r", "--select-semver=1.x", "--select-alpha=asc", "--export"),
		"only one of --select-semver, --select-alpha or --select-numeric can be specified")
}

// answerAutomations stands in for image-automation-controller until ctx
// ends: each ImageUpdateAutomation gets Ready=True for its generation.
func answerAutomations(ctx context.Context, c client.Client) {
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		autos := &imagev1.ImageUpdateAutomationList{}
		if c.List(ctx, autos) != nil {
			return false, nil
		}
		for i := range autos.Items {
			o := &autos.Items[i]
			if o.Status.ObservedGeneration == o.Generation {
				continue
			}
			o.Status.ObservedGeneration = o.Generation
			o.Status.Conditions = readyCond(metav1.ConditionTrue, meta.SucceededReason, "repository up-to-date", o.Generation)
			_ = c.Status().Update(ctx, o) // a conflict is retried at the next poll
		}
		return false, nil
	})
}

// TestCreateImageWaitsForTheReflectorsReady: against an API server, with
// the built image-reflector-controller scanning an in-process registry,
// `eddy create image repository` and `policy` print flux's lines and
// return once the object is Ready (the policy with its latest tag); an
// update keeps the object's other metadata; `create image update` waits
// for its Ready (a stand-in for image-automation-controller).
func TestCreateImageWaitsForTheReflectorsReady(t *testing.T) {
	root, _ := built(t)
	u := newUser(t)
	ctx, c, env := startAPIServer(t, "flux-system")
	reg := testenv.NewRegistry(t)
	reg.Push(t, "podinfo", "6.6.0", "6.7.0", "6.7.1", "7.0.0-rc.1")
	testenv.RunBinary(t, env, filepath.Join(root, "bin", "image-reflector-controller"), "--storage-path="+t.TempDir(),
		"--min-retry-delay=200ms", "--max-retry-delay=2s", "--requeue-dependency=1s")
	go answerAutomations(ctx, c)
	kc := "--kubeconfig=" + env.KubeconfigPath

	out := u.must(kc, "create", "image", "repository", "podinfo", "--image="+reg.Host()+"/podinfo", "--interval=1m")
	wantLines(t, out, "generating ImageRepository", "applying ImageRepository", "ImageRepository created",
		"waiting for ImageRepository reconciliation", "ImageRepository reconciliation completed")
	out = u.must(kc, "create", "image", "policy", "podinfo", "--image-ref=podinfo", "--select-semver=6.x", "--label=team=a")
	wantLines(t, out, "ImagePolicy created", "ImagePolicy reconciliation completed")
	pol := &imagev1.ImagePolicy{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "podinfo"}, pol); err != nil {
		t.Fatal(err)
	}
	if pol.Status.LatestRef == nil || pol.Status.LatestRef.Tag != "6.7.1" {
		t.Errorf("policy's latest: %+v, want tag 6.7.1", pol.Status.LatestRef)
	}

	// An update: the new spec and labels, annotations kept, Ready again.
	pol.Annotations = map[string]string{"kept": "yes"}
	if err := c.Update(ctx, pol); err != nil {
		t.Fatal(err)
	}
	out = u.must(kc, "create", "image", "policy", "podinfo", "--image-ref=podinfo", "--select-semver=>=7.0.0-0")
	wantLines(t, out, "ImagePolicy updated", "ImagePolicy reconciliation completed")
	if err := c.Get(ctx, client.ObjectKeyFromObject(pol), pol); err != nil {
		t.Fatal(err)
	}
	if pol.Annotations["kept"] != "yes" || pol.Labels["team"] != "" || pol.Status.LatestRef == nil || pol.Status.LatestRef.Tag != "7.0.0-rc.1" {
		t.Errorf("updated policy: annotations %v labels %v latest %+v", pol.Annotations, pol.Labels, pol.Status.LatestRef)
	}

	out = u.must(kc, "create", "image", "update", "flux-system", "--git-repo-ref=flux-system", "--git-repo-path=./clusters",
		"--checkout-branch=main", "--author-name=bot", "--author-email=bot@example.com")
	wantLines(t, out, "ImageUpdateAutomation created", "ImageUpdateAutomation reconciliation completed")

	// A policy that cannot resolve: the wait ends with the controller's message.
	out = u.fails(kc, "--timeout=8s", "create", "image", "policy", "none", "--image-ref=podinfo", "--select-semver=>=9.0.0")
	if !strings.Contains(out, "unable to determine latest version from provided list") {
		t.Errorf("create of a policy that cannot resolve:\n%s", out)
	}
}

// wantLines fails t unless out has a line ending with each of want, in order.
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	ls := lines(out)
	i := 0
	for _, l := range ls {
		if i < len(want) && strings.HasSuffix(strings.TrimSpace(l), want[i]) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("output:\n%s\nhas no line ending with %q (in order)", out, want[i])
	}
}

// TestDevUpRunsImageReflectorForARepositoryWithImageKinds: `eddy dev up`
// on a repository holding an ImageRepository and an ImagePolicy runs
// image-reflector-controller, which scans an in-process registry until
// both are Ready; a missing image-automation-controller is one line.
// --controller-flags reaches image-reflector-controller (and is checked
// against the binary first, as for the core controllers).
func TestDevUpRunsImageReflectorForARepositoryWithImageKinds(t *testing.T) {
	root, _ := built(t)
	u := newUser(t)
	reg := testenv.NewRegistry(t)
	reg.Push(t, "podinfo", "6.6.0", "6.7.1")
	repo := t.TempDir()
	manifests := "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: podinfo, namespace: flux-system}\n" +
		"spec: {image: " + reg.Host() + "/podinfo, interval: 1m}\n---\n" +
		"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: podinfo, namespace: flux-system}\n" +
		"spec: {imageRepositoryRef: {name: podinfo}, policy: {semver: {range: 6.x}}}\n"
	if err := os.MkdirAll(filepath.Join(repo, "clusters", "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "clusters", "dev", "images.yaml"), []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	gitInit(t, repo)
	// The optional controllers take --controller-flags as the others do.
	oneLineError(t, u.fails("dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev",
		"--controller-flags", "image-reflector-controller=--no-such-flag"),
		"image-reflector-controller refuses them", "flag provided but not defined: -no-such-flag")
	const flag = "--log-level=debug"
	out := u.upAtTerminal("--detach", "--repo", repo, "--path", "./clusters/dev", "--controller-flags", "image-reflector-controller="+flag)
	automation := !fileExists(filepath.Join(root, "bin", "image-automation-controller"))
	if automation != strings.Contains(strings.ReplaceAll(out, "\n", ""), "image-automation-controller is not built") { // wrapped at 80 columns
		t.Errorf("dev up output (bin/image-automation-controller built: %t):\n%s", !automation, out)
	}
	st := u.must("dev", "status")
	if !strings.Contains(st, "image-reflector-controller") || automation == strings.Contains(st, "image-automation-controller ") {
		t.Errorf("dev status (bin/image-automation-controller built: %t):\n%s", !automation, st)
	}
	if !strings.Contains(st, "image-reflector-controller "+flag) {
		t.Errorf("dev status does not show image-reflector-controller's flag:\n%s", st)
	}
	state, err := dev.ReadState(u.dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range state.Controllers {
		cl, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "cmdline"))
		if has := strings.Contains(string(cl), flag); has != (p.Name == "image-reflector-controller") {
			t.Errorf("%s (pid %d) runs with %s: %v", p.Name, p.PID, flag, has)
		}
	}
	c := u.client()
	pol := &imagev1.ImagePolicy{}
	waitUntil(t, "the ImagePolicy resolves 6.7.1", 90*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "flux-system", Name: "podinfo"}, pol); err != nil {
			return false, err.Error()
		}
		r := apimeta.FindStatusCondition(pol.Status.Conditions, meta.ReadyCondition)
		return r != nil && r.Status == metav1.ConditionTrue && pol.Status.LatestRef != nil && pol.Status.LatestRef.Tag == "6.7.1",
			"policy status: " + strings.TrimSpace(strings.Join(lines(u.must("get", "images", "policy")), "\n"))
	})
}

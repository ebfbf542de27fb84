package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// imageEnv is an API server running the built source-controller and
// image controllers, with an in-process registry and a Git server.
type imageEnv struct {
	env *testenv.Environment
	c   client.Client
	reg *testenv.Registry
	git *testenv.GitServer
	kc  string // --kubeconfig=…
}

// startImageControllers starts the API server, the registry, the Git
// server and the built controllers, with short retry delays.
func startImageControllers(t *testing.T) *imageEnv {
	t.Helper()
	root, _ := built(t)
	_, c, env := startAPIServer(t, "flux-system")
	git, err := testenv.StartGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(git.Close)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	bin := func(name string) string { return filepath.Join(root, "bin", name) }
	retry := []string{"--min-retry-delay=200ms", "--max-retry-delay=2s", "--requeue-dependency=1s"}
	testenv.RunBinary(t, env, bin("source-controller"), append([]string{"--storage-path=" + t.TempDir(),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", port)}, retry...)...)
	testenv.RunBinary(t, env, bin("image-reflector-controller"), append([]string{"--storage-path=" + t.TempDir()}, retry...)...)
	testenv.RunBinary(t, env, bin("image-automation-controller"), "--min-retry-delay=200ms", "--max-retry-delay=2s")
	return &imageEnv{env: env, c: c, reg: testenv.NewRegistry(t), git: git, kc: "--kubeconfig=" + env.KubeconfigPath}
}

// markedDeployment is a Deployment whose image line carries a setter
// marker for the ImagePolicy flux-system/podinfo.
func markedDeployment(image string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: default\n" +
		"spec:\n  template:\n    spec:\n      containers:\n      - name: podinfo\n" +
		"        # the tag is written by the image automation\n" +
		"        image: " + image + ` # {"$imagepolicy": "flux-system:podinfo"}` + "\n"
}

// TestCreateImageUpdateCommitsWithTheBuiltControllers: with the built
// source-controller and image controllers running, `eddy create image
// update` with flux's flags returns once the automation is Ready, and by
// then its commit is on the push branch: the template's message, the
// author given, the marker line changed and nothing else; main stays.
func TestCreateImageUpdateCommitsWithTheBuiltControllers(t *testing.T) {
	e := startImageControllers(t)
	u := newUser(t)
	image := e.reg.Host() + "/podinfo"
	e.reg.Push(t, "podinfo", "6.6.0", "6.7.1", "7.0.0")
	files := map[string]string{"clusters/dev/podinfo.yaml": markedDeployment(image + ":6.6.0"), "README.md": "config\n"}
	repo := e.git.NewRepo(t, files)
	if _, err := gitserver.Git(repo.Bare, "config", "http.receivepack", "true"); err != nil {
		t.Fatal(err)
	}
	main := repo.MustGit(t, "rev-parse", "HEAD")

	u.must(e.kc, "create", "source", "git", "config", "--url="+repo.URL(), "--branch=main", "--interval=1h")
	u.must(e.kc, "create", "image", "repository", "podinfo", "--image="+image, "--interval=1h")
	u.must(e.kc, "create", "image", "policy", "podinfo", "--image-ref=podinfo", "--select-semver=6.x")
	out := u.must(e.kc, "create", "image", "update", "podinfo", "--git-repo-ref=config", "--git-repo-path=./clusters/dev",
		"--checkout-branch=main", "--push-branch=image-updates", "--author-name=Eddy Bot", "--author-email=eddy@example.com",
		"--commit-template=Update {{ .AutomationObject }}{{ range .Changed.Changes }}: {{ .OldValue }} -> {{ .NewValue }}{{ end }}",
		"--interval=1h")
	wantLines(t, out, "generating ImageUpdateAutomation", "applying ImageUpdateAutomation", "ImageUpdateAutomation created",
		"waiting for ImageUpdateAutomation reconciliation", "ImageUpdateAutomation reconciliation completed")

	remote := func(args ...string) string {
		t.Helper()
		out, err := gitserver.Git(repo.Bare, args...)
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	if remote("rev-parse", "main") != main || remote("rev-parse", "image-updates^") != main {
		t.Fatal("main moved, or image-updates is not main plus one commit")
	}
	wantMsg := "Update flux-system/podinfo: " + image + ":6.6.0 -> " + image + ":6.7.1"
	if got := remote("log", "-1", "--format=%an <%ae>%n%B", "image-updates"); got != "Eddy Bot <eddy@example.com>\n"+wantMsg {
		t.Errorf("commit on image-updates:\n%s\nwant author Eddy Bot <eddy@example.com> and message %q", got, wantMsg)
	}
	if stat := remote("diff", "--numstat", "main", "image-updates"); stat != "1\t1\tclusters/dev/podinfo.yaml" {
		t.Errorf("diff main..image-updates: %q, want the marker line of clusters/dev/podinfo.yaml only", stat)
	}
	if got, want := remote("show", "image-updates:clusters/dev/podinfo.yaml")+"\n", markedDeployment(image+":6.7.1"); got != want {
		t.Errorf("podinfo.yaml on image-updates:\n%s\nwant:\n%s", got, want)
	}
	auto := &imagev1.ImageUpdateAutomation{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "flux-system", Name: "podinfo"}, auto); err != nil {
		t.Fatal(err)
	}
	if auto.Status.LastPushCommit != remote("rev-parse", "image-updates") || auto.Spec.Interval.Duration.String() != "1h0m0s" {
		t.Errorf("automation: lastPushCommit %q, interval %s", auto.Status.LastPushCommit, auto.Spec.Interval.Duration)
	}
}

// helpFlag is a flag of a command's help: its name and default.
var helpFlag = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z-]+)(?: [a-zA-Z]+)?\s{2,}.*?(\(default [^)]*\))?$`)

// helpFlags returns the "name (default …)" of each flag in the section
// of help starting at the line section ("Flags:", "Global Flags:").
func helpFlags(help, section string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(help, "\n") {
		switch {
		case strings.TrimSpace(l) == section:
			in = true
		case in && strings.TrimSpace(l) == "":
			in = false
		case in:
			if m := helpFlag.FindStringSubmatch(l); m != nil {
				out = append(out, strings.TrimSpace(m[1]+" "+m[2]))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestCreateImageFlagsAreFluxs: each `create image` command has the flags
// of bin/flux's, with the same defaults, and create's --interval,
// --export and --label.
func TestCreateImageFlagsAreFluxs(t *testing.T) {
	u := newUser(t)
	flux := newFluxCLI(t, filepath.Join(t.TempDir(), "no-kubeconfig"))
	for _, kind := range []string{"repository", "policy", "update"} {
		args := []string{"create", "image", kind, "--help"}
		eddyHelp := u.must(args...)
		fluxHelp, err := flux.run(args...)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := helpFlags(eddyHelp, "Flags:"), helpFlags(fluxHelp, "Flags:"); len(want) < 3 || !slices.Equal(got, want) {
			t.Errorf("create image %s flags:\neddy %q\nflux %q", kind, got, want)
		}
		fluxGlobal := helpFlags(fluxHelp, "Global Flags:")
		for _, f := range helpFlags(eddyHelp, "Global Flags:") {
			if name, _, _ := strings.Cut(f, " "); slices.Contains([]string{"interval", "export", "label"}, name) && !slices.Contains(fluxGlobal, f) {
				t.Errorf("create image %s: eddy's %q is not among flux's global flags %q", kind, f, fluxGlobal)
			}
		}
	}
}

// TestCreateImagePolicyFailsOnceStalled: a policy the built
// image-reflector-controller stalls on (a semver range that does not
// parse) ends `eddy create image policy` at once, as flux's wait does,
// with the controller's message as the last line, long before --timeout.
func TestCreateImagePolicyFailsOnceStalled(t *testing.T) {
	e := startImageControllers(t)
	u := newUser(t)
	e.reg.Push(t, "podinfo", "6.7.1")
	u.must(e.kc, "create", "image", "repository", "podinfo", "--image="+e.reg.Host()+"/podinfo", "--interval=1h")

	start := time.Now()
	out := u.fails(e.kc, "--timeout=2m", "create", "image", "policy", "bad", "--image-ref=podinfo", "--select-semver=not-a-range")
	took := time.Since(start)
	ls := lines(out)
	last := ls[len(ls)-1]
	if want := `✗ invalid policy: semver range "not-a-range" is invalid: improper constraint: "not-a-range"`; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
	wantLines(t, out, "ImagePolicy created", "waiting for ImagePolicy reconciliation")
	if took > 30*time.Second {
		t.Errorf("the stalled policy was waited on for %v", took.Round(time.Second))
	}
	t.Logf("create of a stalled policy failed after %v", took.Round(100*time.Millisecond))
	pol := &imagev1.ImagePolicy{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "flux-system", Name: "bad"}, pol); err != nil {
		t.Fatal(err)
	}
	if c := apimeta.FindStatusCondition(pol.Status.Conditions, meta.StalledCondition); c == nil || c.Reason != imagev1.InvalidPolicyReason {
		t.Errorf("policy conditions %+v, want Stalled %s", pol.Status.Conditions, imagev1.InvalidPolicyReason)
	}
}

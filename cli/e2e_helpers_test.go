package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The e2e tests drive the built bin/eddy as a user would, each with its own
// state directory (XDG_STATE_HOME), against the full local cluster and the
// controller binaries of bin/.

var buildOnce struct {
	sync.Once
	root, eddy string
	err        error
}

// built builds the controllers, their helpers (a stale bin/eddy-sops beside a
// new kustomize-controller would be run) and eddy into bin/ of the checkout,
// as `make build` does, once per test binary. Under `make test`
// (EDDY_BUILT_BIN_DIR is that bin/, just built) it uses them as they are:
// linking them again with other flags replaced, mid-run, the binaries the
// other packages' tests were starting, and cost minutes of a loaded machine.
func built(t *testing.T) (root, eddy string) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := localcluster.WorkspaceRoot()
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.root, buildOnce.eddy = root, filepath.Join(root, "bin", "eddy")
		if madeBin(root) {
			return
		}
		for _, args := range [][]string{
			append(append([]string{"build", "-o", "bin/"}, prefixed("./", dev.Controllers)...), dev.Helpers...),
			{"build", "-o", "bin/eddy", "./cli"},
		} {
			cmd := exec.Command("go", args...)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildOnce.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	if !fileExists(filepath.Join(buildOnce.root, "bin", "k8s", "kube-apiserver")) && os.Getenv("EDDY_K8S_BIN_DIR") == "" {
		t.Fatal("bin/k8s is missing: run `make tools`")
	}
	return buildOnce.root, buildOnce.eddy
}

// builtVersion is the version bin/eddy reports (`make build` links the
// commit's; a plain go build says "dev"): what it writes into manifests
// and commits.
func builtVersion(t *testing.T) string {
	t.Helper()
	_, eddy := built(t)
	// JSON, not the YAML default: YAML quotes a version that reads as a
	// number (a short commit hash of digits only, such as 5543604).
	out, err := exec.Command(eddy, "version", "--client", "-o", "json").Output()
	var v struct{ Eddy string }
	if err != nil || json.Unmarshal(out, &v) != nil || v.Eddy == "" {
		t.Fatalf("eddy version --client -o json: %v: %q", err, out)
	}
	return v.Eddy
}

// madeBin reports whether EDDY_BUILT_BIN_DIR is root's bin/ and holds every
// binary eddy dev runs, and eddy.
func madeBin(root string) bool {
	dir := os.Getenv("EDDY_BUILT_BIN_DIR")
	if dir == "" {
		return false
	}
	if abs, err := filepath.Abs(dir); err != nil || abs != filepath.Join(root, "bin") {
		return false
	}
	for _, name := range append(append([]string{"eddy"}, dev.Controllers...), dev.Helpers...) {
		if !fileExists(filepath.Join(dir, filepath.Base(name))) {
			return false
		}
	}
	return true
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

// user runs eddy with its own state directory.
type user struct {
	t         *testing.T
	eddy      string
	state     string // XDG_STATE_HOME
	diagnosed bool   // diagnose ran
}

func newUser(t *testing.T) *user {
	_, eddy := built(t)
	u := &user{t: t, eddy: eddy, state: t.TempDir()}
	t.Cleanup(func() {
		if s := dev.Running(u.dir()); s != nil {
			out, _ := u.run("dev", "down")
			t.Logf("cleanup: eddy dev down:\n%s", out)
		}
	})
	u.diagnoseOnFailure()
	return u
}

func (u *user) dir() string { return filepath.Join(u.state, "eddy", "dev") }

func (u *user) command(args ...string) *exec.Cmd {
	cmd := exec.Command(u.eddy, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+u.state, "KUBECONFIG="+filepath.Join(u.dir(), "cluster", "kubeconfig"))
	return cmd
}

// run runs eddy and returns its combined output, logged.
func (u *user) run(args ...string) (string, error) {
	u.t.Helper()
	start := time.Now()
	out, err := u.command(args...).CombinedOutput()
	u.t.Logf("$ eddy %s   (%s, err=%v)\n%s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), err, out)
	return string(out), err
}

func (u *user) must(args ...string) string {
	u.t.Helper()
	out, err := u.run(args...)
	if err != nil {
		u.t.Fatalf("eddy %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// fails runs eddy, expects a non-zero exit and returns the output.
func (u *user) fails(args ...string) string {
	u.t.Helper()
	out, err := u.run(args...)
	if err == nil {
		u.t.Fatalf("eddy %s succeeded; want a failure", strings.Join(args, " "))
	}
	return out
}

func (u *user) client() client.Client {
	u.t.Helper()
	s, err := dev.ReadState(u.dir())
	if err != nil {
		u.t.Fatal(err)
	}
	c, err := dev.ClientFor(s.Kubeconfig)
	if err != nil {
		u.t.Fatal(err)
	}
	return c
}

// kustomization returns a Kustomization as `eddy get ks NAME -o json` prints it.
func (u *user) kustomization(name string) *kustomizev1.Kustomization {
	u.t.Helper()
	k := &kustomizev1.Kustomization{}
	if err := json.Unmarshal([]byte(u.must("get", "ks", name, "-o", "json")), k); err != nil {
		u.t.Fatal(err)
	}
	return k
}

// examplesRepo copies examples/platform-config into a new Git repository
// (branch main, one commit "initial").
func examplesRepo(t *testing.T) string {
	t.Helper()
	root, _ := built(t)
	repo := filepath.Join(t.TempDir(), "platform-config")
	if err := os.CopyFS(repo, os.DirFS(filepath.Join(root, "examples", "platform-config"))); err != nil {
		t.Fatal(err)
	}
	return gitInit(t, repo)
}

// repoFrom copies testdata/repos/<name> into a new Git repository (branch main).
func repoFrom(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(testenv.TestdataDir(t), "repos", name))); err != nil {
		t.Fatal(err)
	}
	return gitInit(t, dir)
}

func gitInit(t *testing.T, dir string) string {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "--initial-branch=main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial"}} {
		if _, err := gitserver.Git(dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// inventoryLines returns a Kustomization's inventory in the format of
// expected-objects.txt (`<apiVersion> <Kind> <namespace>/<name>`), sorted.
func inventoryLines(k *kustomizev1.Kustomization) []string {
	var out []string
	if k.Status.Inventory == nil {
		return nil
	}
	for _, e := range k.Status.Inventory.Entries {
		parts := strings.Split(e.ID, "_")
		ns, name, group, kind := parts[0], parts[1], parts[2], parts[3]
		av := e.Version
		if group != "" {
			av = group + "/" + e.Version
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s", av, kind, ns, name))
	}
	sort.Strings(out)
	return out
}

// expectedLines reads an expected-objects.txt, sets the namespace of
// namespaced objects that have none to ns, and sorts it.
func expectedLines(t *testing.T, rel, ns string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.TestdataDir(t), "expected", rel))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if ns != "" && strings.Contains(l, " /") && !strings.Contains(l, " Namespace ") {
			l = strings.Replace(l, " /", " "+ns+"/", 1)
		}
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

func ready(k *kustomizev1.Kustomization) (string, string, string) {
	c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
	if c == nil {
		return "", "", ""
	}
	return string(c.Status), c.Reason, c.Message
}

// oneLineError checks a CLI failure is one line naming what to fix.
func oneLineError(t *testing.T, out string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "✗ ") {
		t.Errorf("want a one-line error, got:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("error %q does not mention %q", out, w)
		}
	}
}

// waitUntil polls cond until it holds; at timeout it fails with cond's last message.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < timeout {
		ok, msg := cond()
		if ok {
			t.Logf("%s after %s", what, time.Since(start).Round(100*time.Millisecond))
			return
		}
		last = msg
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last: %s)", what, timeout, last)
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

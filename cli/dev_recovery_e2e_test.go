package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/webhook"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The e2e tests of this file drive `eddy dev` where a user's repository
// or flags meet what eddy dev keeps for itself: controller flags, the
// names of its Secrets, the flux-system namespace. `eddy dev up` runs at a
// pseudo-terminal, where it draws its progress.

// substRepo is a Git repository whose Kustomization subst substitutes a
// variable that is not defined: with kustomize-controller's default
// (StrictPostBuildSubstitutions=true) it fails, without it the ConfigMap
// default/subst gets value "hello-".
func substRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "subst")
	files := map[string]string{
		"clusters/dev/subst.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: subst
  namespace: flux-system
spec:
  interval: 10m
  path: ./app
  prune: true
  targetNamespace: default
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      GREETING: hello
`,
		"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: subst\ndata:\n  value: ${GREETING}-${NOT_DEFINED}\n",
	}
	for rel, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return gitInit(t, dir)
}

// upAtTerminal runs `eddy dev up` with args at an 80-column terminal and
// checks it exits 0 with a clean screen; it returns the screen.
func (u *user) upAtTerminal(args ...string) string {
	u.t.Helper()
	r := u.startTTY(80, true, append([]string{"dev", "up"}, args...)...)
	return strings.Join(r.checkTerminal(5*time.Minute, true), "\n")
}

// TestTerminalDevUpControllerFlagsKeptAcrossDownUp: `eddy dev up
// --controller-flags kustomize-controller=--feature-gates=StrictPostBuildSubstitutions=false`
// gives kustomize-controller the flag (an undefined variable becomes "",
// where the default fails the Kustomization), `eddy dev status` shows it,
// and after `eddy dev down` a plain `eddy dev up` says it kept the flag and
// runs it with the flag again. A flag eddy dev sets itself, or one the controller does not take,
// is refused before anything starts, and other flags on the running
// environment say to run `eddy dev down` first.
func TestTerminalDevUpControllerFlagsKeptAcrossDownUp(t *testing.T) {
	u := newUser(t)
	repo := substRepo(t)
	oneLineError(t, u.fails("dev", "up", "--detach", "--controller-flags", "source-controller=--storage-path=/tmp/elsewhere"),
		"--controller-flags", "eddy dev sets --storage-path itself")
	// A flag the controller does not take: its own message, before anything starts.
	oneLineError(t, u.fails("dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev", "--controller-flags", "kustomize-controller=--no-such-flag"),
		"kustomize-controller refuses them", "flag provided but not defined: -no-such-flag")
	if s, err := dev.ReadState(u.dir()); err == nil {
		t.Fatalf("a refused --controller-flags started an environment: %+v", s)
	}

	const flag = "--feature-gates=StrictPostBuildSubstitutions=false"
	u.upAtTerminal("--detach", "--repo", repo, "--path", "./clusters/dev", "--controller-flags", "kustomize-controller="+flag)
	checkSubstituted := func() {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := u.client().Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "subst"}, cm); err != nil || cm.Data["value"] != "hello-" {
			t.Errorf("ConfigMap default/subst: %v (%v); want value hello- (the undefined variable substituted with nothing)", cm.Data, err)
		}
		state, err := dev.ReadState(u.dir())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range state.Controllers {
			cl, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "cmdline"))
			if has := strings.Contains(string(cl), flag); has != (p.Name == "kustomize-controller") {
				t.Errorf("%s (pid %d) runs with %s: %v", p.Name, p.PID, flag, has)
			}
		}
	}
	checkSubstituted()
	if status := u.must("dev", "status"); !strings.Contains(status, "flags:       kustomize-controller "+flag) {
		t.Errorf("dev status does not show kustomize-controller's flag")
	}
	oneLineError(t, u.fails("dev", "up", "--controller-flags", "kustomize-controller="), "--controller-flags", "eddy dev down")

	u.must("dev", "down")
	// The plain up says which flags it kept, and how to clear them.
	screen := u.upAtTerminal("--detach", "--repo", repo, "--path", "./clusters/dev")
	if want := "controller flags kept from an earlier `eddy dev up` (clear with --controller-flags kustomize-controller=): kustomize-controller " + flag; !strings.Contains(strings.ReplaceAll(screen, "\n", ""), want) { // wrapped at 80 columns
		t.Errorf("a plain eddy dev up does not say %q", want)
	}
	checkSubstituted()
}

// commitWithHook commits all changes of repo (allowing an empty commit)
// as a user does, so its post-commit hook runs, and returns what the
// commit printed.
func commitWithHook(t *testing.T, repo, msg string) string {
	t.Helper()
	if out, err := exec.Command("git", "-C", repo, "add", "-A").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	cmd := exec.Command("git", "commit", "-q", "--allow-empty", "-m", msg)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	t.Logf("$ git commit -m %q\n%s", msg, out)
	if err != nil {
		t.Fatalf("git commit: %v", err)
	}
	return string(out)
}

// TestTerminalDevHookUnaffectedByTheRepositorysWebhookToken: a repository
// that declares the Secret flux-system/webhook-token and a Receiver naming
// it, as Flux's documentation does, leaves eddy dev's own Receiver alone:
// the post-commit hook still gets 200. With eddy dev's token Secret
// deleted, the hook says in one line why it sent nothing and how to repair
// it, and `eddy dev up` on the running environment repairs it. The token
// never appears in what eddy prints.
func TestTerminalDevHookUnaffectedByTheRepositorysWebhookToken(t *testing.T) {
	u := newUser(t)
	repo := examplesRepo(t)
	const docsToken = "a-token-of-the-repository"
	if err := os.WriteFile(filepath.Join(repo, "clusters", "dev", "receiver-docs.yaml"), []byte(`apiVersion: v1
kind: Secret
metadata:
  name: webhook-token
  namespace: flux-system
stringData:
  token: `+docsToken+`
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata:
  name: docs
  namespace: flux-system
spec:
  type: github
  events: ["push"]
  secretRef:
    name: webhook-token
  resources:
    - kind: GitRepository
      name: flux-system
`), 0o644); err != nil {
		t.Fatal(err)
	}
	commitWithHook(t, repo, "a Receiver as Flux's documentation writes it")

	var printed []string
	printed = append(printed, u.upAtTerminal("--detach", "--repo", repo, "--path", "./clusters/dev", "--install-hook"))
	c := u.client()
	ctx := context.Background()
	receiverPath := func(name string) string {
		r := &notificationv1.Receiver{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: dev.Namespace, Name: name}, r); err != nil {
			return "error: " + err.Error()
		}
		return r.Status.WebhookPath
	}
	// notification-controller has read the repository's Secret.
	waitUntil(t, "Receiver docs uses the repository's webhook-token", time.Minute, func() (bool, string) {
		p := receiverPath("docs")
		return p == webhook.Path(docsToken, "docs", dev.Namespace), p
	})
	out := commitWithHook(t, repo, "sent through eddy dev's Receiver")
	printed = append(printed, out)
	if !strings.Contains(out, "sent to Receiver flux-system/"+dev.HookReceiver+": 200 OK") {
		t.Errorf("with the repository's webhook-token the hook printed %q; want a 200 from Receiver %s", out, dev.HookReceiver)
	}

	// Its own token Secret gone: the hook explains, up repairs.
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: dev.Namespace, Name: dev.WebhookSecret}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "Receiver "+dev.HookReceiver+" loses its path", time.Minute, func() (bool, string) {
		p := receiverPath(dev.HookReceiver)
		return p == "", p
	})
	out = commitWithHook(t, repo, "with the token Secret deleted")
	printed = append(printed, out)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, "commit not sent") ||
		!strings.Contains(out, dev.WebhookSecret) || !strings.Contains(out, "run `eddy dev up` to restore it") {
		t.Errorf("with its token Secret deleted the hook printed %q; want one line naming %s and the repair", out, dev.WebhookSecret)
	}
	printed = append(printed, u.upAtTerminal())
	waitUntil(t, "Receiver "+dev.HookReceiver+" has its path again", time.Minute, func() (bool, string) {
		p := receiverPath(dev.HookReceiver)
		return p != "" && !strings.HasPrefix(p, "error"), p
	})
	out = commitWithHook(t, repo, "after eddy dev up repaired it")
	printed = append(printed, out, u.must("dev", "status"))
	if !strings.Contains(out, ": 200 OK") {
		t.Errorf("after eddy dev up the hook printed %q; want a 200", out)
	}
	token, err := os.ReadFile(filepath.Join(u.dir(), "webhook-token"))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range printed {
		if strings.Contains(text, strings.TrimSpace(string(token))) || strings.Contains(text, docsToken) {
			t.Errorf("eddy printed a webhook token:\n%s", text)
		}
	}
}

// TestTerminalDevStatusReportsControllersWithoutFluxSystem: after the
// flux-system namespace is deleted (as a Kustomization does when the
// repository declared it and no longer does), the controllers cannot take
// their leases: they exit and are restarted, and `eddy dev status` fails,
// showing them not ready, their leases missing, why (the last line of
// their logs) and what to run. `eddy dev up` on the running environment
// re-creates the namespace and the sync, and the controllers become ready
// and take their leases again.
func TestTerminalDevStatusReportsControllersWithoutFluxSystem(t *testing.T) {
	u := newUser(t)
	repo := substRepo(t)
	u.upAtTerminal("--detach", "--repo", repo, "--path", "./app", "--target-namespace", "default")
	if err := u.client().Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dev.Namespace}}); err != nil {
		t.Fatal(err)
	}
	leaseMissing := regexp.MustCompile(`(?m)^kustomize-controller\s+\d+\s+(down|not ready|not leading)\s+\d+\s+missing\s`)
	seen := ""
	waitUntil(t, "eddy dev status reports the controllers without their leases", 2*time.Minute, func() (bool, string) {
		out, err := u.command("dev", "status").CombinedOutput()
		seen = string(out)
		return err != nil && leaseMissing.MatchString(seen) && strings.Contains(seen, "cannot create the lease flux-system/") &&
			strings.Contains(seen, "namespace flux-system is gone or being deleted") && strings.Contains(seen, "run `eddy dev up`"), seen
	})
	t.Logf("$ eddy dev status\n%s", seen)
	// The supervisor said so where a detached environment's progress goes.
	if sup := readFile(filepath.Join(u.dir(), "logs", "supervise.log")); !strings.Contains(sup,
		"kustomize-controller exited (exit status 1): manager stopped: leader election: cannot create the lease flux-system/kustomize-controller-leader-election") {
		t.Errorf("logs/supervise.log does not report kustomize-controller's exit and why:\n%s", sup)
	}
	if screen := u.upAtTerminal(); !strings.Contains(screen, "re-created namespace flux-system") {
		t.Errorf("eddy dev up on the environment without flux-system does not say it re-created it")
	}
	allReady := regexp.MustCompile(`(?m)^(source|kustomize|helm|notification|application)-controller\s+\d+\s+ready\s+\d+\s+held\s`)
	waitUntil(t, "every controller ready with its lease, the sync Ready", 3*time.Minute, func() (bool, string) {
		out, err := u.command("dev", "status").CombinedOutput()
		s := string(out)
		return err == nil && len(allReady.FindAllString(s, -1)) == len(dev.Controllers) && regexp.MustCompile(`kustomization/flux-system\s+\S+\s+False\s+True`).MatchString(s), s
	})
}

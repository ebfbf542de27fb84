package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/process"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDevE2E covers eddy dev on one detached environment, in order:
// bad --repo before start; podinfo ./kustomize up --detach, objects equal
// kustomize's, Deployment Available on a kwok node; check and version
// against the environment (checkDevInstalled); a commit applied by
// `reconcile ks --with-source`; get/events; a killed controller restarted
// (status shows it, helm-controller as the fourth process and
// application-controller as the fifth, with Argo CD's CRDs and namespace
// argocd); bad path
// and invalid manifests on the running environment;
// flux2-kustomize-helm-example-v2.6 ./clusters/staging (its HelmRepositories
// and HelmReleases applied and listed by get); check fails without the
// controllers' Deployments; down leaves no process or port.
func TestDevE2E(t *testing.T) {
	u := newUser(t)

	// Bad input before anything runs: one line, nothing started.
	oneLineError(t, u.fails("dev", "up", "--detach", "--repo", filepath.Join(t.TempDir(), "missing")), "--repo", "no such directory")
	if s, err := dev.ReadState(u.dir()); err == nil {
		t.Fatalf("a failed start left a state file: %+v", s)
	}

	podinfo := repoFrom(t, "podinfo")
	start := time.Now()
	out := u.must("dev", "up", "--detach", "--repo", podinfo, "--path", "./kustomize", "--target-namespace", "default")
	t.Logf("eddy dev up --detach: Ready in %s", time.Since(start).Round(100*time.Millisecond))
	state, err := dev.ReadState(u.dir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "export KUBECONFIG="+state.Kubeconfig) || !filepath.IsAbs(state.Kubeconfig) {
		t.Errorf("up did not print `export KUBECONFIG=<absolute path>` (%s)", state.Kubeconfig)
	}
	k := u.kustomization("flux-system")
	if st, reason, msg := ready(k); st != "True" {
		t.Fatalf("Kustomization flux-system not Ready: %s %s", reason, msg)
	}
	want := expectedLines(t, "podinfo/kustomize-build/kustomize/expected-objects.txt", "default")
	if got := inventoryLines(k); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("applied objects:\n%s\nwant (kustomize build, namespace default):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c := u.client()
	ctx := context.Background()
	waitUntil(t, "Deployment default/podinfo Available on a kwok node", 2*time.Minute, func() (bool, string) {
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "podinfo"}, dep); err != nil {
			return false, err.Error()
		}
		avail := false
		for _, cond := range dep.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
				avail = true
			}
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "podinfo"}); err != nil || len(pods.Items) == 0 {
			return false, "no pods"
		}
		for _, p := range pods.Items {
			node := &corev1.Node{}
			if p.Spec.NodeName == "" || c.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, node) != nil ||
				node.Annotations["kwok.x-k8s.io/node"] != "fake" || p.Status.Phase != corev1.PodRunning {
				return false, "pod " + p.Name + " not running on a kwok node"
			}
		}
		return avail && dep.Status.AvailableReplicas >= 1, fmt.Sprintf("available %d", dep.Status.AvailableReplicas)
	})

	// eddy dev looks installed to eddy check and eddy version (and flux check).
	checkDevInstalled(t, u)

	// A commit in the user's repository, applied by reconcile --with-source.
	extra := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-extra\ndata:\n  greeting: hello\n"
	if err := os.WriteFile(filepath.Join(podinfo, "kustomize", "extra.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	kz, _ := os.ReadFile(filepath.Join(podinfo, "kustomize", "kustomization.yaml"))
	kzs := strings.Replace(string(kz), "resources:\n", "resources:\n  - extra.yaml\n", 1)
	if kzs == string(kz) {
		t.Fatalf("no resources: list in podinfo's kustomize/kustomization.yaml:\n%s", kz)
	}
	if err := os.WriteFile(filepath.Join(podinfo, "kustomize", "kustomization.yaml"), []byte(kzs), 0o644); err != nil {
		t.Fatal(err)
	}
	// podinfo defines no Receiver: the hook sends to the one eddy dev made.
	if out := u.must("dev", "up", "--install-hook"); !strings.Contains(out, "Receiver flux-system/"+dev.HookReceiver) {
		t.Errorf("up --install-hook does not name the Receiver the hook sends to")
	}
	if _, err := gitserver.Git(podinfo, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	commit := exec.Command("git", "commit", "-q", "-m", "add a ConfigMap")
	commit.Dir = podinfo
	commit.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	hookOut, err := commit.CombinedOutput()
	if err != nil {
		t.Fatalf("git commit: %v\n%s", err, hookOut)
	}
	if !strings.Contains(string(hookOut), "sent to Receiver flux-system/"+dev.HookReceiver+": 200 OK") {
		t.Errorf("the hook in a repository without a Receiver: %q; want a 200 from Receiver flux-system/%s", hookOut, dev.HookReceiver)
	}
	head, _ := gitserver.Git(podinfo, "rev-parse", "HEAD")
	out = u.must("reconcile", "ks", "flux-system", "--with-source")
	if !strings.Contains(out, "applied revision main@sha1:"+head) {
		t.Errorf("reconcile did not print the applied revision main@sha1:%s", head)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "podinfo-extra"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the committed ConfigMap was not applied: %v", err)
	}
	if out := u.must("get", "sources", "git"); !strings.Contains(out, "main@sha1:"+head) || !strings.Contains(out, "NAME") {
		t.Errorf("get sources git does not show revision %s", head)
	}
	if out := u.must("get", "ks"); !strings.Contains(out, "REVISION") || !strings.Contains(out, "True") {
		t.Error("get ks does not show a Ready table")
	}
	if out := u.must("events", "--for", "Kustomization/flux-system"); !strings.Contains(out, "ConfigMap/default/podinfo-extra created") {
		t.Error("events do not show the ConfigMap's creation")
	}
	oneLineError(t, u.fails("get", "ks", "-o", "xml"), "--output")
	oneLineError(t, u.fails("reconcile", "ks", "missing"), "Kustomization missing not found")

	// A controller that dies is restarted, and status says so.
	for _, p := range state.Controllers {
		if p.Name == "kustomize-controller" {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitUntil(t, "kustomize-controller restarted and ready", time.Minute, func() (bool, string) {
		out, err := u.command("dev", "status").CombinedOutput()
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			if len(f) >= 4 && f[0] == "kustomize-controller" {
				return err == nil && f[2] == "ready" && f[3] == "1", l
			}
		}
		return false, string(out)
	})
	status := u.must("dev", "status")
	for _, name := range []string{"helm-controller", "application-controller"} {
		if !regexp.MustCompile(`(?m)^` + name + `\s+\d+\s+ready\s+0\s`).MatchString(status) {
			t.Errorf("dev status does not show %s ready, never restarted", name)
		}
	}
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "applications.argoproj.io"}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "appprojects.argoproj.io"}}} {
		if err := u.client().Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("eddy dev did not install %s: %v", obj.GetName(), err)
		}
	}

	// Bad input on the running environment: one line or Ready=False, and it keeps running.
	oneLineError(t, u.fails("dev", "up", "--repo", podinfo, "--path", "./missing"), "--path ./missing", "no such directory")
	oneLineError(t, u.fails("dev", "up", "--repo", filepath.Join(t.TempDir(), "missing")), "no such directory")
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "broken.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  key: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = u.fails("dev", "up", "--repo", gitInit(t, bad))
	k = u.kustomization("flux-system")
	if st, reason, msg := ready(k); st != "False" || reason != "BuildFailed" || !strings.Contains(msg, "broken.yaml") || !strings.Contains(msg, "line 5") {
		t.Errorf("invalid manifests: Ready %s %s %q; want False BuildFailed naming broken.yaml and the line", st, reason, msg)
	}
	if !strings.Contains(out, "fix the file named in the message") {
		t.Error("up does not say how to fix invalid manifests")
	}
	// status (and the post-commit hook) follow the re-pointed environment.
	if status := u.must("dev", "status"); !strings.Contains(status, "repository:  "+bad+" ") {
		t.Errorf("dev status after `up --repo %s` does not show that repository", bad)
	}

	// flux2-kustomize-helm-example-v2.6, ./clusters/staging: the root applies
	// its three Kustomizations; infra-controllers applies HelmRepositories and
	// HelmReleases (eddy dev installs their CRDs and runs helm-controller),
	// whose charts are on the internet, out of reach here: it never becomes
	// Ready (health checks of up to 5m), so up is given 40s and fails, and
	// infra-configs and apps wait for it. The Helm objects are listed by
	// `eddy get hr` and `eddy get sources helm`.
	out = u.fails("dev", "up", "--repo", repoFrom(t, "flux2-kustomize-helm-example-v2.6"), "--path", "./clusters/staging", "--timeout", "40s")
	root := u.kustomization("flux-system")
	if st, reason, msg := ready(root); st != "True" {
		t.Errorf("helm example: root not Ready: %s %s", reason, msg)
	}
	want = expectedLines(t, "flux2-kustomize-helm-example-v2.6/flux/staging/flux-system.flux-system/expected-objects.txt", "")
	if got := inventoryLines(root); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("helm example root objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(out, "no matches for kind") || strings.Contains(out, "no helm-controller") {
		t.Errorf("up on the helm example reports missing Helm kinds:\n%s", out)
	}
	if st, reason, msg := ready(u.kustomization("infra-controllers")); st == "True" || strings.Contains(msg, "no matches for kind") {
		t.Errorf("infra-controllers: Ready %s %s %q; want not Ready, for the charts out of reach, and no missing kind", st, reason, msg)
	}
	for _, name := range []string{"infra-configs", "apps"} {
		if st, reason, msg := ready(u.kustomization(name)); st != "False" || reason != "DependencyNotReady" {
			t.Errorf("%s: Ready %s %s %q; want False DependencyNotReady", name, st, reason, msg)
		}
	}
	waitUntil(t, "the example's HelmReleases and HelmRepositories applied and listed", time.Minute, func() (bool, string) {
		hrs, err := u.command("get", "hr", "-A").CombinedOutput()
		repos, err2 := u.command("get", "sources", "helm", "-A").CombinedOutput()
		ok := err == nil && err2 == nil
		for _, row := range []*regexp.Regexp{regexp.MustCompile(`(?m)^cert-manager\s+cert-manager\s`), regexp.MustCompile(`(?m)^ingress-nginx\s+ingress-nginx\s`)} {
			ok = ok && row.Match(hrs) && row.Match(repos)
		}
		return ok, string(hrs) + string(repos)
	})
	if _, err := os.Stat(filepath.Join(podinfo, ".git")); err != nil {
		t.Error("the user's repository lost its .git")
	}

	// A URL nothing answers: up fails on the GitRepository's fetch failure
	// (not at --timeout), and status no longer names a local repository.
	out = u.fails("dev", "up", "--repo", "http://127.0.0.1:1/nothing.git", "--timeout", "4m")
	if !strings.Contains(out, "cannot fetch the repository: GitOperationFailed") || strings.Contains(out, "timed out") {
		t.Errorf("up on an unreachable URL: want the fetch failure, got:\n%s", out)
	}
	if status := u.must("dev", "status"); strings.Contains(status, "repository:  ") {
		t.Errorf("dev status still names a local repository after `up --repo <URL>`:\n%s", status)
	}

	checkWithoutControllers(t, u)

	// down leaves nothing behind.
	state, err = dev.ReadState(u.dir())
	if err != nil {
		t.Fatal(err)
	}
	u.must("dev", "down")
	checkAllGone(t, state, u.dir())
	u.must("dev", "down") // idempotent
}

// TestDevForegroundCtrlC: `eddy dev up` in the foreground (the default
// example repository) runs until Ctrl-C, then tears everything down.
func TestDevForegroundCtrlC(t *testing.T) {
	u := newUser(t)
	// eddy bounds its own wait for the sync and then says what is not
	// Ready (its MESSAGE column); the test waits longer than that, so a slow
	// sync fails with eddy's account of it rather than a kill.
	const syncTimeout = 4 * time.Minute
	cmd := u.command("dev", "up", "--timeout", syncTimeout.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The cluster and the controllers' start (each bounded by a minute) come first.
	timeout := time.After(syncTimeout + 3*time.Minute)
	sawReady := false
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("eddy dev up exited early:\n%s", log.String())
			}
			log.WriteString(l + "\n")
			if strings.Contains(l, "Kustomization flux-system/apps: Applied revision") {
				sawReady = true
			}
			if strings.Contains(l, "press Ctrl-C") {
				break wait
			}
		case <-timeout:
			u.diagnose() // while the environment still runs
			_ = cmd.Process.Kill()
			t.Fatalf("eddy dev up did not come up in %s:\n%s", syncTimeout+3*time.Minute, log.String())
		}
	}
	t.Logf("foreground eddy dev up (example repository): Ready in %s", time.Since(start).Round(100*time.Millisecond))
	if !sawReady {
		t.Errorf("the example's Kustomization apps was not shown Ready:\n%s", log.String())
		u.diagnose() // before Ctrl-C stops the environment
	}
	state, err := dev.ReadState(u.dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Controllers) != len(dev.Controllers) {
		t.Errorf("state lists %d controllers, want %d", len(state.Controllers), len(dev.Controllers))
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// Stopping is bounded (SIGKILL after a grace period for each process).
	stopped := time.After(2 * time.Minute)
drain:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break drain
			}
			log.WriteString(l + "\n")
		case <-stopped:
			u.diagnose()
			_ = cmd.Process.Kill()
			t.Fatalf("eddy dev up did not exit within 2m of Ctrl-C:\n%s", log.String())
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("eddy dev up after Ctrl-C: %v", err)
	}
	t.Logf("output:\n%s", log.String())
	checkAllGone(t, state, u.dir())
}

// TestDevWebhookAlertsE2E: `eddy dev up --alerts-sink --install-hook` on a
// Git copy of examples/platform-config (its Provider, Alert and GitHub
// Receiver): a plain `git commit` is applied through the hook and the
// Receiver, with no `eddy reconcile`, and the sink prints the alerts of
// that revision. Secrets never appear in the output or the hook; with the
// environment down, a commit still succeeds and the hook says why it sent
// nothing.
func TestDevWebhookAlertsE2E(t *testing.T) {
	u := newUser(t)
	repo := examplesRepo(t)

	out := u.must("dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev", "--alerts-sink", "--install-hook")
	state, err := dev.ReadState(u.dir())
	if err != nil {
		t.Fatal(err)
	}
	if state.ReceiverURL == "" || state.AlertsSink == "" || state.NotificationAddr == "" {
		t.Fatalf("state has no receiver, sink or notification-controller address: %+v", state)
	}
	names := map[string]bool{}
	for _, p := range state.Controllers {
		names[p.Name] = true
	}
	if !names["notification-controller"] {
		t.Errorf("notification-controller is not a supervised process: %+v", state.Controllers)
	}
	if !strings.Contains(out, "Receiver flux-system/github (github): "+state.ReceiverURL+"/hook/") {
		t.Errorf("up does not print the Receiver's URL under %s", state.ReceiverURL)
	}
	status := u.must("dev", "status")
	for _, want := range []string{"receiver:    " + state.ReceiverURL, "alerts sink: " + state.AlertsSink, "hook:        ", "notification-controller"} {
		if !strings.Contains(status, want) {
			t.Errorf("dev status does not show %q", want)
		}
	}
	token, err := os.ReadFile(filepath.Join(u.dir(), "webhook-token"))
	if err != nil || len(strings.TrimSpace(string(token))) != 64 {
		t.Fatalf("webhook token in the state directory: %q %v", token, err)
	}
	tok := strings.TrimSpace(string(token))
	hook, err := os.ReadFile(filepath.Join(repo, ".git", "hooks", "post-commit"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hook), "dev hook post-commit") {
		t.Errorf("the hook does not run `eddy dev hook post-commit`:\n%s", hook)
	}

	c := u.client()
	ctx := context.Background()
	gitRepo := &sourcev1.GitRepository{}
	repoKey := types.NamespacedName{Namespace: dev.Namespace, Name: dev.SyncName}
	if err := c.Get(ctx, repoKey, gitRepo); err != nil {
		t.Fatal(err)
	}
	requestedBefore := gitRepo.Annotations[meta.ReconcileRequestAnnotation]

	// A plain commit: the hook sends it, nobody runs eddy reconcile.
	cm, err := os.ReadFile(filepath.Join(repo, "apps", "payment-api", "configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(cm), "CURRENCY: EUR", "CURRENCY: USD", 1)
	if changed == string(cm) {
		t.Fatal("the example's payment-config has no CURRENCY: EUR")
	}
	if err := os.WriteFile(filepath.Join(repo, "apps", "payment-api", "configmap.yaml"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	commit := func(msg string) string {
		t.Helper()
		cmd := exec.Command("git", "commit", "-q", "-a", "--allow-empty", "-m", msg)
		cmd.Dir = repo
		// No XDG_STATE_HOME: the hook finds the environment by the state directory written into it.
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		t.Logf("$ git commit -m %q\n%s", msg, out)
		if err != nil {
			t.Fatalf("git commit: %v", err)
		}
		return string(out)
	}
	start := time.Now()
	hookOut := commit("payment-api: currency USD")
	head, _ := gitserver.Git(repo, "rev-parse", "HEAD")
	rev := "main@sha1:" + head
	if !strings.Contains(hookOut, "sent to Receiver flux-system/"+dev.HookReceiver+": 200 OK") {
		t.Errorf("the hook did not report a 200 from the Receiver: %q", hookOut)
	}
	// That the Receiver caused the fetch is checked below (the request it
	// made, handled), not inferred from the time, so the wait is as long as a
	// loaded machine needs: apps waits for its objects' health, a HelmRelease's too.
	var appliedAfter time.Duration
	waitUntil(t, "Kustomization apps applies "+rev, 3*time.Minute, func() (bool, string) {
		k := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: dev.Namespace, Name: "apps"}, k); err != nil {
			return false, err.Error()
		}
		if k.Status.LastAppliedRevision == rev {
			appliedAfter = time.Since(start)
			return true, ""
		}
		return false, "at " + k.Status.LastAppliedRevision
	})
	t.Logf("commit → Kustomization apps applied %s: %.2fs, from the start of `git commit` (its hook included; polled every 250ms)",
		rev, appliedAfter.Seconds())
	cfg := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "production", Name: "payment-config"}, cfg); err != nil || cfg.Data["CURRENCY"] != "USD" {
		t.Errorf("payment-config CURRENCY %q (%v), want USD", cfg.Data["CURRENCY"], err)
	}
	if err := c.Get(ctx, repoKey, gitRepo); err != nil {
		t.Fatal(err)
	}
	requested := gitRepo.Annotations[meta.ReconcileRequestAnnotation]
	if requested == "" || requested == requestedBefore || gitRepo.Status.LastHandledReconcileAt != requested {
		t.Errorf("GitRepository: requestedAt %q (before %q), lastHandledReconcileAt %q: want a new request from the Receiver, handled",
			requested, requestedBefore, gitRepo.Status.LastHandledReconcileAt)
	}

	// The sink printed the alerts of that revision, one line each.
	alertsLog := filepath.Join(u.dir(), "logs", "alerts.log")
	want := "alert info Kustomization/flux-system/apps " + rev + ": ConfigMap/production/payment-config configured"
	waitUntil(t, "the sink prints the alert of "+rev, 2*time.Minute, func() (bool, string) {
		data, _ := os.ReadFile(alertsLog)
		sup, _ := os.ReadFile(filepath.Join(u.dir(), "logs", "supervise.log"))
		return strings.Contains(string(data), want) && strings.Contains(string(sup), want), process.TailFile(alertsLog, 3)
	})
	events, _ := os.ReadFile(filepath.Join(u.dir(), "logs", "events.log"))
	if !strings.Contains(string(events), head) {
		t.Error("logs/events.log does not record the events of the new revision")
	}

	// No secret in what eddy printed or wrote outside the state directory's token file.
	for name, text := range map[string]string{"up": out, "status": status, "hook": string(hook), "hook output": hookOut,
		"supervise.log":               readFile(filepath.Join(u.dir(), "logs", "supervise.log")),
		"notification-controller.log": readFile(filepath.Join(u.dir(), "logs", "notification-controller.log"))} {
		if strings.Contains(text, tok) {
			t.Errorf("%s contains the webhook token", name)
		}
	}

	u.must("dev", "down")
	checkAllGone(t, state, u.dir())
	// With the environment down, a commit succeeds and the hook says one line.
	if out := commit("while down"); strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "no environment running") {
		t.Errorf("commit with the environment down: %q; want one line saying nothing runs", out)
	}
}

// TestDevUpWhileAnotherStarts: a second `eddy dev up --detach` while the
// first one holds the state directory's lock says "already running" and
// leaves the first one's logs/supervise.log and supervise.err alone.
func TestDevUpWhileAnotherStarts(t *testing.T) {
	u := newUser(t)
	logs := filepath.Join(u.dir(), "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := dev.Lock(u.dir()) // the first `up`
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	files := map[string]string{"supervise.log": "the first up's log\n", "supervise.err": "the first up's error\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(logs, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	oneLineError(t, u.fails("dev", "up", "--detach"), "already running")
	for name, text := range files {
		if got := readFile(filepath.Join(logs, name)); got != text {
			t.Errorf("logs/%s is now %q, want %q", name, got, text)
		}
	}
}

// TestDevDownWithUnreadableState: with state.json corrupt, `dev status`
// says in one line to run `dev down`, and `dev down` stops the process that
// holds the state directory's lock and removes the state.
func TestDevDownWithUnreadableState(t *testing.T) {
	u := newUser(t)
	if err := os.MkdirAll(u.dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := dev.Lock(u.dir())
	if err != nil {
		t.Fatal(err)
	}
	// An owner that looks like `eddy dev supervise` and holds the lock.
	// sleep does not inherit the lock, and ends with its shell.
	owner := exec.Command("sh", "-c", "trap 'kill $!; exit 0' TERM; sleep 120 3>&- & wait", "sh", "dev", "supervise")
	owner.ExtraFiles = []*os.File{lock}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	exited := make(chan struct{})
	go func() { _ = owner.Wait(); close(exited) }()
	defer func() { _ = owner.Process.Kill() }()
	if err := os.WriteFile(filepath.Join(u.dir(), "state.json"), []byte(`{"pid": 12`), 0o600); err != nil {
		t.Fatal(err)
	}
	oneLineError(t, u.fails("dev", "status"), "state.json", "eddy dev down")
	u.must("dev", "down")
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("dev down did not stop the process holding the lock")
	}
	if _, err := os.Stat(filepath.Join(u.dir(), "state.json")); !os.IsNotExist(err) {
		t.Errorf("state.json left behind (%v)", err)
	}
	if l, err := dev.Lock(u.dir()); err != nil {
		t.Errorf("the lock is still held after down: %v", err)
	} else {
		l.Close()
	}
}

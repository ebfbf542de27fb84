package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
)

// The lines of docs/ that TestFluxCLIE2E's environment (eddy dev up on a
// Git copy of examples/platform-config, ./clusters/dev) lets the built eddy
// run as written.

// on is u reporting to t (a subtest): the same user and environment.
func (u *user) on(t *testing.T) *user {
	v := *u
	v.t = t
	return &v
}

// helmReleaseLines runs docs/helm-controller.md's block: reconcile the sync
// Kustomization, list the HelmReleases, reconcile storefront with its
// source, and show its events.
func helmReleaseLines(t *testing.T, u *user) {
	if out := u.must("reconcile", "ks", "flux-system", "--with-source"); !regexp.MustCompile(`✔ applied revision main@sha1:[0-9a-f]{40}`).MatchString(out) {
		t.Errorf("eddy reconcile ks flux-system --with-source does not print the applied revision:\n%s", out)
	}
	if row := regexp.MustCompile(`(?m)^flux-system\s+storefront\s+1\.0\.0\s+False\s+True\s+Helm install succeeded`); !row.MatchString(u.must("get", "hr", "-A")) {
		t.Error("eddy get hr -A has no Ready row for storefront at 1.0.0")
	}
	out := u.must("reconcile", "hr", "storefront", "--with-source")
	if !strings.Contains(out, "► annotating HelmChart flux-system-storefront in flux-system namespace") || !strings.Contains(out, "✔ applied revision 1.0.0") {
		t.Errorf("eddy reconcile hr storefront --with-source: want the HelmChart first and the applied revision:\n%s", out)
	}
	out = u.must("events", "--for", "HelmRelease/storefront")
	if !regexp.MustCompile(`(?m)\bNormal\s+InstallSucceeded\s+HelmRelease/storefront\s`).MatchString(out) {
		t.Errorf("eddy events --for HelmRelease/storefront has no InstallSucceeded event:\n%s", out)
	}
}

// applicationFromLinkedCheckout runs docs/application-controller.md's
// lines on eddy dev's fifth process: a checkout linked into the state
// directory's git/ (a local repository stands for the cloned
// argocd-example-apps, which is on GitHub), the server's address read from
// `eddy dev status | grep 'served at'`, an Application applied with
// `kubectl apply -f my-app.yaml`, then `kubectl get applications -n argocd`
// and `eddy get apps` showing it Synced and Healthy, and `eddy app get`.
func applicationFromLinkedCheckout(t *testing.T, u *user) {
	checkout := filepath.Join(t.TempDir(), "example-apps")
	if err := os.MkdirAll(filepath.Join(checkout, "guestbook"), 0o755); err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook-config\ndata:\n  greeting: hello\n"
	if err := os.WriteFile(filepath.Join(checkout, "guestbook", "configmap.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	gitInit(t, checkout)
	if err := os.Symlink(checkout, filepath.Join(u.dir(), "git", "example-apps")); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\(served at (http://127\.0\.0\.1:\d+)/?[^)]*\)`).FindStringSubmatch(u.must("dev", "status"))
	if m == nil {
		t.Fatal("eddy dev status prints no `served at` address")
	}
	app := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: guestbook\n  namespace: argocd\nspec:\n" +
		"  project: default\n  source:\n    repoURL: " + m[1] + "/example-apps\n    targetRevision: HEAD\n    path: guestbook\n" +
		"  destination:\n    server: https://kubernetes.default.svc\n    namespace: default\n  syncPolicy:\n    automated: {}\n"
	file := filepath.Join(t.TempDir(), "my-app.yaml")
	if err := os.WriteFile(file, []byte(app), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl, err := localcluster.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(kubectl, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(u.dir(), "cluster", "kubeconfig"), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("apply", "-f", file); strings.TrimSpace(out) != "application.argoproj.io/guestbook created" {
		t.Errorf("kubectl apply -f my-app.yaml printed %q", out)
	}
	row := regexp.MustCompile(`(?m)^guestbook\s+Synced\s+Healthy\s*$`)
	waitUntil(t, "kubectl get applications -n argocd shows guestbook Synced and Healthy", 2*time.Minute, func() (bool, string) {
		out := run("get", "applications", "-n", "argocd")
		return row.MatchString(out), out
	})
	out := u.must("get", "apps")
	if !regexp.MustCompile(`(?m)^guestbook\s+https://kubernetes\.default\.svc\s+default\s+default\s+Synced\s+Healthy\s+Auto\b`).MatchString(out) {
		t.Errorf("eddy get apps has no Synced, Healthy, Auto row for guestbook:\n%s", out)
	}
	if out := u.must("app", "get", "guestbook"); !strings.Contains(out, "ConfigMap") || !strings.Contains(out, "guestbook-config") {
		t.Errorf("eddy app get guestbook does not list the ConfigMap:\n%s", out)
	}
	if got := run("get", "configmap", "guestbook-config", "-n", "default", "-o", "jsonpath={.data.greeting}"); got != "hello" {
		t.Errorf("the Application's ConfigMap has greeting %q, want hello", got)
	}
}

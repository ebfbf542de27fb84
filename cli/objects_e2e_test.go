package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	pkgartifact "github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// runIn runs eddy with stdin, returning its combined output and exit error.
func (u *user) runIn(stdin string, args ...string) (string, error) {
	u.t.Helper()
	cmd := u.command(args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	u.t.Logf("$ echo %q | eddy %s   (err=%v)\n%s", stdin, strings.Join(args, " "), err, out)
	return string(out), err
}

// hasLines fails t unless out holds each of want as a whole line, in order.
func hasLines(t *testing.T, out string, want ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, l := range lines {
		if i < len(want) && strings.TrimRight(l, " ") == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("output lacks the line %q (lines in order: %q):\n%s", want[i], want, out)
	}
}

// commitFiles writes files (path in the repository → content) in the
// repository dir and commits them; it returns the new HEAD.
func commitFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for rel, content := range files {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gitserver.Git(dir, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "commit", "-q", "-m", "a change")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	head, err := gitserver.Git(dir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(head)
}

// TestObjectsE2E drives the day-2 verbs of bin/eddy (create, export,
// suspend, resume, delete, get all/alerts/alert-providers/receivers)
// against one eddy dev environment, and --export and bad input without a
// cluster.
func TestObjectsE2E(t *testing.T) {
	u := newUser(t)

	t.Run("export without a cluster", func(t *testing.T) {
		out := u.must("create", "ks", "apps", "--source=GitRepository/podinfo", "--path=./kustomize/../kustomize",
			"--prune", "--interval=5m", "--depends-on=infra,other/db", "--target-namespace=objects", "--label=team=a", "--export")
		want := "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  labels:\n    team: a\n" +
			"  name: apps\n  namespace: flux-system\nspec:\n  dependsOn:\n  - name: infra\n  - name: db\n    namespace: other\n" +
			"  interval: 5m0s\n  path: ./kustomize\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: podinfo\n" +
			"  targetNamespace: objects\n"
		if out != want {
			t.Errorf("create ks --export:\n%s\nwant:\n%s", out, want)
		}
		values := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(values, []byte("replicaCount: 2\nui:\n  color: blue\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out = u.must("create", "hr", "podinfo", "-n", "apps", "--source=HelmRepository/podinfo.flux-system", "--chart=podinfo",
			"--chart-version=>6.0.0", "--values="+values, "--target-namespace=web", "--export")
		for _, w := range []string{"kind: HelmRelease", "namespace: apps", "      version: '>6.0.0'", "    namespace: flux-system",
			"  storageNamespace: web", "  values:\n    replicaCount: 2\n    ui:\n      color: blue"} {
			if !strings.Contains(out, w) {
				t.Errorf("create hr --export lacks %q:\n%s", w, out)
			}
		}
		out = u.must("create", "source", "helm", "charts", "--url=oci://ghcr.io/stefanprodan/charts", "--interval=10m", "--export")
		if want := "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\n" +
			"spec:\n  interval: 10m0s\n  type: oci\n  url: oci://ghcr.io/stefanprodan/charts\n"; out != want {
			t.Errorf("create source helm --export:\n%s\nwant:\n%s", out, want)
		}
		out = u.must("create", "source", "oci", "manifests", "--url=oci://registry.example/app", "--tag-semver=>=1.0.0",
			"--secret-ref=regcred", "--cert-ref=ca", "--insecure", "--ignore-paths=docs/,*.md", "--provider=aws", "--interval=10m", "--export")
		if want := "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: manifests\n  namespace: flux-system\n" +
			"spec:\n  certSecretRef:\n    name: ca\n  ignore: |-\n    docs/\n    *.md\n  insecure: true\n  interval: 10m0s\n  provider: aws\n" +
			"  ref:\n    semver: '>=1.0.0'\n  secretRef:\n    name: regcred\n  url: oci://registry.example/app\n"; out != want {
			t.Errorf("create source oci --export:\n%s\nwant:\n%s", out, want)
		}
		if out := u.must("create", "ks", "secrets", "--source=flux-system", "--path=./secrets", "--decryption-provider=sops", "--decryption-secret=sops-age", "--export"); !strings.Contains(out, "  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n") {
			t.Errorf("create ks --decryption-provider --decryption-secret:\n%s", out)
		}
		if out := u.must("create", "ks", "apps", "--source=ocirepository/manifests", "--export"); !strings.Contains(out, "  sourceRef:\n    kind: OCIRepository\n    name: manifests\n") {
			t.Errorf("create ks --source=ocirepository/…: want kind OCIRepository:\n%s", out)
		}
		out = u.must("create", "receiver", "gh", "--type=github", "--event=push", "--resource=GitRepository/podinfo", "--secret-ref=tok", "--export")
		if !strings.HasPrefix(out, "---\napiVersion: notification.toolkit.fluxcd.io/v1\nkind: Receiver\n") || strings.Contains(out, "status") {
			t.Errorf("create receiver --export:\n%s", out)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		oneLineError(t, u.fails("suspend", "widget", "x"), `unknown kind "widget"`, "kustomization")
		oneLineError(t, u.fails("export", "source", "widget", "x"), `unknown kind "widget"`, "git")
		oneLineError(t, u.fails("resume", "ks"), "kustomization name is required")
		oneLineError(t, u.fails("delete", "source", "git"), "source git name is required")
		oneLineError(t, u.fails("export", "alert"), "name is required")
		oneLineError(t, u.fails("create", "ks", "apps", "--export"), "source is required")
		oneLineError(t, u.fails("create", "ks", "apps", "--source=x", "--decryption-provider=vault", "--export"), "unsupported decryption provider 'vault', must be one of: sops")
		oneLineError(t, u.fails("create", "ks", "Apps", "--source=x", "--export"), "name 'Apps' is invalid")
		oneLineError(t, u.fails("create", "source", "git", "x1", "--url=ftp://h/r", "--branch=main", "--export"), "scheme 'ftp' not supported")
		oneLineError(t, u.fails("create", "source", "oci", "o1", "--url=oci://r.example/a", "--export"), "--tag, --tag-semver or --digest is required")
		oneLineError(t, u.fails("create", "source", "oci", "o1", "--tag=1", "--export"), "url is required")
		oneLineError(t, u.fails("create", "source", "oci", "o1", "--url=oci://r.example/a", "--tag=1", "--provider=ibm", "--export"),
			"source OCI provider 'ibm' is not supported, must be one of: generic, aws, azure, gcp")
		oneLineError(t, u.fails("create", "ks", "k1", "--source=ExternalArtifact/b", "--export"), "source kind 'ExternalArtifact' is not supported, must be one of: OCIRepository, GitRepository, Bucket")
		oneLineError(t, u.fails("create", "receiver", "r1", "--type=svn", "--secret-ref=s", "--export"), "receiver type 'svn' is not supported")
		oneLineError(t, u.fails("create", "hr", "h1", "--source=HelmRepository/x", "--chart=c", "--values=/nonexistent/values.yaml", "--export"),
			"reading values from /nonexistent/values.yaml failed")
	})

	podinfo := repoFrom(t, "podinfo")
	u.must("dev", "up", "--detach", "--repo", podinfo, "--path", "./kustomize", "--target-namespace", "default")
	c := u.client()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "objects"}}); err != nil {
		t.Fatal(err)
	}
	var devRepo struct {
		Spec struct {
			URL string `json:"url"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(u.must("export", "source", "git", "flux-system")), &devRepo); err != nil || devRepo.Spec.URL == "" {
		t.Fatalf("export source git flux-system: no spec.url (%v)", err)
	}
	head, _ := gitserver.Git(podinfo, "rev-parse", "HEAD")
	head = strings.TrimSpace(head)

	t.Run("create", func(t *testing.T) {
		out := u.must("create", "source", "git", "podinfo", "--url="+devRepo.Spec.URL, "--branch=main")
		hasLines(t, out, "✚ generating GitRepository source", "► applying GitRepository source", "✔ GitRepository source created",
			"◎ waiting for GitRepository source reconciliation", "✔ GitRepository source reconciliation completed",
			"✔ fetched revision: main@sha1:"+head)
		args := []string{"create", "ks", "apps", "--source=GitRepository/podinfo", "--path=./kustomize", "--prune", "--target-namespace=objects"}
		out = u.must(args...)
		hasLines(t, out, "✚ generating Kustomization", "► applying Kustomization", "✔ Kustomization created",
			"◎ waiting for Kustomization reconciliation", "✔ Kustomization apps is ready", "✔ applied revision main@sha1:"+head)
		if err := c.Get(ctx, types.NamespacedName{Namespace: "objects", Name: "podinfo"}, &corev1.Service{}); err != nil {
			t.Errorf("the Kustomization did not apply podinfo's Service: %v", err)
		}
		// Again: an update, and the export equals what create would write.
		hasLines(t, u.must(args...), "✔ Kustomization updated", "✔ Kustomization apps is ready")
		if exp, want := u.must("export", "ks", "apps"), u.must(append(args, "--export")...); exp != want {
			t.Errorf("export ks apps:\n%s\nwant what create --export prints:\n%s", exp, want)
		}

		// A path the source lacks: flux waits (Ready=False is retried) until
		// --timeout, then says what the controller last reported.
		out = u.fails("create", "ks", "broken", "--source=GitRepository/podinfo", "--path=./missing", "--timeout=10s")
		if !regexp.MustCompile(`(?m)^✗ timed out waiting for Kustomization reconciliation: last status: \w+: .*missing`).MatchString(out) {
			t.Errorf("create ks with a missing path: want the timeout with the last Ready reason naming the path:\n%s", out)
		}
		u.must("delete", "ks", "broken", "--silent")

		out = u.must("create", "alert-provider", "hook", "--type=generic", "--address=http://127.0.0.1:9/hook")
		hasLines(t, out, "✚ generating Provider", "► applying Provider", "✔ Provider created",
			"◎ waiting for Provider reconciliation", "✔ Provider hook is ready")
		u.must("create", "alert", "apps", "--provider-ref=hook", "--event-source=Kustomization/apps,GitRepository/*", "--event-severity=info")
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "objects-token"},
			StringData: map[string]string{"token": "s3cret"}}); err != nil {
			t.Fatal(err)
		}
		out = u.must("create", "receiver", "gh", "--type=generic", "--resource=GitRepository/podinfo", "--secret-ref=objects-token")
		if !regexp.MustCompile(`(?m)^✔ generated webhook URL /hook/[0-9a-f]{64}$`).MatchString(out) {
			t.Errorf("create receiver does not print the webhook path:\n%s", out)
		}
	})

	t.Run("export round trip", func(t *testing.T) {
		before := u.must("export", "alert", "apps")
		if strings.Contains(before, "status") || strings.Contains(before, "managedFields") || strings.Contains(before, "uid:") {
			t.Errorf("export alert apps is not clean:\n%s", before)
		}
		out, err := u.runIn("n\n", "delete", "alert", "apps")
		if err == nil || !strings.Contains(out, "Are you sure you want to delete this alert? [y/N]") || !strings.Contains(out, "✗ aborting") {
			t.Errorf("delete answered n: want the question and ✗ aborting, exit 1 (err=%v)", err)
		}
		out, err = u.runIn("y\n", "delete", "alert", "apps")
		if err != nil {
			t.Fatalf("delete answered y: %v", err)
		}
		hasLines(t, out, "► deleting alert apps in flux-system namespace", "✔ alert deleted")
		oneLineError(t, u.fails("export", "alert", "apps"), "Alert apps not found in namespace flux-system")
		alert := &notificationv1.Alert{}
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(before, "---\n")), alert); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, alert); err != nil {
			t.Fatalf("applying the exported Alert: %v", err)
		}
		if after := u.must("export", "alert", "apps"); after != before {
			t.Errorf("export after re-creating from the export:\n%s\nwant:\n%s", after, before)
		}
		// The credentials Secret only with --with-credentials, as flux.
		authed := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "authed"},
			Spec: sourcev1.GitRepositorySpec{URL: devRepo.Spec.URL, Interval: metav1.Duration{Duration: time.Hour}, Suspend: true,
				SecretRef: &meta.LocalObjectReference{Name: "objects-token"}}}
		if err := c.Create(ctx, authed); err != nil {
			t.Fatal(err)
		}
		if out := u.must("export", "source", "git", "authed"); strings.Count(out, "---\n") != 1 || strings.Contains(out, "kind: Secret") {
			t.Errorf("export source git without --with-credentials exported more than the GitRepository:\n%s", out)
		}
		out = u.must("export", "source", "git", "authed", "--with-credentials")
		if want := "---\napiVersion: v1\ndata:\n  token: czNjcmV0\nkind: Secret\nmetadata:\n  name: objects-token\n  namespace: flux-system\ntype: Opaque\n"; !strings.HasSuffix(out, want) {
			t.Errorf("export source git --with-credentials does not end with the Secret:\n%s\nwant:\n%s", out, want)
		}
		u.must("delete", "source", "git", "authed", "--silent")
		all := u.must("export", "source", "git", "--all")
		if strings.Count(all, "---\n") != 2 || !strings.Contains(all, "  name: flux-system\n") || !strings.Contains(all, "  name: podinfo\n") {
			t.Errorf("export source git --all: want two documents:\n%s", all)
		}
	})

	t.Run("get", func(t *testing.T) {
		out := u.must("get", "all")
		for _, re := range []string{`(?m)^NAME\s+REVISION\s+SUSPENDED\s+READY\s+MESSAGE$`, `(?m)^gitrepository/podinfo\s+main@sha1:` + head + `\s+False\s+True\s`,
			`(?m)^kustomization/apps\s+main@sha1:` + head + `\s+False\s+True\s`, `(?m)^receiver/gh\s+False\s+True\s`,
			`(?m)^provider/hook\s+True\s+Provider is Ready$`, `(?m)^alert/apps\s+False\s+True\s+Alert is Ready$`} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("get all does not match %s", re)
			}
		}
		if strings.Contains(out, "helmrelease/") || strings.Contains(out, "helmchart/") {
			t.Error("get all shows a table for a kind without objects")
		}
		if out := u.must("get", "all", "-A"); !regexp.MustCompile(`(?m)^flux-system\s+kustomization/apps\s`).MatchString(out) {
			t.Error("get all -A has no NAMESPACE column")
		}
		if out := u.must("get", "alert-providers"); !regexp.MustCompile(`(?m)^NAME\s+READY\s+MESSAGE\n` + `hook\s+True\s+Provider is Ready$`).MatchString(out) {
			t.Error("get alert-providers: want flux's NAME READY MESSAGE table")
		}
		if out := u.must("get", "receivers"); !regexp.MustCompile(`(?m)^gh\s+False\s+True\s+Receiver initialized for path: /hook/`).MatchString(out) {
			t.Error("get receivers: want gh Ready")
		}
		if out := u.must("get", "alerts", "apps"); !strings.Contains(out, "Alert is Ready") {
			t.Error("get alerts apps: want the Alert")
		}
	})

	t.Run("suspend and resume", func(t *testing.T) {
		hasLines(t, u.must("suspend", "ks", "apps"), "► suspending kustomization apps in flux-system namespace", "✔ kustomization suspended")
		if out := u.must("get", "ks", "apps"); !regexp.MustCompile(`(?m)^apps\s+main@sha1:` + head + `\s+True\s+True\s`).MatchString(out) {
			t.Error("get ks apps does not show SUSPENDED True")
		}
		suspended := u.kustomization("apps")
		// A new commit: the source fetches it, and flux-system (a witness
		// on the same repository) applies it; the suspended apps does not move.
		kz, _ := os.ReadFile(filepath.Join(podinfo, "kustomize", "kustomization.yaml"))
		newHead := commitFiles(t, podinfo, map[string]string{
			"kustomize/kustomization.yaml": strings.Replace(string(kz), "resources:\n", "resources:\n  - moved.yaml\n", 1),
			"kustomize/moved.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moved\n",
		})
		if out := u.must("reconcile", "source", "git", "podinfo"); !strings.Contains(out, "fetched revision main@sha1:"+newHead) {
			t.Fatalf("the source did not fetch %s", newHead)
		}
		u.must("reconcile", "ks", "flux-system", "--with-source")
		now := u.kustomization("apps")
		_, _, msg := ready(now)
		if now.Status.LastAttemptedRevision != suspended.Status.LastAttemptedRevision || now.Status.ObservedGeneration != suspended.Status.ObservedGeneration {
			t.Errorf("suspended Kustomization moved: attempted %s → %s, observed generation %d → %d (%s)", suspended.Status.LastAttemptedRevision,
				now.Status.LastAttemptedRevision, suspended.Status.ObservedGeneration, now.Status.ObservedGeneration, msg)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "objects", Name: "moved"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("the suspended Kustomization applied the new commit (%v)", err)
		}

		out := u.must("resume", "ks", "apps")
		hasLines(t, out, "► resuming kustomization apps in flux-system namespace", "✔ kustomization resumed",
			"◎ waiting for Kustomization reconciliation", "✔ Kustomization apps reconciliation completed", "✔ applied revision main@sha1:"+newHead)
		if err := c.Get(ctx, types.NamespacedName{Namespace: "objects", Name: "moved"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("the resumed Kustomization did not apply the new commit's ConfigMap: %v", err)
		}

		// --all, and a name that is not there: flux reports it and exits 0.
		hasLines(t, u.must("suspend", "alert", "--all"), "► suspending alert apps in flux-system namespace", "✔ alert suspended")
		out = u.must("resume", "alert", "--all")
		hasLines(t, out, "► resuming alert apps in flux-system namespace", "✔ alert resumed")
		if strings.Contains(out, "waiting") {
			t.Error("resume --all waited without --wait")
		}
		if out := u.must("suspend", "ks", "missing"); strings.TrimSpace(out) != "✗ Kustomization missing not found in flux-system namespace" {
			t.Errorf("suspend ks missing: %q", out)
		}
		if out := u.must("resume", "receiver", "missing"); strings.TrimSpace(out) != "✗ Receiver object 'missing' not found in flux-system namespace" {
			t.Errorf("resume receiver missing: %q", out)
		}
	})

	t.Run("resume at a terminal", func(t *testing.T) {
		u.must("suspend", "source", "git", "podinfo")
		r := u.startTTY(100, false, "resume", "source", "git", "podinfo")
		lines := r.checkTerminal(2*time.Minute, false)
		hasLines(t, strings.Join(lines, "\n"), "► resuming source git podinfo in flux-system namespace", "✔ source git resumed",
			"✔ GitRepository podinfo reconciliation completed")
		// create waits with the same spinner: at a terminal too.
		r = u.startTTY(100, false, "create", "source", "git", "podinfo", "--url="+devRepo.Spec.URL, "--branch=main")
		lines = r.checkTerminal(2*time.Minute, false)
		hasLines(t, strings.Join(lines, "\n"), "► applying GitRepository source", "✔ GitRepository source updated",
			"✔ GitRepository source reconciliation completed")
	})

	// The OCIRepository verbs, on an OCIRepository kept suspended so that its
	// status is the test's: an artifact served here, which the built
	// kustomize-controller applies. (Waiting for source-controller's own
	// OCIRepository reconciles is source-controller's tests' part.)
	t.Run("oci source", func(t *testing.T) {
		archive := artifacttest.TarGz(t, artifacttest.Entry{Name: "cm.yaml", Type: tar.TypeReg,
			Content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-oci, namespace: objects}\ndata: {a: \"1\"}\n"})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(archive) }))
		defer srv.Close()
		repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "manifests"},
			Spec: sourcev1.OCIRepositorySpec{URL: "oci://registry.example/manifests", Interval: &metav1.Duration{Duration: 10 * time.Minute},
				Reference: &sourcev1.OCIRepositoryRef{Tag: "1.0.0"}, Suspend: true, SecretRef: &meta.LocalObjectReference{Name: "objects-token"}}}
		if err := c.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
		sum := fmt.Sprintf("sha256:%x", sha256.Sum256(archive))
		rev := "1.0.0@" + sum
		status := sourcev1.OCIRepositoryStatus{ObservedGeneration: repo.Generation, URL: srv.URL + "/latest.tar.gz",
			// Signed with the cluster's key as source-controller would:
			// this server stands in for source-controller's.
			Artifact: artifacttest.SignInCluster(t, c, "flux-system", pkgartifact.Owner{Kind: sourcev1.OCIRepositoryKind, Namespace: "flux-system", Name: "manifests"},
				&meta.Artifact{Path: "ocirepository/flux-system/manifests/x.tar.gz", URL: srv.URL + "/x.tar.gz", Revision: rev,
					Digest: sum, LastUpdateTime: metav1.Now()}),
			Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
				Message: "stored artifact for digest '" + rev + "'", ObservedGeneration: repo.Generation, LastTransitionTime: metav1.Now()}}}
		// source-controller adds its finalizer to the suspended object
		// meanwhile: write the status on the latest version.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(repo), repo); err != nil {
				return err
			}
			repo.Status = status
			return c.Status().Update(ctx, repo)
		}); err != nil {
			t.Fatal(err)
		}

		row := `(?m)^ocirepository/manifests\s+` + regexp.QuoteMeta(rev) + `\s+True\s+True\s+stored artifact`
		if out := u.must("get", "sources", "oci"); !regexp.MustCompile(`(?m)^NAME\s+REVISION\s+SUSPENDED\s+READY\s+MESSAGE\n` +
			`manifests\s+` + regexp.QuoteMeta(rev) + `\s+True\s+True\s+stored artifact`).MatchString(out) {
			t.Error("get sources oci: want flux's NAME REVISION SUSPENDED READY MESSAGE table with manifests")
		}
		if out := u.must("get", "sources", "all"); !regexp.MustCompile(row + `(?s).*\ngitrepository/podinfo\s`).MatchString(out) {
			t.Error("get sources all: want ocirepository/manifests, before the GitRepositories as in flux")
		}
		if out := u.must("get", "all", "-A"); !regexp.MustCompile(`(?m)^flux-system\s+ocirepository/manifests\s`).MatchString(out) {
			t.Error("get all -A: want ocirepository/manifests")
		}
		exp := u.must("export", "source", "oci", "manifests")
		if want := "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: manifests\n  namespace: flux-system\n" +
			"spec:\n  interval: 10m0s\n  ref:\n    tag: 1.0.0\n  secretRef:\n    name: objects-token\n  suspend: true\n" +
			"  url: oci://registry.example/manifests\n"; exp != want {
			t.Errorf("export source oci:\n%s\nwant:\n%s", exp, want)
		}
		if out := u.must("export", "source", "oci", "manifests", "--with-credentials"); !strings.HasPrefix(out, exp) || !strings.Contains(out, "kind: Secret\nmetadata:\n  name: objects-token\n") {
			t.Errorf("export source oci --with-credentials: want the OCIRepository, then its Secret:\n%s", out)
		}

		out := u.must("create", "ks", "from-oci", "--source=OCIRepository/manifests", "--path=./", "--prune")
		hasLines(t, out, "► applying Kustomization", "✔ Kustomization created", "✔ Kustomization from-oci is ready", "✔ applied revision "+rev)
		if err := c.Get(ctx, types.NamespacedName{Namespace: "objects", Name: "from-oci"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("the Kustomization did not apply the OCIRepository's ConfigMap: %v", err)
		}
		// As flux: a suspended source is not reconciled, alone or --with-source.
		oneLineError(t, u.fails("reconcile", "source", "oci", "manifests"), "OCIRepository flux-system/manifests is suspended: set spec.suspend to false first")
		oneLineError(t, u.fails("reconcile", "ks", "from-oci", "--with-source"), "OCIRepository flux-system/manifests is suspended")
		oneLineError(t, u.fails("reconcile", "source", "oci", "missing"), "OCIRepository missing not found in namespace flux-system")

		hasLines(t, u.must("suspend", "source", "oci", "manifests"), "► suspending source oci manifests in flux-system namespace", "✔ source oci suspended")
		hasLines(t, u.must("resume", "source", "oci", "manifests", "--wait=false"), "► resuming source oci manifests in flux-system namespace", "✔ source oci resumed")
		if err := c.Get(ctx, client.ObjectKeyFromObject(repo), repo); err != nil || repo.Spec.Suspend {
			t.Errorf("resume source oci: spec.suspend %v (%v), want false", repo.Spec.Suspend, err)
		}

		u.must("delete", "ks", "from-oci", "--silent")
		hasLines(t, u.must("delete", "source", "oci", "manifests", "--silent"), "► deleting source oci manifests in flux-system namespace", "✔ source oci deleted")
		waitUntil(t, "OCIRepository manifests gone", time.Minute, func() (bool, string) {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(repo), &sourcev1.OCIRepository{})), "still there"
		})
		oneLineError(t, u.fails("export", "source", "oci", "manifests"), "OCIRepository manifests not found in namespace flux-system")
	})

	t.Run("oci artifact end to end", func(t *testing.T) { ociArtifactFlow(t, u, c) })
	t.Run("bucket end to end", func(t *testing.T) { bucketFlow(t, u, c) })

	t.Run("delete", func(t *testing.T) {
		hasLines(t, u.must("delete", "ks", "apps", "--silent"), "► deleting kustomization apps in flux-system namespace", "✔ kustomization deleted")
		waitUntil(t, "Kustomization apps gone", time.Minute, func() (bool, string) {
			err := c.Get(ctx, types.NamespacedName{Namespace: "flux-system", Name: "apps"}, &kustomizev1.Kustomization{})
			return apierrors.IsNotFound(err), "still there"
		})
		if err := c.Get(ctx, types.NamespacedName{Namespace: "objects", Name: "moved"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("deleting the pruning Kustomization left its ConfigMap (%v)", err)
		}
		oneLineError(t, u.fails("delete", "ks", "apps", "--silent"), "Kustomization apps not found in namespace flux-system")
		oneLineError(t, u.fails("export", "ks", "--all", "-n", "objects"), "no objects found in objects namespace")
	})
}

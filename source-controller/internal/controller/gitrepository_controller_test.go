package controller

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

func testdataRepos(t *testing.T) string { return filepath.Join(testenv.TestdataDir(t), "repos") }

// expectedFiles asks git which committed files of the work tree are not
// excluded by the .sourceignore files and the VCS (and, without any
// .sourceignore, default) patterns: an oracle independent of pkg/artifact.
func expectedFiles(t *testing.T, r *repo) []string {
	t.Helper()
	patterns := artifact.VCSPatterns
	if r.MustGit(t, "ls-files", "--", "*"+artifact.IgnoreFile) == "" {
		patterns = append(append([]string{}, patterns...), artifact.DefaultPatterns...)
	}
	excludes := filepath.Join(t.TempDir(), "excludes")
	if err := os.WriteFile(excludes, []byte(strings.Join(patterns, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	all := strings.Fields(r.MustGit(t, "ls-files"))
	ignored := map[string]bool{}
	for _, f := range strings.Fields(r.MustGit(t, "ls-files", "--cached", "--ignored",
		"--exclude-per-directory="+artifact.IgnoreFile, "--exclude-from="+excludes)) {
		ignored[f] = true
	}
	var want []string
	for _, f := range all {
		if !ignored[f] {
			want = append(want, f)
		}
	}
	sort.Strings(want)
	return want
}

// TestTestdataRepositories commits each real repository of shared/testdata
// into a fresh Git repository, reconciles a GitRepository for it and checks
// the served artifact: its digest, its file list against git's own ignore
// matching, and for two repositories every file's content.
func TestTestdataRepositories(t *testing.T) {
	ns := newNamespace(t)
	dirs, err := os.ReadDir(testdataRepos(t))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("testdata repositories not found: %v", err)
	}
	for _, d := range dirs {
		t.Run(d.Name(), func(t *testing.T) {
			src := filepath.Join(testdataRepos(t), d.Name())
			r := newRepo(t, nil)
			if err := os.CopyFS(r.Work, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			head := r.MustCommit(t, map[string]string{}, "import "+d.Name())
			obj := waitReady(t, newGitRepository(t, ns, d.Name(), r.URL(), nil))
			a := obj.Status.Artifact
			if want := "main@sha1:" + head; a.Revision != want {
				t.Errorf("revision %q, want %q", a.Revision, want)
			}
			files := untar(t, download(t, a))
			want := expectedFiles(t, r)
			if got := keys(files); !reflect.DeepEqual(got, want) {
				t.Errorf("artifact files\n got %v\nwant %v", got, want)
			}
			if d.Name() == "podinfo" || d.Name() == "flux2-kustomize-helm-example" {
				for _, name := range want {
					orig, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(name)))
					if err != nil || !bytes.Equal(orig, files[name]) {
						t.Errorf("%s: artifact content differs from the repository (%v)", name, err)
					}
				}
			}
		})
	}
}

// TestRevisions checks the revision string of each kind of reference and
// the precedence between them. Flux compatible (contract §2.3, §3.2).
func TestRevisions(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "v: 1\n"})
	c1 := r.MustGit(t, "rev-parse", "HEAD")
	r.MustGit(t, "tag", "-a", "v1.0.0", "-m", "release 1.0.0")
	r.MustGit(t, "push", "-q", r.Bare, "v1.0.0")
	r.MustGit(t, "push", "-q", r.Bare, "HEAD:refs/heads/feature/x")
	c2 := r.MustCommit(t, map[string]string{"app.yaml": "v: 2\n"}, "second")
	for _, tag := range []string{"v1.1.0", "v2.0.0-rc.1"} {
		r.MustGit(t, "tag", tag)
		r.MustGit(t, "push", "-q", r.Bare, tag)
	}
	r.MustGit(t, "push", "-q", r.Bare, "HEAD:refs/pull/1/head")

	cases := []struct {
		name string
		ref  *sourcev1.GitRepositoryRef
		want string
	}{
		{"branch", &sourcev1.GitRepositoryRef{Branch: "main"}, "main@sha1:" + c2},
		{"nested branch", &sourcev1.GitRepositoryRef{Branch: "feature/x"}, "feature/x@sha1:" + c1},
		{"annotated tag", &sourcev1.GitRepositoryRef{Tag: "v1.0.0"}, "v1.0.0@sha1:" + c1},
		{"lightweight tag", &sourcev1.GitRepositoryRef{Tag: "v1.1.0"}, "v1.1.0@sha1:" + c2},
		{"semver range", &sourcev1.GitRepositoryRef{SemVer: ">=1.0.0 <2.0.0"}, "v1.1.0@sha1:" + c2},
		{"semver patch", &sourcev1.GitRepositoryRef{SemVer: "1.0.x"}, "v1.0.0@sha1:" + c1},
		{"name", &sourcev1.GitRepositoryRef{Name: "refs/pull/1/head"}, "refs/pull/1/head@sha1:" + c2},
		{"commit", &sourcev1.GitRepositoryRef{Commit: c1}, "sha1:" + c1},
		{"commit on branch", &sourcev1.GitRepositoryRef{Branch: "main", Commit: c1}, "main@sha1:" + c1},
		{"tag over branch", &sourcev1.GitRepositoryRef{Branch: "main", Tag: "v1.0.0"}, "v1.0.0@sha1:" + c1},
		{"tag over semver", &sourcev1.GitRepositoryRef{Tag: "v1.1.0", SemVer: "1.0.x"}, "v1.1.0@sha1:" + c2},
		{"name over tag", &sourcev1.GitRepositoryRef{Name: "refs/pull/1/head", Tag: "v1.0.0"}, "refs/pull/1/head@sha1:" + c2},
		{"commit over name", &sourcev1.GitRepositoryRef{Commit: c1, Name: "refs/pull/1/head"}, "sha1:" + c1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := newGitRepository(t, ns, "rev-"+string(rune('a'+i)), r.URL(), func(o *sourcev1.GitRepository) {
				o.Spec.Reference = tc.ref
			})
			got := waitReady(t, obj)
			if got.Status.Artifact.Revision != tc.want {
				t.Errorf("revision %q, want %q", got.Status.Artifact.Revision, tc.want)
			}
			files := untar(t, download(t, got.Status.Artifact))
			wantContent := "v: 2\n"
			if strings.HasSuffix(tc.want, c1) {
				wantContent = "v: 1\n"
			}
			if string(files["app.yaml"]) != wantContent {
				t.Errorf("app.yaml = %q, want %q", files["app.yaml"], wantContent)
			}
			wantMsg := "stored artifact for revision '" + tc.want + "'"
			if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); c.Reason != meta.SucceededReason || c.Message != wantMsg {
				t.Errorf("Ready %s %q, want %s %q", c.Reason, c.Message, meta.SucceededReason, wantMsg)
			}
		})
	}

	t.Run("default branch is master", func(t *testing.T) {
		obj := newGitRepository(t, ns, "rev-default", r.URL(), func(o *sourcev1.GitRepository) { o.Spec.Reference = nil })
		got := waitNotReady(t, obj)
		c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
		if !strings.Contains(c.Message, `couldn't find remote ref "refs/heads/master"`) {
			t.Errorf("Ready message %q does not name refs/heads/master", c.Message)
		}
	})
}

// TestNoChangeReconcileDoesNotClone checks the ref-listing short-circuit:
// a reconcile of an unchanged commit lists refs but fetches nothing and
// keeps the digest; a push moves the revision and the artifact; a change of
// spec.ignore alone rebuilds.
func TestNoChangeReconcileDoesNotClone(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"deploy/app.yaml": "a: 1\n", "secrets/key.yaml": "k: 1\n"})
	obj := waitReady(t, newGitRepository(t, ns, "steady", r.URL(), nil))
	first := obj.Status.Artifact
	if obj.Generation != 1 {
		t.Errorf("generation %d after the first reconcile, want 1: adding the finalizer must not rewrite the spec", obj.Generation)
	}
	if n := gitSrv.Fetches(r.Name); n != 1 {
		t.Fatalf("first reconcile fetched %d times, want 1", n)
	}
	if evs := sink.find(ns, "steady", "NewArtifact"); len(evs) != 1 ||
		evs[0].Metadata["source.toolkit.fluxcd.io/revision"] != first.Revision ||
		evs[0].Metadata["source.toolkit.fluxcd.io/digest"] != first.Digest ||
		evs[0].Message != "stored artifact for commit 'initial commit'" || evs[0].Action != sourcev1.ActionReconcile.String() {
		t.Errorf("NewArtifact events %+v (action Reconcile)", evs)
	}

	for range 2 {
		again := requestReconcile(t, obj)
		if again.Status.Artifact.Digest != first.Digest || again.Status.Artifact.Revision != first.Revision {
			t.Errorf("artifact changed without a new commit: %+v", again.Status.Artifact)
		}
	}
	if n := gitSrv.Fetches(r.Name); n != 1 {
		t.Errorf("unchanged reconciles fetched: %d fetches in all, want 1", n)
	}

	head := r.MustCommit(t, map[string]string{"deploy/app.yaml": "a: 2\n"}, "scale up")
	moved := requestReconcile(t, obj)
	if want := "main@sha1:" + head; moved.Status.Artifact.Revision != want {
		t.Errorf("after a push, revision %q, want %q", moved.Status.Artifact.Revision, want)
	}
	if moved.Status.Artifact.Digest == first.Digest {
		t.Error("after a push, the digest did not change")
	}
	if n := gitSrv.Fetches(r.Name); n != 2 {
		t.Errorf("after a push, %d fetches in all, want 2", n)
	}
	if got := string(untar(t, download(t, moved.Status.Artifact))["deploy/app.yaml"]); got != "a: 2\n" {
		t.Errorf("artifact has deploy/app.yaml %q after the push", got)
	}

	update(t, obj, func(o *sourcev1.GitRepository) { o.Spec.Ignore = ptrTo("secrets/\n") })
	ignored := waitFor(t, obj, "observedIgnore", func(o *sourcev1.GitRepository) bool {
		return settled(o) && o.Status.ObservedIgnore != nil && o.Status.ObservedGeneration == o.Generation
	})
	files := untar(t, download(t, ignored.Status.Artifact))
	if _, ok := files["secrets/key.yaml"]; ok || files["deploy/app.yaml"] == nil {
		t.Errorf("with spec.ignore secrets/, artifact files are %v", keys(files))
	}
	if ignored.Status.Artifact.Revision != moved.Status.Artifact.Revision || ignored.Status.Artifact.Digest == moved.Status.Artifact.Digest {
		t.Error("a spec.ignore change did not rebuild the artifact of the same revision")
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestBadInputsKeepTheArtifact breaks a Ready GitRepository in each way a
// user can and checks the condition, that the message names the problem and
// not the secret, that the last artifact is still served, and that another
// GitRepository keeps reconciling meanwhile.
func TestBadInputsKeepTheArtifact(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a: 1\n"})
	r.MustGit(t, "tag", "v1.0.0")
	r.MustGit(t, "push", "-q", r.Bare, "v1.0.0")
	good := waitReady(t, newGitRepository(t, ns, "victim", r.URL(), nil))
	stored := good.Status.Artifact
	bystander := waitReady(t, newGitRepository(t, ns, "bystander", r.URL(), nil))

	authRoot := t.TempDir()
	if _, err := gitserver.InitBare(authRoot, "private.git"); err != nil {
		t.Fatal(err)
	}
	r.MustGit(t, "push", "-q", filepath.Join(authRoot, "private.git"), "main")
	private, err := gitserver.Start(gitserver.Options{Root: authRoot, Username: "git", Password: "right-password"})
	if err != nil {
		t.Fatal(err)
	}
	defer private.Close()
	empty, err := gitserver.InitBare(gitSrv.Root, "empty.git")
	if err != nil {
		t.Fatal(err)
	}
	_ = empty
	secret := func(name string, data map[string]string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	secret("wrong-password", map[string]string{"username": "git", "password": "wrong-s3cret-value"})
	secret("no-username", map[string]string{"password": "lonely-s3cret-value"})
	secret("no-known-hosts", map[string]string{"identity": "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n"})

	cases := []struct {
		name    string
		mutate  func(*sourcev1.GitRepositorySpec)
		reason  string
		message string
		stalled bool
	}{
		{"unreachable host", func(s *sourcev1.GitRepositorySpec) { s.URL = "http://127.0.0.1:1/repo.git" },
			sourcev1.GitOperationFailedReason, "unable to clone 'http://127.0.0.1:1/repo.git': connect: connection refused", false},
		{"refused auth", func(s *sourcev1.GitRepositorySpec) {
			s.URL = private.URL + "/private.git"
			s.SecretRef = &meta.LocalObjectReference{Name: "wrong-password"}
		}, sourcev1.GitOperationFailedReason, "authentication required", false},
		{"unknown branch", func(s *sourcev1.GitRepositorySpec) { s.Reference = &sourcev1.GitRepositoryRef{Branch: "nope"} },
			sourcev1.GitOperationFailedReason, `couldn't find remote ref "refs/heads/nope"`, false},
		{"unknown tag", func(s *sourcev1.GitRepositorySpec) { s.Reference = &sourcev1.GitRepositoryRef{Tag: "v9.9.9"} },
			sourcev1.GitOperationFailedReason, `couldn't find remote ref "refs/tags/v9.9.9"`, false},
		{"no semver match", func(s *sourcev1.GitRepositorySpec) { s.Reference = &sourcev1.GitRepositoryRef{SemVer: ">=2.0.0"} },
			sourcev1.GitOperationFailedReason, "no match found for semver: >=2.0.0", false},
		{"invalid semver", func(s *sourcev1.GitRepositorySpec) { s.Reference = &sourcev1.GitRepositoryRef{SemVer: "not a range"} },
			sourcev1.GitOperationFailedReason, "semver parse error", true},
		{"empty repository", func(s *sourcev1.GitRepositorySpec) { s.URL = gitSrv.URL + "/empty.git" },
			sourcev1.EmptyGitRepositoryReason, "git repository is empty", false},
		{"missing secret", func(s *sourcev1.GitRepositorySpec) { s.SecretRef = &meta.LocalObjectReference{Name: "absent"} },
			// The API error names kind and name: `secrets "absent" not found` from the
			// API server (the binary), `Secret "absent" not found` from this test's cache.
			sourcev1.AuthenticationFailedReason, `"absent" not found`, false},
		// What the user wrote is kept (the user name too) with the parser's reason.
		{"invalid url", func(s *sourcev1.GitRepositorySpec) { s.URL = "ssh://git@git.example.com:shop/platform-config.git" },
			sourcev1.URLInvalidReason, `failed to parse url 'ssh://git@git.example.com:shop/platform-config.git': ` +
				`parse "ssh://git@git.example.com:shop/platform-config.git": invalid port ":shop" after host`, true},
		// ... but a password never is, nor, beyond SSH, the user part: it is
		// often a token (GitHub's https://<token>@github.com/...).
		{"invalid url with a password", func(s *sourcev1.GitRepositorySpec) {
			s.URL = "https://git:s3cret@git.example.com:shop/platform-config.git"
		},
			sourcev1.URLInvalidReason, `failed to parse url 'https://xxxxx@git.example.com:shop/platform-config.git': ` +
				`parse "https://xxxxx@git.example.com:shop/platform-config.git": invalid port ":shop" after host`, true},
		{"invalid url with a token as user", func(s *sourcev1.GitRepositorySpec) {
			s.URL = "https://ghp_s3cretToken0123@github.com:org/repo.git"
		},
			sourcev1.URLInvalidReason, `failed to parse url 'https://xxxxx@github.com:org/repo.git': ` +
				`parse "https://xxxxx@github.com:org/repo.git": invalid port ":org" after host`, true},
		{"invalid ssh url with a password", func(s *sourcev1.GitRepositorySpec) {
			s.URL = "ssh://git:s3cret@git.example.com:shop/platform-config.git"
		},
			sourcev1.URLInvalidReason, `failed to parse url 'ssh://git:xxxxx@git.example.com:shop/platform-config.git': ` +
				`parse "ssh://git:xxxxx@git.example.com:shop/platform-config.git": invalid port ":shop" after host`, true},
		{"password with an unencoded '#'", func(s *sourcev1.GitRepositorySpec) { s.URL = "https://git:pa#s3cret@github.com/org/repo.git" },
			sourcev1.URLInvalidReason, `failed to parse url 'https://xxxxx@github.com/org/repo.git': ` +
				`parse "https://xxxxx@github.com/org/repo.git": net/url: invalid userinfo`, true},
		{"unreachable host, url with a password", func(s *sourcev1.GitRepositorySpec) { s.URL = "http://git:s3cret@127.0.0.1:1/repo.git" },
			sourcev1.GitOperationFailedReason, "unable to clone 'http://xxxxx@127.0.0.1:1/repo.git': connect: connection refused", false},
		{"unreachable host, token as user", func(s *sourcev1.GitRepositorySpec) { s.URL = "http://ghp_s3cretToken0123@127.0.0.1:1/repo.git" },
			sourcev1.GitOperationFailedReason, "unable to clone 'http://xxxxx@127.0.0.1:1/repo.git': connect: connection refused", false},
		{"password without username", func(s *sourcev1.GitRepositorySpec) { s.SecretRef = &meta.LocalObjectReference{Name: "no-username"} },
			sourcev1.AuthenticationFailedReason, "'password' is set but 'username' is empty", false},
		{"ssh without known_hosts", func(s *sourcev1.GitRepositorySpec) {
			s.URL = "ssh://git@127.0.0.1:1/repo.git"
			s.SecretRef = &meta.LocalObjectReference{Name: "no-known-hosts"}
		}, sourcev1.AuthenticationFailedReason, "'known_hosts' is required", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			update(t, good, func(o *sourcev1.GitRepository) {
				o.Spec = *good.Spec.DeepCopy()
				tc.mutate(&o.Spec)
			})
			got := waitFor(t, good, "failure of this generation", func(o *sourcev1.GitRepository) bool {
				c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
				return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == o.Generation
			})
			ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
			fetch := apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.FetchFailedCondition)
			t.Logf("Ready=False %s: %s", ready.Reason, ready.Message)
			if ready.Reason != tc.reason || !strings.Contains(ready.Message, tc.message) {
				t.Errorf("Ready=False %s %q; want reason %s and a message with %q", ready.Reason, ready.Message, tc.reason, tc.message)
			}
			if fetch == nil || fetch.Status != metav1.ConditionTrue || fetch.Message != ready.Message {
				t.Errorf("FetchFailed condition %+v, want True with Ready's message", fetch)
			}
			for _, s := range []string{"s3cret", "right-password", ":pa"} {
				if strings.Contains(ready.Message, s) {
					t.Errorf("message leaks a secret: %q", ready.Message)
				}
			}
			stalled := apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition)
			reconciling := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReconcilingCondition)
			if stalled != tc.stalled {
				t.Errorf("Stalled=%v, want %v", stalled, tc.stalled)
			}
			if !tc.stalled && (reconciling == nil || reconciling.Reason != meta.ProgressingWithRetryReason) {
				t.Errorf("Reconciling %+v, want True ProgressingWithRetry while retrying", reconciling)
			}
			if a := got.Status.Artifact; a == nil || a.Digest != stored.Digest {
				t.Fatalf("status.artifact %+v, want the last good one kept", a)
			}
			download(t, got.Status.Artifact)
			if !apimeta.IsStatusConditionTrue(got.Status.Conditions, sourcev1.ArtifactInStorageCondition) {
				t.Error("ArtifactInStorage is not True while the last artifact is served")
			}
			requestReconcile(t, bystander)
			if b := waitReady(t, bystander); b.Status.Artifact.Digest != bystander.Status.Artifact.Digest {
				t.Error("the bystander's artifact changed")
			}
		})
	}

	t.Run("recovery", func(t *testing.T) {
		update(t, good, func(o *sourcev1.GitRepository) { o.Spec = *good.Spec.DeepCopy() })
		got := waitReady(t, good)
		for _, typ := range []string{sourcev1.FetchFailedCondition, meta.StalledCondition, meta.ReconcilingCondition} {
			if apimeta.FindStatusCondition(got.Status.Conditions, typ) != nil {
				t.Errorf("condition %s still present after recovery", typ)
			}
		}
	})
}

// TestStorageHygiene checks garbage collection, the detection and rebuild
// of a tampered artifact, and the removal of storage on deletion.
func TestStorageHygiene(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "n: 0\n"})
	obj := waitReady(t, newGitRepository(t, ns, "hygiene", r.URL(), nil))
	dir := filepath.Join(storage.BasePath, "gitrepository", ns, "hygiene")
	for i := 1; i <= 3; i++ {
		r.MustCommit(t, map[string]string{"app.yaml": "n: " + string(rune('0'+i)) + "\n"}, "bump")
		requestReconcile(t, obj)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) > 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("storage keeps %d files, want at most 2: %v", len(entries), names)
	}

	cur := waitReady(t, obj).Status.Artifact
	if err := os.WriteFile(storage.LocalPath(*cur), []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	rebuilt := requestReconcile(t, obj)
	if rebuilt.Status.Artifact == nil || rebuilt.Status.Artifact.Digest != cur.Digest {
		t.Fatalf("tampered artifact not rebuilt to the same digest: %+v", rebuilt.Status.Artifact)
	}
	download(t, rebuilt.Status.Artifact)
	deadline := time.Now().Add(10 * time.Second)
	for len(kubeEvents(t, ns, "hygiene", "ArtifactVerificationFailed")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no ArtifactVerificationFailed event for the tampered artifact")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Posted too, as the storage stage's (event.toolkit.fluxcd.io/v1 action).
	for {
		evs := sink.find(ns, "hygiene", "ArtifactVerificationFailed")
		if len(evs) > 0 {
			if evs[0].Action != sourcev1.ActionReconcileStorage.String() || evs[0].Severity != "error" {
				t.Errorf("posted ArtifactVerificationFailed %+v, want action ReconcileStorage, severity error", evs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ArtifactVerificationFailed not posted to the events address")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := env.Client.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), &sourcev1.GitRepository{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("object not released after deletion: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("storage directory %s still exists after deletion (%v)", dir, err)
	}
}

func kubeEvents(t *testing.T, ns, name, reason string) []corev1.Event {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// TestHTTPAuth reconciles from servers that require basic auth, a bearer
// token, and TLS with a private CA.
func TestHTTPAuth(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a: 1\n"})
	root := t.TempDir()
	if _, err := gitserver.InitBare(root, "app.git"); err != nil {
		t.Fatal(err)
	}
	r.MustGit(t, "push", "-q", filepath.Join(root, "app.git"), "main")
	srv, err := gitserver.Start(gitserver.Options{Root: root, Username: "git", Password: "pw", BearerToken: "tok", TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cases := []struct {
		name string
		data map[string]string
		ok   bool
	}{
		{"basic auth with CA", map[string]string{"username": "git", "password": "pw", "ca.crt": string(srv.CACert())}, true},
		{"bearer token with CA", map[string]string{"bearerToken": "tok", "ca.crt": string(srv.CACert())}, true},
		{"basic auth without CA", map[string]string{"username": "git", "password": "pw"}, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := newRepositoryWithSecret(t, ns, "auth-"+string(rune('a'+i)), srv.URL+"/app.git", tc.data)
			if tc.ok {
				download(t, waitReady(t, obj).Status.Artifact)
				return
			}
			got := waitNotReady(t, obj)
			c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
			if !strings.Contains(c.Message, "certificate") {
				t.Errorf("Ready message %q does not name the certificate problem", c.Message)
			}
		})
	}
}

// checkGit fails the test early with a clear message when git is missing.
func init() {
	if _, err := exec.LookPath("git"); err != nil {
		panic("these tests need git on PATH (apt-get install git)")
	}
}

// TestReconcileDurationMetric checks the Flux reconcile histogram is
// recorded per object, and its series dropped once the object is gone.
func TestReconcileDurationMetric(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a: 1\n"})
	repo := newGitRepository(t, ns, "measured", r.URL(), nil)
	waitReady(t, repo)
	samples := func() uint64 {
		t.Helper()
		families, err := metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "gotk_reconcile_duration_seconds" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["kind"] == "GitRepository" && labels["namespace"] == ns && labels["name"] == "measured" {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
		return 0
	}
	if samples() == 0 {
		t.Fatal("no gotk_reconcile_duration_seconds sample for the GitRepository")
	}
	if err := env.Client.Delete(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, repo, "deleted GitRepository")
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return samples() == 0, nil })
	if err != nil {
		t.Error("the deleted GitRepository's gotk_reconcile_duration_seconds series is still served")
	}
}

// TestArtifactOutdatedOnFailedBuild marks the served artifact outdated when
// a newer revision is known but cannot be stored.
func TestArtifactOutdatedOnFailedBuild(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a"})
	obj := waitReady(t, newGitRepository(t, ns, "outdated", r.URL(), nil))
	r.MustCommit(t, map[string]string{"app.yaml": "b"}, "second")
	update(t, obj, func(o *sourcev1.GitRepository) { o.Spec.SparseCheckout = []string{"missing-dir"} })
	got := waitNotReady(t, obj)
	c := apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.ArtifactOutdatedCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != sourcev1.NewRevisionReason || !strings.Contains(c.Message, "new upstream revision 'main@sha1:") {
		t.Errorf("ArtifactOutdated %+v, want True NewRevision", c)
	}
}

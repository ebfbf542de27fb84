package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
)

func TestEnsureGitSharesOneObjectAndOneDownload(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	srv := newArtifactServer(t)
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/infra.git", Path: "apps/payment-api"}

	_, err := m.Ensure(ctx, app("a", src), src, "")
	if nr := asNotReady(t, err); nr.Kind != "GitRepository" || nr.Message != waitingMessage || nr.Stalled {
		t.Fatalf("before any status: %+v", nr)
	}
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	if repo.Spec.URL != src.RepoURL || repo.Spec.Reference == nil || repo.Spec.Reference.Name != "HEAD" ||
		repo.Spec.Interval.Duration != DefaultInterval || repo.Spec.SecretRef != nil || repo.Labels[LabelSource] == "" {
		t.Fatalf("GitRepository spec %+v labels %v", repo.Spec, repo.Labels)
	}

	art := srv.add("/gitrepository/x.tar.gz", "HEAD@sha1:"+sha,
		artifacttest.Files(t, map[string]string{"apps/payment-api/cm.yaml": "kind: ConfigMap\n"}))
	setStatus(t, &repo, art, true, meta.SucceededReason, "stored artifact for revision 'HEAD@sha1:"+sha+"'", false)

	other := src
	other.Path = "apps/other"
	other.TargetRevision = "HEAD"
	var dirs []string
	for i, s := range []argov1.ApplicationSource{src, other, src} {
		f, err := m.Ensure(ctx, app(string(rune('a'+i)), s), s, "")
		if err != nil {
			t.Fatalf("Ensure %d: %v", i, err)
		}
		if f.Revision != sha || f.Artifact.Digest != art.Digest {
			t.Errorf("Fetched revision %q digest %q", f.Revision, f.Artifact.Digest)
		}
		b, err := os.ReadFile(filepath.Join(f.Dir, "apps/payment-api/cm.yaml"))
		if err != nil || string(b) != "kind: ConfigMap\n" {
			t.Errorf("unpacked file: %q, %v", b, err)
		}
		dirs = append(dirs, f.Dir)
	}
	if dirs[0] != dirs[1] || dirs[1] != dirs[2] {
		t.Errorf("one artifact should unpack to one directory: %v", dirs)
	}
	if n := srv.hitsOf("/gitrepository/x.tar.gz"); n != 1 {
		t.Errorf("artifact downloaded %d times, want 1", n)
	}
}

func TestEnsureWaitsForTheWantedRevision(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	srv := newArtifactServer(t)
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/infra.git", TargetRevision: "main"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	// An artifact of another ref (the object was edited by hand, say) is not handed out.
	art := srv.add("/x.tar.gz", "dev@sha1:"+sha, artifacttest.Files(t, map[string]string{"a": "b"}))
	setStatus(t, &repo, art, false, "GitOperationFailed", "failed to checkout and determine revision: unable to clone 'https://git.example.com/acme/infra.git': authentication required", true)
	_, err = m.Ensure(ctx, app("a", src), src, "")
	nr := asNotReady(t, err)
	if !strings.Contains(nr.Message, "authentication required") || !nr.Stalled {
		t.Errorf("NotReady %+v, want the Ready message and Stalled", nr)
	}
	if !strings.Contains(nr.Error(), "GitRepository "+repo.Name+" is not ready: ") {
		t.Errorf("Error() = %q", nr.Error())
	}

	// A rollback's commit gets its own object, with ref.commit.
	if _, err := m.Ensure(ctx, app("a", src), src, sha); err == nil {
		t.Fatal("want NotReady for the commit's new object")
	}
	var byCommit sourcev1.GitRepository
	get(t, m, &byCommit, ObjectName(src, sha))
	if byCommit.Spec.Reference.Commit != sha {
		t.Errorf("rollback object ref %+v", byCommit.Spec.Reference)
	}
}

func TestEnsureTriesAMissingBranchAsATag(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	srv := newArtifactServer(t)
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/infra.git", TargetRevision: "v1.2.0"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	if repo.Spec.Reference.Branch != "v1.2.0" {
		t.Fatalf("first tried as a branch: %+v", repo.Spec.Reference)
	}
	setStatus(t, &repo, nil, false, "GitOperationFailed",
		`failed to checkout and determine revision: unable to clone 'https://git.example.com/acme/infra.git': couldn't find remote ref "refs/heads/v1.2.0"`, false)
	_, err = m.Ensure(ctx, app("a", src), src, "")
	if nr := asNotReady(t, err); !strings.Contains(nr.Message, `trying the tag "v1.2.0"`) {
		t.Errorf("NotReady %+v", nr)
	}
	get(t, m, &repo, repo.Name)
	if r := repo.Spec.Reference; r.Tag != "v1.2.0" || r.Branch != "" {
		t.Fatalf("after the switch: %+v", r)
	}
	// The next Ensure keeps the tag.
	_, err = m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	get(t, m, &repo, repo.Name)
	if repo.Spec.Reference.Tag != "v1.2.0" {
		t.Fatalf("the switch was undone: %+v", repo.Spec.Reference)
	}
	setStatus(t, &repo, nil, false, "GitOperationFailed",
		`failed to checkout and determine revision: unable to clone 'https://git.example.com/acme/infra.git': couldn't find remote ref "refs/tags/v1.2.0"`, false)
	_, err = m.Ensure(ctx, app("a", src), src, "")
	if nr := asNotReady(t, err); nr.Message != `revision "v1.2.0" is neither a branch nor a tag of the repository` {
		t.Errorf("neither: %+v", nr)
	}
	art := srv.add("/t.tar.gz", "v1.2.0@sha1:"+sha, artifacttest.Files(t, map[string]string{"x.yaml": "a: 1\n"}))
	setStatus(t, &repo, art, true, meta.SucceededReason, "stored artifact", false)
	f, err := m.Ensure(ctx, app("a", src), src, "")
	if err != nil || f.Revision != sha {
		t.Fatalf("Ensure = %+v, %v", f, err)
	}
}

// TestEnsureTriesAShortSHAAsACommit: a 7 to 39 hex revision that is
// neither a branch nor a tag becomes ref.commit, kept by later Ensures, and
// its artifact gives the full SHA; one that is no commit either says so.
func TestEnsureTriesAShortSHAAsACommit(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	srv := newArtifactServer(t)
	short := strings.ToUpper(sha[:8])
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/infra.git", TargetRevision: short}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	if repo.Spec.Reference.Branch != short || repo.Annotations[sourcev1.SymlinksAnnotation] != sourcev1.SymlinksFollow {
		t.Fatalf("first tried as a branch, links followed: %+v %v", repo.Spec.Reference, repo.Annotations)
	}
	for _, kind := range []string{"heads", "tags"} {
		setStatus(t, &repo, nil, false, "GitOperationFailed",
			`failed to checkout and determine revision: unable to clone 'https://git.example.com/acme/infra.git': couldn't find remote ref "refs/`+kind+`/`+short+`"`, false)
		_, err = m.Ensure(ctx, app("a", src), src, "")
		asNotReady(t, err)
		get(t, m, &repo, repo.Name)
	}
	if r := repo.Spec.Reference; r.Commit != sha[:8] || r.Tag != "" || r.Branch != "" {
		t.Fatalf("after branch and tag: %+v", r)
	}
	_, err = m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	get(t, m, &repo, repo.Name)
	if repo.Spec.Reference.Commit != sha[:8] {
		t.Fatalf("the switch was undone: %+v", repo.Spec.Reference)
	}
	setStatus(t, &repo, nil, false, "GitOperationFailed",
		`failed to checkout and determine revision: unable to clone 'https://git.example.com/acme/infra.git': unable to resolve commit object for '`+sha[:8]+`': no fetched commit starts with it`, false)
	_, err = m.Ensure(ctx, app("a", src), src, "")
	if nr := asNotReady(t, err); nr.Message != `revision "`+short+`" is neither a branch, a tag nor a commit of the repository` {
		t.Errorf("neither: %+v", nr)
	}
	art := srv.add("/c.tar.gz", "sha1:"+sha, artifacttest.Files(t, map[string]string{"x.yaml": "a: 1\n"}))
	setStatus(t, &repo, art, true, meta.SucceededReason, "stored artifact", false)
	f, err := m.Ensure(ctx, app("a", src), src, "")
	if err != nil || f.Revision != sha {
		t.Fatalf("Ensure = %+v, %v; want the full SHA", f, err)
	}
}

// TestEnsureAsksAnOlderGitRepositoryToFollowLinks: a GitRepository made
// without the symlinks annotation gets it, with a reconcile request.
func TestEnsureAsksAnOlderGitRepositoryToFollowLinks(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/older.git", TargetRevision: "main"}
	old := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: ObjectName(src, "")},
		Spec: sourcev1.GitRepositorySpec{URL: "https://git.example.com/acme/older.git", Interval: metav1.Duration{Duration: time.Minute},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}}
	if err := env.Client.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var repo sourcev1.GitRepository
	get(t, m, &repo, old.Name)
	if repo.Annotations[sourcev1.SymlinksAnnotation] != sourcev1.SymlinksFollow || repo.Annotations[meta.ReconcileRequestAnnotation] == "" {
		t.Errorf("annotations %v, want links followed and a reconcile requested", repo.Annotations)
	}
}

func TestEnsureHelmChartUnpacksTheChart(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	srv := newArtifactServer(t)
	src := argov1.ApplicationSource{RepoURL: "https://charts.example.com/stable", Chart: "podinfo", TargetRevision: "6.*"}
	if _, err := m.Ensure(ctx, app("a", argov1.ApplicationSource{RepoURL: src.RepoURL, Chart: "podinfo"}),
		argov1.ApplicationSource{RepoURL: src.RepoURL, Chart: "podinfo"}, ""); err != errChartRevision {
		t.Errorf("a chart without version: %v", err)
	}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var repo sourcev1.HelmRepository
	get(t, m, &repo, repositoryName(src, ""))
	var chart sourcev1.HelmChart
	get(t, m, &chart, ObjectName(src, ""))
	if repo.Spec.URL != src.RepoURL || repo.Spec.Type != "default" || chart.Spec.Chart != "podinfo" ||
		chart.Spec.Version != "6.*" || chart.Spec.SourceRef.Name != repo.Name {
		t.Fatalf("HelmRepository %+v HelmChart %+v", repo.Spec, chart.Spec)
	}
	// The repository's failure is the message.
	setStatus(t, &repo, nil, false, "AuthenticationFailed", "failed to fetch Helm repository index: 401 Unauthorized", false)
	_, err = m.Ensure(ctx, app("a", src), src, "")
	if nr := asNotReady(t, err); nr.Kind != "HelmRepository" || !strings.Contains(nr.Message, "401") {
		t.Errorf("NotReady %+v", nr)
	}
	setStatus(t, &repo, nil, true, meta.SucceededReason, "stored index", false)
	art := srv.add("/podinfo-6.1.0.tgz", "6.1.0", artifacttest.Files(t, map[string]string{
		"podinfo/Chart.yaml": "name: podinfo\nversion: 6.1.0\n", "podinfo/values.yaml": "a: 1\n"}))
	setStatus(t, &chart, art, true, "ChartPullSucceeded", "pulled 'podinfo' chart with version '6.1.0'", false)
	f, err := m.Ensure(ctx, app("a", src), src, "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Revision != "6.1.0" || filepath.Base(f.Dir) != "podinfo" {
		t.Errorf("Fetched %+v", f)
	}
	if _, err := os.Stat(filepath.Join(f.Dir, "Chart.yaml")); err != nil {
		t.Error(err)
	}
}

func TestEnsureOCIArtifact(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	m.Interval = time.Minute
	srv := newArtifactServer(t)
	src := argov1.ApplicationSource{RepoURL: "oci://registry.example.com/acme/manifests", TargetRevision: "v1"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var obj sourcev1.OCIRepository
	get(t, m, &obj, ObjectName(src, ""))
	if obj.Spec.URL != src.RepoURL || obj.Spec.Reference.Tag != "v1" || obj.Spec.Interval.Duration != time.Minute {
		t.Fatalf("OCIRepository %+v", obj.Spec)
	}
	dg := "sha256:" + strings.Repeat("b", 64)
	art := srv.add("/oci.tar.gz", "v1@"+dg, artifacttest.Files(t, map[string]string{"deploy.yaml": "kind: Deployment\n"}))
	setStatus(t, &obj, art, true, meta.SucceededReason, "stored artifact", false)
	f, err := m.Ensure(ctx, app("a", src), src, "")
	if err != nil || f.Revision != dg {
		t.Fatalf("Ensure = %+v, %v", f, err)
	}
}

func TestEnsureMissingArtifactIsNotReady(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	srv := newArtifactServer(t)
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/gone.git"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	art := srv.add("/gone.tar.gz", "HEAD@sha1:"+sha, artifacttest.Files(t, map[string]string{"a": "b"}))
	art.URL = srv.srv.URL + "/collected.tar.gz"
	setStatus(t, &repo, art, true, meta.SucceededReason, "stored artifact", false)
	_, err = m.Ensure(ctx, app("a", src), src, "")
	if nr := asNotReady(t, err); !strings.Contains(nr.Message, "artifact not found") {
		t.Errorf("NotReady %+v", nr)
	}
	entries, _ := os.ReadDir(m.CacheDir)
	if len(entries) != 0 {
		t.Errorf("a failed download left %d entries in the cache", len(entries))
	}
}

func TestRefreshRequestsAFetch(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	src := argov1.ApplicationSource{RepoURL: "https://charts.example.com", Chart: "x", TargetRevision: "1.0.0"}
	if err := m.Refresh(ctx, app("a", src), src, ""); err != nil {
		t.Fatalf("before the objects exist: %v", err)
	}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	if err := m.Refresh(ctx, app("a", src), src, ""); err != nil {
		t.Fatal(err)
	}
	var chart sourcev1.HelmChart
	get(t, m, &chart, ObjectName(src, ""))
	var repo sourcev1.HelmRepository
	get(t, m, &repo, repositoryName(src, ""))
	if chart.Annotations[meta.ReconcileRequestAnnotation] == "" || repo.Annotations[meta.ReconcileRequestAnnotation] == "" {
		t.Errorf("annotations %v %v", chart.Annotations, repo.Annotations)
	}
}

func TestConcurrentEnsuresShareOneDownload(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	srv := newArtifactServer(t)
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/busy.git"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	art := srv.add("/busy.tar.gz", "HEAD@sha1:"+sha, artifacttest.Files(t, map[string]string{"a.yaml": "a: 1\n"}))
	setStatus(t, &repo, art, true, meta.SucceededReason, "stored artifact", false)
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := m.Ensure(ctx, app("a", src), src, "")
			if err != nil {
				t.Errorf("Ensure %d: %v", i, err)
				return
			}
			dirs[i] = f.Dir
		}()
	}
	wg.Wait()
	for _, d := range dirs {
		if d != dirs[0] {
			t.Errorf("directories differ: %v", dirs)
			break
		}
	}
	if n := srv.hitsOf("/busy.tar.gz"); n != 1 {
		t.Errorf("downloaded %d times, want 1", n)
	}
}

func TestEnsureWritesNothingWhenUpToDate(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	argoSecret(t, m, "creds", "repo-creds", map[string]string{"url": "https://", "username": "u", "password": "p"})
	sources := []argov1.ApplicationSource{
		{RepoURL: "https://git.example.com/acme/infra.git", TargetRevision: "main"},
		{RepoURL: "https://charts.example.com", Chart: "x", TargetRevision: "1.0.0"},
		{RepoURL: "oci://registry.example.com/acme/manifests"},
	}
	versions := func() map[string]string {
		out := map[string]string{}
		for _, l := range []client.ObjectList{&sourcev1.GitRepositoryList{}, &sourcev1.HelmRepositoryList{},
			&sourcev1.HelmChartList{}, &sourcev1.OCIRepositoryList{}, &corev1.SecretList{}} {
			if err := env.Client.List(ctx, l, client.InNamespace(m.Namespace)); err != nil {
				t.Fatal(err)
			}
			items, _ := apimeta.ExtractList(l)
			for _, o := range items {
				obj := o.(client.Object)
				out[fmt.Sprintf("%T/%s", obj, obj.GetName())] = obj.GetResourceVersion()
			}
		}
		return out
	}
	for _, src := range sources {
		_, err := m.Ensure(ctx, app("a", src), src, "")
		asNotReady(t, err)
	}
	before := versions()
	for _, src := range sources {
		_, err := m.Ensure(ctx, app("a", src), src, "")
		asNotReady(t, err)
	}
	after := versions()
	// Seven: the OCI source has no Secret (https:// does not prefix oci://).
	if len(before) != 7 || !equalMaps(before, after) {
		t.Errorf("objects changed by an Ensure with nothing new:\nbefore %v\nafter  %v", before, after)
	}
}

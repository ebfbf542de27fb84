package source

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func TestGitRefMapsArgoRevisions(t *testing.T) {
	cases := []struct {
		rev, prefix string
		want        sourcev1.GitRepositoryRef
		err         bool
	}{
		{rev: "", want: sourcev1.GitRepositoryRef{Name: "HEAD"}},
		{rev: "HEAD", want: sourcev1.GitRepositoryRef{Name: "HEAD"}},
		{rev: sha, want: sourcev1.GitRepositoryRef{Commit: sha}},
		{rev: strings.ToUpper(sha), want: sourcev1.GitRepositoryRef{Commit: sha}},
		{rev: "refs/heads/feature/x", want: sourcev1.GitRepositoryRef{Name: "refs/heads/feature/x"}},
		{rev: "refs/tags/v1.0.0", want: sourcev1.GitRepositoryRef{Name: "refs/tags/v1.0.0"}},
		{rev: "main", want: sourcev1.GitRepositoryRef{Branch: "main"}},
		{rev: "feature/x", want: sourcev1.GitRepositoryRef{Branch: "feature/x"}},
		// A plain version is a name (a tag, or a branch), as Argo CD has it.
		{rev: "v1.2.0", want: sourcev1.GitRepositoryRef{Branch: "v1.2.0"}},
		{rev: "1.2", want: sourcev1.GitRepositoryRef{Branch: "1.2"}},
		{rev: "1.2.*", want: sourcev1.GitRepositoryRef{SemVer: "1.2.*"}},
		{rev: ">=1.0.0 <2.0.0", want: sourcev1.GitRepositoryRef{SemVer: ">=1.0.0 <2.0.0"}},
		{rev: "*", want: sourcev1.GitRepositoryRef{SemVer: "*"}},
		{rev: "*-0", want: sourcev1.GitRepositoryRef{SemVer: "*-0"}},
		{rev: "~1.2", want: sourcev1.GitRepositoryRef{SemVer: "~1.2"}},
		// A short SHA cannot be told from a name: tried as a branch.
		{rev: "0123456", want: sourcev1.GitRepositoryRef{Branch: "0123456"}},
		{rev: "ABCDEF0", want: sourcev1.GitRepositoryRef{Branch: "ABCDEF0"}},
		{rev: "v1.0.1", prefix: "app1/", want: sourcev1.GitRepositoryRef{Tag: "app1/v1.0.1"}},
		{rev: "v1.0.*", prefix: "app1/", err: true},
	}
	for _, tc := range cases {
		got, err := gitRef(tc.rev, tc.prefix)
		if tc.err {
			if err == nil {
				t.Errorf("gitRef(%q, %q) = %+v, want an error", tc.rev, tc.prefix, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("gitRef(%q, %q) = %+v, %v; want %+v", tc.rev, tc.prefix, got, err, tc.want)
		}
	}
}

// TestSwitchedFromRecognisesTheTagAndCommitOfABranchName: Ensure keeps
// the tag of the branch name it tried, and the commit a 7 to 39 hex name
// abbreviates.
func TestSwitchedFromRecognisesTheTagAndCommitOfABranchName(t *testing.T) {
	cases := []struct {
		cur    sourcev1.GitRepositoryRef
		branch string
		want   bool
	}{
		{sourcev1.GitRepositoryRef{Tag: "v1"}, "v1", true},
		{sourcev1.GitRepositoryRef{Tag: "v2"}, "v1", false},
		{sourcev1.GitRepositoryRef{Commit: "abcdef01"}, "ABCDEF01", true},
		{sourcev1.GitRepositoryRef{Commit: "abcdef01"}, "abcdef02", false},
		{sourcev1.GitRepositoryRef{Commit: "main"}, "main", false},
		{sourcev1.GitRepositoryRef{Branch: "abcdef01"}, "abcdef01", false},
		{sourcev1.GitRepositoryRef{Commit: sha}, sha, false}, // a full SHA is never a branch first
	}
	for _, tc := range cases {
		if got := switchedFrom(&tc.cur, tc.branch); got != tc.want {
			t.Errorf("switchedFrom(%+v, %q) = %v, want %v", tc.cur, tc.branch, got, tc.want)
		}
	}
}

func TestGitURLAcceptsArgoForms(t *testing.T) {
	cases := map[string]string{
		"https://github.com/acme/infra.git":     "https://github.com/acme/infra.git",
		" http://git.local/x ":                  "http://git.local/x",
		"ssh://git@github.com/acme/infra.git":   "ssh://git@github.com/acme/infra.git",
		"git@github.com:acme/infra.git":         "ssh://git@github.com/acme/infra.git",
		"git@github.com:/acme/infra.git":        "ssh://git@github.com/acme/infra.git",
		"someone@gitea.local:group/sub/repo":    "ssh://someone@gitea.local/group/sub/repo",
		"ftp://example.com/x":                   "",
		"github.com/acme/infra":                 "",
		"https://user:pa%zz@example.com/x.git":  "",
		"git://github.com/acme/infra.git":       "",
		"file:///tmp/repo":                      "",
		"oci://registry.example.com/manifests":  "",
		"https://GitHub.com/Acme/Infra.git/":    "https://GitHub.com/Acme/Infra.git/",
		"git@github.com:acme/infra.git/":        "ssh://git@github.com/acme/infra.git/",
		"ssh://git@github.com:2222/acme/x.git":  "ssh://git@github.com:2222/acme/x.git",
		"https://example.com:8443/scm/repo.git": "https://example.com:8443/scm/repo.git",
	}
	for in, want := range cases {
		got, err := gitURL(in)
		if want == "" {
			if err == nil {
				t.Errorf("gitURL(%q) = %q, want an error", in, got)
			} else if strings.Contains(err.Error(), "pa%zz") {
				t.Errorf("gitURL(%q) error %q shows the password", in, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("gitURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestNormalURLComparesAsArgoCD(t *testing.T) {
	same := [][2]string{
		{"https://github.com/Acme/Infra.git", "https://github.com/acme/infra"},
		{"https://github.com/acme/infra/", "https://github.com/acme/infra.git"},
		{"git@github.com:acme/infra.git", "ssh://git@github.com/acme/infra"},
	}
	for _, p := range same {
		if normalURL(p[0]) != normalURL(p[1]) {
			t.Errorf("%q and %q should be the same repository (%q, %q)", p[0], p[1], normalURL(p[0]), normalURL(p[1]))
		}
	}
	if normalURL("https://github.com/acme/infra") == normalURL("https://github.com/acme/infra2") {
		t.Error("different repositories compare equal")
	}
}

func TestMatchesRefChecksTheArtifactRevision(t *testing.T) {
	cases := []struct {
		ref  sourcev1.GitRepositoryRef
		rev  string
		want bool
	}{
		{sourcev1.GitRepositoryRef{Name: "HEAD"}, "HEAD@sha1:" + sha, true},
		{sourcev1.GitRepositoryRef{Name: "HEAD"}, "main@sha1:" + sha, false},
		{sourcev1.GitRepositoryRef{Branch: "main"}, "main@sha1:" + sha, true},
		{sourcev1.GitRepositoryRef{Branch: "main"}, "dev@sha1:" + sha, false},
		{sourcev1.GitRepositoryRef{Tag: "v1"}, "v1@sha1:" + sha, true},
		{sourcev1.GitRepositoryRef{Commit: sha}, "sha1:" + sha, true},
		{sourcev1.GitRepositoryRef{Commit: sha}, "sha1:" + strings.Repeat("f", 40), false},
		{sourcev1.GitRepositoryRef{Commit: sha[:8]}, "sha1:" + sha, true},
		{sourcev1.GitRepositoryRef{Commit: strings.ToUpper(sha[:7])}, "sha1:" + sha, true},
		{sourcev1.GitRepositoryRef{Commit: sha[:8]}, "sha1:" + strings.Repeat("f", 40), false},
		{sourcev1.GitRepositoryRef{Commit: sha[:8]}, "sha1:" + sha[:20], false},
		{sourcev1.GitRepositoryRef{SemVer: "1.2.*"}, "v1.2.7@sha1:" + sha, true},
		{sourcev1.GitRepositoryRef{SemVer: "1.2.*"}, "v1.3.0@sha1:" + sha, false},
		{sourcev1.GitRepositoryRef{Name: "refs/heads/x"}, "refs/heads/x@sha1:" + sha, true},
		{sourcev1.GitRepositoryRef{Branch: "main"}, "main", false},
	}
	for _, tc := range cases {
		if got := matchesRef(&tc.ref, tc.rev); got != tc.want {
			t.Errorf("matchesRef(%+v, %q) = %v, want %v", tc.ref, tc.rev, got, tc.want)
		}
	}
	if got := gitCommit("main@sha1:" + sha); got != sha {
		t.Errorf("gitCommit = %q", got)
	}
}

func TestObjectNameIsDeterministicPerSource(t *testing.T) {
	git := argov1.ApplicationSource{RepoURL: "https://git.local/x.git", Path: "a"}
	other := git
	other.Path = "b" // the path is not part of what is fetched
	head := git
	head.TargetRevision = "HEAD"
	if ObjectName(git, "") != ObjectName(other, "") || ObjectName(git, "") != ObjectName(head, "") {
		t.Error("sources differing only in path or an explicit HEAD should share an object")
	}
	if ObjectName(git, "") == ObjectName(git, sha) {
		t.Error("a revision override should get its own object")
	}
	main := git
	main.TargetRevision = "main"
	if ObjectName(main, "") == ObjectName(git, "") {
		t.Error("main and HEAD should get different objects")
	}
	n := ObjectName(git, "")
	if !strings.HasPrefix(n, "app-src-") || len(n) != len("app-src-")+10 {
		t.Errorf("ObjectName = %q, want app-src-<10 hex>", n)
	}
}

func TestKindsBySource(t *testing.T) {
	cases := []struct {
		src  argov1.ApplicationSource
		want []string
	}{
		{argov1.ApplicationSource{RepoURL: "https://git.local/x.git"}, []string{"GitRepository"}},
		{argov1.ApplicationSource{RepoURL: "git@github.com:a/b.git"}, []string{"GitRepository"}},
		{argov1.ApplicationSource{RepoURL: "https://charts.local", Chart: "nginx"}, []string{"HelmRepository", "HelmChart"}},
		{argov1.ApplicationSource{RepoURL: "oci://ghcr.io/acme/charts", Chart: "nginx"}, []string{"HelmRepository", "HelmChart"}},
		{argov1.ApplicationSource{RepoURL: "ghcr.io/acme/charts", Chart: "nginx"}, []string{"HelmRepository", "HelmChart"}},
		{argov1.ApplicationSource{RepoURL: "oci://ghcr.io/acme/manifests"}, []string{"OCIRepository"}},
	}
	for _, tc := range cases {
		if got := Kinds(tc.src); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Kinds(%+v) = %v, want %v", tc.src, got, tc.want)
		}
	}
	if got := canonicalURL(argov1.ApplicationSource{RepoURL: "ghcr.io/acme/charts", Chart: "x"}); got != "oci://ghcr.io/acme/charts" {
		t.Errorf("an OCI chart repository without scheme: %q", got)
	}
}

func TestOCIRefAndRevision(t *testing.T) {
	dg := "sha256:" + strings.Repeat("a", 64)
	cases := []struct {
		rev  string
		want sourcev1.OCIRepositoryRef
	}{
		{"", sourcev1.OCIRepositoryRef{Tag: "latest"}},
		{"v1.0.0", sourcev1.OCIRepositoryRef{Tag: "v1.0.0"}},
		{"1.x", sourcev1.OCIRepositoryRef{SemVer: "1.x"}},
		{dg, sourcev1.OCIRepositoryRef{Digest: dg}},
	}
	for _, tc := range cases {
		if got := ociRef(tc.rev); !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("ociRef(%q) = %+v, want %+v", tc.rev, got, tc.want)
		}
	}
	if !matchesOCI(&sourcev1.OCIRepositoryRef{Tag: "v1"}, "v1@"+dg) || matchesOCI(&sourcev1.OCIRepositoryRef{Tag: "v2"}, "v1@"+dg) {
		t.Error("tag matching")
	}
	if !matchesOCI(&sourcev1.OCIRepositoryRef{Digest: dg}, dg) || !matchesOCI(&sourcev1.OCIRepositoryRef{SemVer: "1.x"}, "1.4.0@"+dg) {
		t.Error("digest or semver matching")
	}
	if got := ociDigest("v1@" + dg); got != dg {
		t.Errorf("ociDigest = %q", got)
	}
}

func TestChartDirFindsTheChart(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"podinfo/Chart.yaml", "podinfo/charts/dep/Chart.yaml"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("name: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := chartDir(dir, "podinfo"); got != filepath.Join(dir, "podinfo") {
		t.Errorf("by name: %q", got)
	}
	if got := chartDir(dir, "renamed"); got != filepath.Join(dir, "podinfo") {
		t.Errorf("the only chart: %q", got)
	}
}

func TestUsesCoversOperations(t *testing.T) {
	src := argov1.ApplicationSource{RepoURL: "https://git.local/x.git", TargetRevision: "main"}
	app := argov1.Application{Spec: argov1.ApplicationSpec{Source: &src}}
	app.Operation = &argov1.Operation{Sync: &argov1.SyncOperation{Revision: sha}}
	got := Uses(&app)
	want := []SourceUse{{Source: src}, {Source: src, Revision: sha}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Uses = %+v, want %+v", got, want)
	}
}

package source

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// kind is how a source is fetched.
type kind int

const (
	kindGit      kind = iota // a GitRepository
	kindHelm                 // a HelmRepository (index) and a HelmChart
	kindOCIHelm              // a HelmRepository of type oci and a HelmChart
	kindOCI                  // an OCIRepository
	ociURLPrefix = sourcev1.OCIRepositoryPrefix
)

// kindOf tells a source's kind as Argo CD does (argocd-contract §1.2): a
// chart name means a Helm chart, from an OCI registry when repoURL is
// oci:// or has no scheme; otherwise oci:// is an OCI artifact and the rest
// is Git.
func kindOf(src argov1.ApplicationSource) kind {
	oci := strings.HasPrefix(src.RepoURL, ociURLPrefix)
	switch {
	case src.Chart != "" && (oci || !strings.Contains(src.RepoURL, "://")):
		return kindOCIHelm
	case src.Chart != "":
		return kindHelm
	case oci:
		return kindOCI
	}
	return kindGit
}

// wantedRevision is revision when set, else targetRevision; for Git an
// empty one is HEAD (argocd-contract §1.3).
func wantedRevision(src argov1.ApplicationSource, revision string) string {
	rev := strings.TrimSpace(revision)
	if rev == "" {
		rev = strings.TrimSpace(src.TargetRevision)
	}
	if rev == "" && kindOf(src) == kindGit {
		rev = "HEAD"
	}
	return rev
}

var (
	commitSHA = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)
	// shortSHA is a truncated commit SHA, tried after branch and tag
	// (Argo CD's truncated-SHA pattern, less the full length).
	shortSHA   = regexp.MustCompile(`^[0-9a-fA-F]{7,39}$`)
	scpLikeURL = regexp.MustCompile(`^([^/:@]+@)?([^/:]+):(.*)$`)
)

// isConstraint is Argo CD's test for a semver constraint: it parses as a
// constraint and not as a plain version (a plain version such as v1.2.0
// is a tag or branch name).
func isConstraint(rev string) bool {
	if _, err := semver.NewVersion(rev); err == nil {
		return false
	}
	_, err := semver.NewConstraint(rev)
	return err == nil
}

// gitRef maps a wanted Git revision to a GitRepository ref
// (argocd-contract §1.3): HEAD to ref.name HEAD, a 40-hex SHA to
// ref.commit, refs/... to ref.name, a semver constraint to ref.semver, and
// any other name to ref.branch (Ensure switches it to ref.tag when the
// branch does not exist, then a 7 to 39 hex name to ref.commit when the
// tag does not either: Argo CD tries a truncated SHA as a ref first). tagPrefix is prepended to a name tried as a tag;
// with a constraint it is refused: source-controller's semver matches all
// tags, unprefixed.
func gitRef(rev, tagPrefix string) (*sourcev1.GitRepositoryRef, error) {
	switch {
	case rev == "" || rev == "HEAD":
		return &sourcev1.GitRepositoryRef{Name: "HEAD"}, nil
	case commitSHA.MatchString(rev):
		return &sourcev1.GitRepositoryRef{Commit: strings.ToLower(rev)}, nil
	case strings.HasPrefix(rev, "refs/"):
		return &sourcev1.GitRepositoryRef{Name: rev}, nil
	case isConstraint(rev):
		if tagPrefix != "" {
			return nil, fmt.Errorf("tagPrefix %q with the semver constraint %q is not supported", tagPrefix, rev)
		}
		return &sourcev1.GitRepositoryRef{SemVer: rev}, nil
	case tagPrefix != "":
		return &sourcev1.GitRepositoryRef{Tag: tagPrefix + rev}, nil
	}
	return &sourcev1.GitRepositoryRef{Branch: rev}, nil
}

// gitURL is repoURL as GitRepository's spec.url accepts it (http, https
// or ssh://): the scp-like form user@host:path becomes
// ssh://user@host/path, as Argo CD reads it.
func gitURL(repoURL string) (string, error) {
	u := strings.TrimSpace(repoURL)
	if strings.Contains(u, "://") {
		parsed, err := url.Parse(u)
		if err != nil {
			return "", errors.New("repoURL is not a valid URL") // url's error may quote userinfo
		}
		switch parsed.Scheme {
		case "http", "https", "ssh":
			return u, nil
		}
		return "", fmt.Errorf("repoURL scheme %q is not supported for Git", parsed.Scheme)
	}
	if m := scpLikeURL.FindStringSubmatch(u); m != nil && m[1] != "" {
		return "ssh://" + m[1] + m[2] + "/" + strings.TrimPrefix(m[3], "/"), nil
	}
	return "", fmt.Errorf("repoURL %q is neither an http(s):// nor an SSH URL", u)
}

// splitUserinfo takes the credentials out of an http(s) URL
// (https://user:pass@host/...): they go to the derived Secret, never into
// the source object's spec. Other URLs come back as they are.
func splitUserinfo(raw string) (clean, user, pass string) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || (u.Scheme != "http" && u.Scheme != "https") {
		return raw, "", ""
	}
	user = u.User.Username()
	pass, _ = u.User.Password()
	u.User = nil
	return u.String(), user, pass
}

// normalURL is Argo CD's normal form of a repository URL for comparing
// Secrets' urls with a repoURL (argocd-contract §8.3): lower case, no
// ".git" suffix nor trailing slash, scp-like SSH as a host/path, no
// "ssh://" prefix.
func normalURL(raw string) string {
	u := strings.ToLower(strings.TrimSpace(raw))
	if !strings.Contains(u, "://") {
		if m := scpLikeURL.FindStringSubmatch(u); m != nil && m[1] != "" {
			u = m[1] + m[2] + "/" + strings.TrimPrefix(m[3], "/")
		}
	}
	u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
	return strings.TrimPrefix(u, "ssh://")
}

// matchesRef reports whether a GitRepository artifact revision
// (`<ref>@sha1:<hex>`, or `sha1:<hex>` for a bare commit) was produced for
// ref: same commit, same ref name, or a tag satisfying the constraint.
func matchesRef(ref *sourcev1.GitRepositoryRef, artifactRevision string) bool {
	name, sha, ok := strings.Cut(artifactRevision, "sha1:")
	if !ok || sha == "" {
		return false
	}
	name = strings.TrimSuffix(name, "@")
	switch {
	case ref.Commit != "" && len(ref.Commit) < len(sha):
		return len(sha) == 40 && strings.HasPrefix(strings.ToLower(sha), strings.ToLower(ref.Commit))
	case ref.Commit != "":
		return strings.EqualFold(sha, ref.Commit)
	case ref.Name != "":
		return name == ref.Name
	case ref.Tag != "":
		return name == ref.Tag
	case ref.SemVer != "":
		return satisfies(ref.SemVer, name)
	}
	return name == ref.Branch
}

// satisfies reports whether version satisfies constraint; an exact version
// is compared as a version (1.0 equals 1.0.0).
func satisfies(constraint, version string) bool {
	v, err := semver.NewVersion(version)
	if err != nil {
		return constraint == version
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return constraint == version
	}
	return c.Check(v)
}

// gitCommit is the commit SHA of a GitRepository artifact revision.
func gitCommit(artifactRevision string) string {
	_, sha, _ := strings.Cut(artifactRevision, "sha1:")
	return sha
}

// ociRef maps a wanted OCI revision: a digest, a semver constraint, or a
// tag (latest when empty or HEAD).
func ociRef(rev string) *sourcev1.OCIRepositoryRef {
	switch {
	case strings.HasPrefix(rev, "sha256:"):
		return &sourcev1.OCIRepositoryRef{Digest: rev}
	case isConstraint(rev):
		return &sourcev1.OCIRepositoryRef{SemVer: rev}
	case rev == "" || rev == "HEAD":
		return &sourcev1.OCIRepositoryRef{Tag: "latest"}
	}
	return &sourcev1.OCIRepositoryRef{Tag: rev}
}

// matchesOCI reports whether an OCIRepository artifact revision
// (`<tag>@sha256:<hex>` or `sha256:<hex>`) was produced for ref.
func matchesOCI(ref *sourcev1.OCIRepositoryRef, artifactRevision string) bool {
	tag, dgst, ok := strings.Cut(artifactRevision, "sha256:")
	if !ok {
		return false
	}
	tag = strings.TrimSuffix(tag, "@")
	switch {
	case ref.Digest != "":
		return "sha256:"+dgst == ref.Digest
	case ref.SemVer != "":
		return satisfies(ref.SemVer, tag)
	}
	return tag == ref.Tag
}

// ociDigest is the digest of an OCIRepository artifact revision.
func ociDigest(artifactRevision string) string {
	_, dgst, _ := strings.Cut(artifactRevision, "sha256:")
	return "sha256:" + dgst
}

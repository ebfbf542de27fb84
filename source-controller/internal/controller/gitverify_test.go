package controller

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"golang.org/x/crypto/ssh"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// wantCondition fails t unless got has condition typ with status, reason and message.
func wantCondition(t testing.TB, got *sourcev1.GitRepository, typ string, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	c := apimeta.FindStatusCondition(got.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason || c.Message != msg {
		t.Errorf("condition %s = %+v, want %s %s %q", typ, c, status, reason, msg)
	}
}

// TestVerifiedCommitIsServed serves a commit signed by a trusted key, with
// Flux's SourceVerified message and the mode recorded; "head" is HEAD.
func TestVerifiedCommitIsServed(t *testing.T) {
	key, pub := newPGPKey(t, "trusted")
	r := newRepo(t, nil)
	head := commitSigned(t, r, key, map[string]string{"app.yaml": "a"}, "signed")
	ns := newNamespace(t)
	newKeysSecret(t, ns, "keys", map[string]string{"author.asc": pub})
	got := waitReady(t, newGitRepository(t, ns, "verified", r.URL(), verifying("head", sourcev1.GitRepositoryRef{Branch: "main"})))
	if got.Status.Artifact.Revision != "main@sha1:"+head {
		t.Errorf("artifact revision %s, want main@sha1:%s", got.Status.Artifact.Revision, head)
	}
	wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason,
		fmt.Sprintf("verified signature of\n\t- commit '%s' with key '%s'", head, key.PrimaryKey.KeyIdString()))
	if m := got.Status.SourceVerificationMode; m == nil || *m != sourcev1.ModeGitHEAD {
		t.Errorf("sourceVerificationMode %v, want HEAD", m)
	}
}

// TestUnverifiedCommitIsNotServed refuses a commit that is unsigned or
// signed by an untrusted key, and fails when the keys' Secret is missing
// or holds no PGP key, with Flux's reasons and messages; nothing is stored.
func TestUnverifiedCommitIsNotServed(t *testing.T) {
	trusted, pub := newPGPKey(t, "trusted")
	other, _ := newPGPKey(t, "other")
	ns := newNamespace(t)
	newKeysSecret(t, ns, "keys", map[string]string{"author.asc": pub})
	cases := []struct {
		name   string
		commit func(*repo) string
		secret string // the Secret named by spec.verify
		reason string
		msg    func(head string) string
	}{
		{"untrusted", func(r *repo) string { return commitSigned(t, r, other, map[string]string{"a": "1"}, "x") }, "keys",
			sourcev1.InvalidCommitSignatureReason, func(h string) string {
				return "signature verification of commit '" + h + "' failed: unable to verify Git commit: unable to verify payload with any of the given key rings: no matching key"
			}},
		{"unsigned", func(r *repo) string { return commitSigned(t, r, nil, map[string]string{"a": "1"}, "x") }, "keys",
			sourcev1.InvalidCommitSignatureReason, func(h string) string {
				return "signature verification of commit '" + h + "' failed: unsupported signature type: empty"
			}},
		{"missing-secret", func(r *repo) string { return commitSigned(t, r, trusted, map[string]string{"a": "1"}, "x") }, "absent",
			sourcev1.VerificationErrorReason, func(string) string { return `public keys secret error: secrets "absent" not found` }},
		{"no-pgp-keys", func(r *repo) string { return commitSigned(t, r, trusted, map[string]string{"a": "1"}, "x") }, "ssh-only",
			sourcev1.InvalidCommitSignatureReason, func(h string) string {
				return "signature verification of commit '" + h + "' failed: PGP signature detected but no PGP public keys found in secret (keys with .asc suffix)"
			}},
	}
	newKeysSecret(t, ns, "ssh-only", map[string]string{"author.sshpub": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb0Q1tJZc7pbbpwSMdhvUxRFuLSr7J2T9f2m1Vb2Xk7 a@b"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t, nil)
			head := tc.commit(r)
			got := waitNotReady(t, newGitRepository(t, ns, tc.name, r.URL(), func(o *sourcev1.GitRepository) {
				verifying(sourcev1.ModeGitHEAD, sourcev1.GitRepositoryRef{Branch: "main"})(o)
				o.Spec.Verification.SecretRef.Name = tc.secret
			}))
			wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, tc.reason, tc.msg(head))
			wantCondition(t, got, meta.ReadyCondition, metav1.ConditionFalse, tc.reason, tc.msg(head))
			if got.Status.Artifact != nil || got.Status.SourceVerificationMode != nil {
				t.Errorf("artifact %v and mode %v recorded for an unverified commit", got.Status.Artifact, got.Status.SourceVerificationMode)
			}
			if apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition) {
				t.Error("Stalled: the remote or the Secret may change")
			}
		})
	}
}

// TestTagVerification verifies the annotated tag spec.ref points at (tag,
// semver or a refs/tags/ name), alone or with its commit, and refuses a
// lightweight, unsigned or untrusted tag; Tag mode on a branch stalls.
func TestTagVerification(t *testing.T) {
	trusted, pub := newPGPKey(t, "trusted")
	other, _ := newPGPKey(t, "other")
	id := trusted.PrimaryKey.KeyIdString()
	r := newRepo(t, nil)
	head := commitSigned(t, r, trusted, map[string]string{"app.yaml": "a"}, "signed")
	signed := tagSigned(t, r, trusted, "v1.0.0")
	unsigned := tagSigned(t, r, nil, "v1.1.0-unsigned")
	untrusted := tagSigned(t, r, other, "v1.2.0-other")
	r.MustGit(t, "tag", "light")
	r.MustGit(t, "push", "-q", r.Bare, "refs/tags/light")
	ns := newNamespace(t)
	newKeysSecret(t, ns, "keys", map[string]string{"author.asc": pub})

	tagLine := fmt.Sprintf("\n\t- tag 'v1.0.0@%s' with key '%s'", signed, id)
	commitLine := fmt.Sprintf("\n\t- commit '%s' with key '%s'", head, id)
	for _, tc := range []struct {
		name  string
		mode  sourcev1.GitVerificationMode
		ref   sourcev1.GitRepositoryRef
		rev   string
		lines string
	}{
		{"tag", sourcev1.ModeGitTag, sourcev1.GitRepositoryRef{Tag: "v1.0.0"}, "v1.0.0@sha1:" + head, tagLine},
		{"semver", sourcev1.ModeGitTagAndHEAD, sourcev1.GitRepositoryRef{SemVer: "~1.0"}, "v1.0.0@sha1:" + head, tagLine + commitLine},
		{"name", sourcev1.ModeGitTag, sourcev1.GitRepositoryRef{Name: "refs/tags/v1.0.0"}, "refs/tags/v1.0.0@sha1:" + head, tagLine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := waitReady(t, newGitRepository(t, ns, tc.name, r.URL(), verifying(tc.mode, tc.ref)))
			if got.Status.Artifact.Revision != tc.rev {
				t.Errorf("artifact revision %s, want %s", got.Status.Artifact.Revision, tc.rev)
			}
			wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason, "verified signature of"+tc.lines)
			if m := got.Status.SourceVerificationMode; m == nil || *m != tc.mode {
				t.Errorf("sourceVerificationMode %v, want %s", m, tc.mode)
			}
		})
	}
	for _, tc := range []struct {
		name, tag, reason, msg string
	}{
		{"lightweight", "light", sourcev1.InvalidGitObjectReason, "cannot verify signature of tag 'light' since it is not signed"},
		{"unsigned", "v1.1.0-unsigned", sourcev1.InvalidGitObjectReason,
			"cannot verify signature of tag 'v1.1.0-unsigned@" + unsigned + "' since it is not signed"},
		{"untrusted", "v1.2.0-other", sourcev1.InvalidTagSignatureReason,
			"signature verification of tag 'v1.2.0-other@" + untrusted + "' failed: unable to verify Git tag: unable to verify payload with any of the given key rings: no matching key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := waitNotReady(t, newGitRepository(t, ns, tc.name, r.URL(), verifying(sourcev1.ModeGitTagAndHEAD, sourcev1.GitRepositoryRef{Tag: tc.tag})))
			wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, tc.reason, tc.msg)
			if got.Status.Artifact != nil {
				t.Errorf("artifact %v stored for an unverified tag", got.Status.Artifact)
			}
		})
	}
	t.Run("branch", func(t *testing.T) {
		got := waitNotReady(t, newGitRepository(t, ns, "branch", r.URL(), verifying(sourcev1.ModeGitTag, sourcev1.GitRepositoryRef{Branch: "main"})))
		wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, sourcev1.InvalidVerificationModeReason,
			"cannot verify tag object's signature if a tag reference is not specified")
		if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition) {
			t.Error("not Stalled: only a spec change can help")
		}
	})
}

// TestUnverifiedPushKeepsLastVerifiedArtifact keeps serving the last
// verified commit when an unsigned one is pushed, not marked outdated, and
// moves on at the next signed commit.
func TestUnverifiedPushKeepsLastVerifiedArtifact(t *testing.T) {
	key, pub := newPGPKey(t, "trusted")
	r := newRepo(t, nil)
	first := commitSigned(t, r, key, map[string]string{"app.yaml": "v1"}, "signed")
	ns := newNamespace(t)
	newKeysSecret(t, ns, "keys", map[string]string{"author.asc": pub})
	obj := newGitRepository(t, ns, "pushed", r.URL(), verifying(sourcev1.ModeGitHEAD, sourcev1.GitRepositoryRef{Branch: "main"}))
	verified := waitReady(t, obj)

	bad := commitSigned(t, r, nil, map[string]string{"app.yaml": "v2"}, "unsigned")
	got := requestReconcile(t, obj)
	msg := "signature verification of commit '" + bad + "' failed: unsupported signature type: empty"
	wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, sourcev1.InvalidCommitSignatureReason, msg)
	wantCondition(t, got, meta.ReadyCondition, metav1.ConditionFalse, sourcev1.InvalidCommitSignatureReason, msg)
	if a := got.Status.Artifact; a == nil || a.Revision != "main@sha1:"+first || a.Digest != verified.Status.Artifact.Digest {
		t.Errorf("artifact %+v, want the verified main@sha1:%s", a, first)
	} else if files := untar(t, download(t, a)); string(files["app.yaml"]) != "v1" {
		t.Errorf("served app.yaml %q, want the verified v1", files["app.yaml"])
	}
	if c := apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.ArtifactOutdatedCondition); c != nil {
		t.Errorf("ArtifactOutdated %+v for an unverified revision", c)
	}

	next := commitSigned(t, r, key, map[string]string{"app.yaml": "v3"}, "signed again")
	requestReconcile(t, obj)
	got = waitReady(t, obj)
	if got.Status.Artifact.Revision != "main@sha1:"+next {
		t.Errorf("artifact revision %s, want main@sha1:%s", got.Status.Artifact.Revision, next)
	}
	wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason,
		fmt.Sprintf("verified signature of\n\t- commit '%s' with key '%s'", next, key.PrimaryKey.KeyIdString()))
}

// TestVerificationRedoneOnlyWhenNeeded does not verify an unchanged,
// verified revision again (a deleted Secret goes unnoticed, as in Flux),
// verifies it again when the mode asks for more, and drops the
// verification status when spec.verify goes.
func TestVerificationRedoneOnlyWhenNeeded(t *testing.T) {
	key, pub := newPGPKey(t, "trusted")
	r := newRepo(t, nil)
	head := commitSigned(t, r, key, map[string]string{"app.yaml": "a"}, "signed")
	tag := tagSigned(t, r, key, "v1.0.0")
	ns := newNamespace(t)
	newKeysSecret(t, ns, "keys", map[string]string{"author.asc": pub})
	obj := newGitRepository(t, ns, "redo", r.URL(), verifying(sourcev1.ModeGitTag, sourcev1.GitRepositoryRef{Tag: "v1.0.0"}))
	waitReady(t, obj)
	id := key.PrimaryKey.KeyIdString()
	tagOnly := fmt.Sprintf("verified signature of\n\t- tag 'v1.0.0@%s' with key '%s'", tag, id)

	update(t, obj, func(o *sourcev1.GitRepository) { o.Spec.Verification.Mode = sourcev1.ModeGitTagAndHEAD })
	got := waitFor(t, obj, "verified again", func(o *sourcev1.GitRepository) bool {
		return settled(o) && o.Status.SourceVerificationMode != nil && *o.Status.SourceVerificationMode == sourcev1.ModeGitTagAndHEAD
	})
	wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason,
		tagOnly+fmt.Sprintf("\n\t- commit '%s' with key '%s'", head, id))

	// Narrower than what was verified, and the keys gone: not verified again.
	update(t, obj, func(o *sourcev1.GitRepository) { o.Spec.Verification.Mode = sourcev1.ModeGitTag })
	deleteSecret(t, ns, "keys")
	got = requestReconcile(t, waitReady(t, obj))
	if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.ReadyCondition) ||
		!apimeta.IsStatusConditionTrue(got.Status.Conditions, sourcev1.SourceVerifiedCondition) {
		t.Errorf("conditions %+v: the verified revision was verified again", got.Status.Conditions)
	}

	update(t, obj, func(o *sourcev1.GitRepository) { o.Spec.Verification = nil })
	got = waitReady(t, obj)
	if c := apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.SourceVerifiedCondition); c != nil || got.Status.SourceVerificationMode != nil {
		t.Errorf("SourceVerified %+v and mode %v kept without spec.verify", c, got.Status.SourceVerificationMode)
	}
}

// TestRequiresVerification redoes a verification when none is recorded or
// the recorded mode does not cover the one asked for, as Flux.
func TestRequiresVerification(t *testing.T) {
	modes := []sourcev1.GitVerificationMode{"head", sourcev1.ModeGitHEAD, sourcev1.ModeGitTag, sourcev1.ModeGitTagAndHEAD}
	want := map[[2]string]bool{ // {asked, recorded} → verify again
		{"head", "Tag"}: true, {"HEAD", "Tag"}: true, {"Tag", "HEAD"}: true, {"TagAndHEAD", "HEAD"}: true, {"TagAndHEAD", "Tag"}: true,
	}
	for _, asked := range modes {
		obj := &sourcev1.GitRepository{Spec: sourcev1.GitRepositorySpec{Verification: &sourcev1.GitRepositoryVerification{Mode: asked}}}
		if !requiresVerification(obj) {
			t.Errorf("mode %s, nothing recorded: not verified", asked)
		}
		for _, recorded := range modes[1:] {
			obj.Status.SourceVerificationMode = &recorded
			if got := requiresVerification(obj); got != want[[2]string{string(asked), string(recorded)}] {
				t.Errorf("mode %s, recorded %s: verify again %v", asked, recorded, got)
			}
		}
	}
	if requiresVerification(&sourcev1.GitRepository{}) {
		t.Error("verified without spec.verify")
	}
}

// TestSSHSignaturesVerified verifies a commit and a tag that git signed
// with SSH keys (gpg.format ssh, ed25519 and RSA) against the Secret's
// `*.sshpub` keys, naming each key by its SHA256 fingerprint, and refuses
// a commit signed by a key not listed.
func TestSSHSignaturesVerified(t *testing.T) {
	dir := t.TempDir()
	sshKey := func(name string, args ...string) (path, pub, fp string) {
		path = filepath.Join(dir, name)
		if out, err := exec.Command("ssh-keygen", append([]string{"-q", "-N", "", "-C", name, "-f", path}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
		b, err := os.ReadFile(path + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			t.Fatal(err)
		}
		return path, string(b), ssh.FingerprintSHA256(k)
	}
	edKey, edPub, edFP := sshKey("ed", "-t", "ed25519")
	rsaKey, rsaPub, rsaFP := sshKey("rsa", "-t", "rsa", "-b", "2048")
	otherKey, _, _ := sshKey("other", "-t", "ed25519")
	signWith := func(key string) []string { return []string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + key} }

	r := newRepo(t, map[string]string{"app.yaml": "a"})
	r.MustGit(t, append(signWith(edKey), "commit", "-q", "-S", "--allow-empty", "-m", "ssh signed")...)
	head := r.MustGit(t, "rev-parse", "HEAD")
	r.MustGit(t, append(signWith(rsaKey), "tag", "-s", "-m", "release", "v2.0.0")...)
	tag := r.MustGit(t, "rev-parse", "refs/tags/v2.0.0")
	r.MustGit(t, "push", "-q", "--force", r.Bare, "HEAD:main", "refs/tags/v2.0.0")
	ns := newNamespace(t)
	newKeysSecret(t, ns, "keys", map[string]string{"team.sshpub": "# team\n" + edPub + rsaPub})

	got := waitReady(t, newGitRepository(t, ns, "ssh", r.URL(), verifying(sourcev1.ModeGitTagAndHEAD, sourcev1.GitRepositoryRef{Tag: "v2.0.0"})))
	wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason, fmt.Sprintf(
		"verified signature of\n\t- tag 'v2.0.0@%s' with key '%s'\n\t- commit '%s' with key '%s'", tag, rsaFP, head, edFP))

	r.MustGit(t, append(signWith(otherKey), "commit", "-q", "-S", "--allow-empty", "-m", "other key")...)
	r.MustGit(t, "push", "-q", "--force", r.Bare, "HEAD:main")
	bad := r.MustGit(t, "rev-parse", "HEAD")
	got = waitNotReady(t, newGitRepository(t, ns, "ssh-untrusted", r.URL(), verifying(sourcev1.ModeGitHEAD, sourcev1.GitRepositoryRef{Branch: "main"})))
	wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, sourcev1.InvalidCommitSignatureReason,
		"signature verification of commit '"+bad+"' failed: unable to verify Git commit SSH signature: unable to verify payload with any of the given authorized keys: no matching key")
}

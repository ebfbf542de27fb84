package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// This file holds spec.verify: the OpenPGP (and SSH) signatures of the
// checked-out commit and of the annotated tag it was reached by. Flux
// compatible: reasons, messages, status.sourceVerificationMode and when a
// revision is verified again (contract §3.4).

// The Secret's data keys: `*.sshpub` hold SSH authorized keys; `*.asc`,
// and any other key (Flux's fallback), armored PGP key rings.
const (
	pgpKeySuffix = ".asc"
	sshKeySuffix = ".sshpub"
)

// trustedKeys are the public keys of spec.verify.secretRef.
type trustedKeys struct {
	keyRings, authorizedKeys []string
}

// signedObject is a commit or tag: its signature and the bytes it signs.
type signedObject struct {
	// kind names it in messages: "commit" or "tag".
	kind      string
	signature string
	payload   []byte
}

// prepareVerification runs before a reconcile: without spec.verify (or
// with an empty mode, as Flux) the verification status is dropped at once;
// a failed verification is dropped, to be redone. A past success stays:
// it is of the artifact still served.
func prepareVerification(obj *sourcev1.GitRepository) {
	if v := obj.Spec.Verification; v == nil || v.Mode == "" {
		obj.Status.SourceVerificationMode = nil
		reconciler.RemoveConditions(obj, sourcev1.SourceVerifiedCondition)
		return
	}
	if apimeta.IsStatusConditionFalse(obj.Status.Conditions, sourcev1.SourceVerifiedCondition) {
		reconciler.RemoveConditions(obj, sourcev1.SourceVerifiedCondition)
	}
}

// requiresVerification reports whether the stored artifact must be built
// again to be verified: spec.verify asks for it and the last verification
// (status.sourceVerificationMode) did not cover the objects it names.
func requiresVerification(obj *sourcev1.GitRepository) bool {
	v := obj.Spec.Verification
	if v == nil || v.Mode == "" {
		return false
	}
	observed := obj.Status.SourceVerificationMode
	if observed == nil {
		return true
	}
	verifiedHEAD := *observed == sourcev1.ModeGitHEAD || *observed == sourcev1.ModeGitTagAndHEAD
	verifiedTag := *observed == sourcev1.ModeGitTag || *observed == sourcev1.ModeGitTagAndHEAD
	return (verifyHEAD(v) && !verifiedHEAD) || (verifyTag(v) && !verifiedTag)
}

// verificationMode is spec.verify.mode, its alias "head" (or any unknown
// mode) read as HEAD. Flux compatible.
func verificationMode(v *sourcev1.GitRepositoryVerification) sourcev1.GitVerificationMode {
	switch v.Mode {
	case sourcev1.ModeGitTag, sourcev1.ModeGitTagAndHEAD:
		return v.Mode
	}
	return sourcev1.ModeGitHEAD
}

func verifyHEAD(v *sourcev1.GitRepositoryVerification) bool {
	m := verificationMode(v)
	return m == sourcev1.ModeGitHEAD || m == sourcev1.ModeGitTagAndHEAD
}

func verifyTag(v *sourcev1.GitRepositoryVerification) bool {
	m := verificationMode(v)
	return m == sourcev1.ModeGitTag || m == sourcev1.ModeGitTagAndHEAD
}

// verifyFailed is a failure of condition SourceVerified.
func verifyFailed(reason, format string, args ...any) *reconciler.Failure {
	f := reconciler.Fail(reason, format, args...)
	f.Condition = sourcev1.SourceVerifiedCondition
	return f
}

// verifySignatures checks the signatures spec.verify asks for: of tag, the
// annotated tag the commit was reached by (nil for none or a lightweight
// one; tagRef is the target's ref), and of commit. On success it records
// SourceVerified=True and status.sourceVerificationMode; a failure leaves
// the stored artifact as it is.
func (r *GitRepositoryReconciler) verifySignatures(ctx context.Context, obj *sourcev1.GitRepository, tagRef plumbing.ReferenceName,
	tag *object.Tag, commit *object.Commit) *reconciler.Failure {
	v := obj.Spec.Verification
	if v == nil || v.Mode == "" {
		return nil
	}
	keys, f := r.trustedKeys(ctx, obj.Namespace, v.SecretRef.Name)
	if f != nil {
		return f
	}
	var msg strings.Builder
	msg.WriteString("verified signature of")
	if verifyTag(v) {
		if !tagRef.IsTag() {
			f := verifyFailed(sourcev1.InvalidVerificationModeReason, "cannot verify tag object's signature if a tag reference is not specified")
			f.Stalled = true
			return f
		}
		name := tagName(tagRef, tag)
		if tag == nil || tag.PGPSignature == "" {
			return verifyFailed(sourcev1.InvalidGitObjectReason, "cannot verify signature of tag '%s' since it is not signed", name)
		}
		payload, err := encodeWithoutSignature(tag)
		if err != nil {
			return verifyFailed(sourcev1.InvalidTagSignatureReason, "signature verification of tag '%s' failed: %s", name, err)
		}
		key, err := keys.verify(signedObject{kind: "tag", signature: tag.PGPSignature, payload: payload})
		if err != nil {
			return verifyFailed(sourcev1.InvalidTagSignatureReason, "signature verification of tag '%s' failed: %s", name, err)
		}
		fmt.Fprintf(&msg, "\n\t- tag '%s' with key '%s'", name, key)
	}
	if verifyHEAD(v) {
		payload, err := encodeWithoutSignature(commit)
		if err != nil {
			return verifyFailed(sourcev1.InvalidCommitSignatureReason, "signature verification of commit '%s' failed: %s", commit.Hash, err)
		}
		key, err := keys.verify(signedObject{kind: "commit", signature: commit.PGPSignature, payload: payload})
		if err != nil {
			return verifyFailed(sourcev1.InvalidCommitSignatureReason, "signature verification of commit '%s' failed: %s", commit.Hash, err)
		}
		fmt.Fprintf(&msg, "\n\t- commit '%s' with key '%s'", commit.Hash, key)
	}
	mode := verificationMode(v)
	obj.Status.SourceVerificationMode = &mode
	reconciler.SetCondition(obj, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason, msg.String())
	r.Events.Event(obj, events.EventTypeTrace, meta.SucceededReason, msg.String(), nil)
	return nil
}

// tagName names a tag in messages as Flux does: `<name>@<tag object hash>`
// for an annotated tag, the ref's short name for a lightweight one.
func tagName(ref plumbing.ReferenceName, tag *object.Tag) string {
	if tag == nil {
		return ref.Short()
	}
	return tag.Name + "@" + tag.Hash.String()
}

// encodeWithoutSignature is the object as its signature signs it.
func encodeWithoutSignature(o interface {
	EncodeWithoutSignature(plumbing.EncodedObject) error
}) ([]byte, error) {
	enc := &plumbing.MemoryObject{}
	if err := o.EncodeWithoutSignature(enc); err != nil {
		return nil, err
	}
	rd, err := enc.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// trustedKeys reads the keys of the Secret name. Flux compatible: a
// missing Secret fails with VerificationError.
func (r *GitRepositoryReconciler) trustedKeys(ctx context.Context, namespace, name string) (trustedKeys, *reconciler.Failure) {
	secret := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, secret); err != nil {
		return trustedKeys{}, verifyFailed(sourcev1.VerificationErrorReason, "public keys secret error: %s", err)
	}
	var k trustedKeys
	for key, value := range secret.Data {
		if strings.HasSuffix(key, sshKeySuffix) {
			k.authorizedKeys = append(k.authorizedKeys, string(value))
		} else {
			k.keyRings = append(k.keyRings, string(value))
		}
	}
	return k, nil
}

// signatureType classifies an armored Git signature as Flux does:
// openpgp, ssh, x509, empty or unknown.
func signatureType(sig string) string {
	s := strings.TrimSpace(sig)
	switch {
	case strings.HasPrefix(s, "-----BEGIN PGP SIGNATURE-----"):
		return "openpgp"
	case strings.HasPrefix(s, "-----BEGIN SSH SIGNATURE-----"):
		return "ssh"
	case strings.HasPrefix(s, "-----BEGIN SIGNED MESSAGE-----"):
		return "x509"
	case sig == "":
		return "empty"
	}
	return "unknown"
}

// verify checks o's signature with the keys of its type and returns the
// key that made it: a PGP key ID or an SSH key's SHA256 fingerprint.
func (k trustedKeys) verify(o signedObject) (string, error) {
	switch t := signatureType(o.signature); t {
	case "openpgp":
		if len(k.keyRings) == 0 {
			return "", fmt.Errorf("PGP signature detected but no PGP public keys found in secret (keys with %s suffix)", pgpKeySuffix)
		}
		id, err := verifyPGP(o.signature, o.payload, k.keyRings)
		if err != nil {
			return "", fmt.Errorf("unable to verify Git %s: %w", o.kind, err)
		}
		return id, nil
	case "ssh":
		if len(k.authorizedKeys) == 0 {
			return "", fmt.Errorf("SSH signature detected but no SSH public keys found in secret (keys with %s suffix)", sshKeySuffix)
		}
		fp, err := verifySSH(o.signature, o.payload, k.authorizedKeys)
		if err != nil {
			return "", fmt.Errorf("unable to verify Git %s SSH signature: %w", o.kind, err)
		}
		return fp, nil
	default:
		return "", fmt.Errorf("unsupported signature type: %s", t)
	}
}

// errNoMatchingKey: none of the trusted keys made the signature.
var errNoMatchingKey = errors.New("no matching key")

// verifyPGP checks the armored detached signature sig of payload with
// each key ring in turn and returns the signer's key ID. A key ring that
// does not parse is skipped; its error is returned only when none parsed.
func verifyPGP(sig string, payload []byte, keyRings []string) (string, error) {
	var readErr error
	tried := false
	for _, armored := range keyRings {
		ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
		if err != nil {
			if readErr == nil {
				readErr = fmt.Errorf("unable to read armored key ring: %w", err)
			}
			continue
		}
		tried = true
		signer, err := openpgp.CheckArmoredDetachedSignature(ring, bytes.NewReader(payload), strings.NewReader(strings.TrimSpace(sig)), nil)
		if err == nil {
			return signer.PrimaryKey.KeyIdString(), nil
		}
	}
	if !tried && readErr != nil {
		return "", readErr
	}
	return "", fmt.Errorf("unable to verify payload with any of the given key rings: %w", errNoMatchingKey)
}

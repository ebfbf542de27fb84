package verify

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/notaryproject/notation-core-go/signature/cose" // COSE envelopes
	_ "github.com/notaryproject/notation-core-go/signature/jws"  // JWS envelopes
	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
)

// NotationTrustPolicyKey is the key of spec.verify.secretRef's Secret that
// holds the Notary Project trust policy (an OCI trust policy document).
const NotationTrustPolicyKey = "trustpolicy.json"

// notationMaxSignatureAttempts bounds how many signatures of one artifact
// are evaluated, as Flux does.
const notationMaxSignatureAttempts = 3

// ErrNotEnforced is wrapped by a Verifier's error when the trust policy
// lets the artifact through without vouching for it: its statement for the
// repository has level skip, or level audit while the signature's
// authenticity failed. Flux serves such an artifact and sets no
// SourceVerified condition; a caller that treats the error as a failure
// fails closed.
var ErrNotEnforced = errors.New("signature verification is not enforced by the trust policy")

// notationVerifier verifies Notary Project signatures (JWS or COSE
// envelopes attached as OCI referrers) against one Secret's trust policy
// and CA certificates.
type notationVerifier struct {
	verifier notation.Verifier
	opts     []remote.Option
	// warnings are logged at each verification, where a logger is at hand.
	warnings []string
}

// NewNotation returns the Verifier of provider notation for the data of
// the Secret named secret ("<namespace>/<name>", only for messages): its
// trustpolicy.json and its CA certificates, every key ending in .crt or
// .pem (PEM or DER). opts carry the registry's credentials and transport.
// The checks, their order and their messages are Flux's.
func NewNotation(secret string, data map[string][]byte, opts ...remote.Option) (Verifier, error) {
	raw, ok := data[NotationTrustPolicyKey]
	if !ok {
		return nil, fmt.Errorf("'%s' not found in secret '%s'", NotationTrustPolicyKey, secret)
	}
	var doc trustpolicy.Document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("error occurred while parsing %s: %w", NotationTrustPolicyKey, err)
	}
	var keys []string
	for k := range data {
		if strings.HasSuffix(k, ".crt") || strings.HasSuffix(k, ".pem") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no certificates found in secret '%s'", secret)
	}
	sort.Strings(keys)
	var certs []*x509.Certificate
	for _, k := range keys {
		c, err := parseCertificates(data[k])
		if err != nil {
			return nil, fmt.Errorf("failed to parse certificate '%s': %w", k, err)
		}
		certs = append(certs, c...)
	}
	warnings := cleanTrustPolicy(&doc)
	v, err := verifier.New(&doc, memTrustStore(certs), nil)
	if err != nil {
		return nil, err
	}
	return &notationVerifier{verifier: v, opts: opts, warnings: warnings}, nil
}

// parseCertificates reads every CERTIFICATE block of a PEM file, or, when
// it holds no PEM, DER certificates.
func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) > 0 {
		return certs, nil
	}
	return x509.ParseCertificates(data)
}

// cleanTrustPolicy empties the trust stores and identities of statements
// with level skip, which notation would otherwise refuse, and returns
// Flux's warning for each.
func cleanTrustPolicy(doc *trustpolicy.Document) []string {
	var warnings []string
	for i, p := range doc.TrustPolicies {
		if p.SignatureVerification.VerificationLevel != trustpolicy.LevelSkip.Name {
			continue
		}
		if len(p.TrustStores) > 0 || len(p.TrustedIdentities) > 0 {
			warnings = append(warnings, fmt.Sprintf("warning: trust policy statement '%s' is set to skip signature verification but configured with trust stores and/or trusted identities. Ignoring trust stores and trusted identities", p.Name))
		}
		doc.TrustPolicies[i].TrustStores = []string{}
		doc.TrustPolicies[i].TrustedIdentities = []string{}
	}
	return warnings
}

// memTrustStore answers every named store of the trust policy with the
// Secret's certificates, as Flux does: the Secret is the one trust store.
type memTrustStore []*x509.Certificate

var _ truststore.X509TrustStore = memTrustStore(nil)

// GetCertificates implements truststore.X509TrustStore.
func (s memTrustStore) GetCertificates(context.Context, truststore.Type, string) ([]*x509.Certificate, error) {
	return s, nil
}

// Verify implements Verifier: it evaluates up to three of ref's notation
// signatures against the trust policy statement whose registryScopes
// cover ref's repository.
func (v *notationVerifier) Verify(ctx context.Context, ref name.Digest) error {
	log := logr.FromContextOrDiscard(ctx)
	for _, w := range v.warnings {
		log.Info(w)
	}
	repo := &notationRepository{repo: ref.Context(), opts: v.opts}
	_, outcomes, err := notation.Verify(ctx, v.verifier, repo, notation.VerifyOptions{
		ArtifactReference:    ref.Name(),
		MaxSignatureAttempts: notationMaxSignatureAttempts,
	})
	if err != nil {
		var retrieval notation.ErrorSignatureRetrievalFailed
		if repo.listed && repo.signatures == 0 && errors.As(err, &retrieval) {
			return noSignatureError{err}
		}
		return err
	}
	return checkNotationOutcome(log, outcomes, ref.Name())
}

// checkNotationOutcome turns the outcome of a verification that notation
// passed into nil (verified) or ErrNotEnforced, as Flux reads it: level
// skip, or an authenticity failure only logged (level audit), does not
// vouch for the artifact; other logged failures (expiry, revocation) are
// logged and let it verify.
func checkNotationOutcome(log logr.Logger, outcomes []*notation.VerificationOutcome, url string) error {
	if len(outcomes) == 0 {
		return fmt.Errorf("signature verification failed for all the signatures associated with %s", url)
	}
	outcome := outcomes[0]
	if outcome.VerificationLevel != nil && outcome.VerificationLevel.Name == trustpolicy.LevelSkip.Name {
		return ErrNotEnforced
	}
	ignore := false
	for _, r := range outcome.VerificationResults {
		if r.Error == nil {
			continue
		}
		if r.Type == trustpolicy.TypeAuthenticity {
			ignore = true
		}
		log.Info(fmt.Sprintf("verification check for type '%s' failed for '%s' with message: '%s'", r.Type, url, r.Error.Error()))
	}
	if ignore {
		return ErrNotEnforced
	}
	return nil
}

// noSignatureError keeps notation's message and wraps ErrNoSignature.
type noSignatureError struct{ err error }

func (e noSignatureError) Error() string   { return e.err.Error() }
func (e noSignatureError) Unwrap() []error { return []error{ErrNoSignature, e.err} }

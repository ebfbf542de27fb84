package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/source-controller/internal/helm/chart"
	"github.com/eddyops/eddy/source-controller/internal/verify"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	helmrepo "helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// This file wires spec.verify of OCIRepository and HelmChart to the
// verify package: which Verifier a spec asks for, when an OCIRepository's
// revision is (re)verified, and the SourceVerified condition.

// verifySpec is what OCIRepository and HelmChart spec.verify share.
type verifySpec struct {
	Provider  string
	SecretRef *meta.LocalObjectReference
}

// verifyFailure is a failed verification: SourceVerified=False
// VerificationError with Flux's message, retried unless stalled.
func verifyFailure(provider, format string, args ...any) *reconciler.Failure {
	return &reconciler.Failure{Condition: sourcev1.SourceVerifiedCondition, Reason: sourcev1.VerificationErrorReason,
		Message: fmt.Sprintf("failed to verify the signature using provider '%s': ", provider) + fmt.Sprintf(format, args...)}
}

// newVerifier returns the Verifier spec asks for, reading the registry with
// opts, and a fingerprint of the trust it was built from (provider and
// keys), so that a change of keys is verified anew. kind is the object's.
func newVerifier(ctx context.Context, c client.Reader, kind, namespace string, spec verifySpec, opts []remote.Option) (verify.Verifier, string, *reconciler.Failure) {
	switch spec.Provider {
	case "", "cosign":
		return newCosignVerifier(ctx, c, kind, namespace, spec, opts)
	case "notation":
		return newNotationVerifier(ctx, c, namespace, spec, opts)
	}
	return nil, "", verifyFailure(spec.Provider, "unsupported verification provider: %s", spec.Provider).Stall()
}

// newCosignVerifier trusts the keys ending in `.pub` of the Secret
// spec.secretRef names, as Flux does. Keyless verification (no secretRef)
// is refused: it needs Sigstore's Fulcio and Rekor (or a trusted root and
// a reachable Rekor), which Eddy does not implement yet.
func newCosignVerifier(ctx context.Context, c client.Reader, kind, namespace string, spec verifySpec, opts []remote.Option) (verify.Verifier, string, *reconciler.Failure) {
	if spec.SecretRef == nil {
		return nil, "", verifyFailure("cosign keyless", "keyless verification (spec.verify without secretRef) is not supported by Eddy yet; "+
			"put the signers' cosign public keys in a Secret named by spec.verify.secretRef").Stall()
	}
	key := types.NamespacedName{Namespace: namespace, Name: spec.SecretRef.Name}
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		return nil, "", verifyFailure("cosign", "%s", err)
	}
	keys := map[string][]byte{}
	for k, v := range s.Data {
		if strings.HasSuffix(k, ".pub") {
			keys[k] = v
		}
	}
	if len(keys) == 0 && kind == sourcev1.HelmChartKind {
		return nil, "", verifyFailure("cosign", "no public keys found in secret '%s'", key)
	}
	v, err := verify.NewCosign(keys, opts...)
	if err != nil {
		return nil, "", verifyFailure("cosign", "secret '%s': %s", key, err)
	}
	return v, keysFingerprint("cosign", keys), nil
}

// providerOf is spec's provider, cosign when unset (the API's default).
func providerOf(spec verifySpec) string {
	if spec.Provider == "" {
		return "cosign"
	}
	return spec.Provider
}

// keysFingerprint is `sha256:<hex>` over the provider and the named keys.
func keysFingerprint(provider string, keys map[string][]byte) string {
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", provider)
	for _, n := range names {
		d := sha256.Sum256(keys[n])
		fmt.Fprintf(h, "%s %x\n", n, d)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// clearVerification drops a failed SourceVerified, so that it is
// recalculated, and every verification observation without spec.verify.
// Flux compatible; a True condition stays: it tells of the artifact kept.
func clearVerification(obj reconciler.Object, verifying bool) {
	c := apimeta.FindStatusCondition(obj.GetConditions(), sourcev1.SourceVerifiedCondition)
	if !verifying || (c != nil && c.Status == metav1.ConditionFalse) {
		reconciler.RemoveConditions(obj, sourcev1.SourceVerifiedCondition)
	}
	if o, ok := obj.(*sourcev1.OCIRepository); ok && !verifying {
		o.Status.SourceVerificationFingerprint = ""
	}
}

// verifyOCIRevision verifies the signature of rev, the revision spec.ref
// resolves to in repo, unless the stored artifact is that revision and was
// verified at this generation with the same keys. Nothing is stored
// unverified: a failure stops the reconcile before the pull. Flux
// compatible: SourceVerified=True Succeeded "verified signature of
// revision <rev>".
func verifyOCIRevision(ctx context.Context, c client.Reader, obj *sourcev1.OCIRepository, repo name.Repository, rev string, opts []remote.Option) *reconciler.Failure {
	if obj.Spec.Verify == nil {
		return nil
	}
	spec := verifySpec{Provider: obj.Spec.Verify.Provider, SecretRef: obj.Spec.Verify.SecretRef}
	v, fp, f := newVerifier(ctx, c, sourcev1.OCIRepositoryKind, obj.Namespace, spec, opts)
	if f != nil {
		return f
	}
	cond := apimeta.FindStatusCondition(obj.Status.Conditions, sourcev1.SourceVerifiedCondition)
	if art := obj.Status.Artifact; art != nil && art.Revision == rev && cond != nil && cond.Status == metav1.ConditionTrue &&
		cond.ObservedGeneration == obj.Generation && obj.Status.SourceVerificationFingerprint == fp {
		return nil
	}
	err := v.Verify(ctx, repo.Digest(digestOfRevision(rev)))
	if errors.Is(err, verify.ErrNotEnforced) {
		// Served, but not vouched for: no SourceVerified (Flux sets none).
		ctrl.LoggerFrom(ctx).Info(fmt.Sprintf("revision %s not verified: %s", rev, err))
		reconciler.RemoveConditions(obj, sourcev1.SourceVerifiedCondition)
		obj.Status.SourceVerificationFingerprint = ""
		return nil
	}
	if err != nil {
		return verifyFailure(providerOf(spec), "%s", err)
	}
	reconciler.SetCondition(obj, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason,
		"verified signature of revision "+rev)
	obj.Status.SourceVerificationFingerprint = fp
	return nil
}

// startChartVerification clears a HelmChart's verification observations
// and refuses spec.verify with a source kind that holds no signatures (the
// CRD's CEL rule already does; a chart must never pass unverified).
func startChartVerification(obj *sourcev1.HelmChart) *reconciler.Failure {
	clearVerification(obj, obj.Spec.Verify != nil)
	if obj.Spec.Verify != nil && obj.Spec.SourceRef.Kind != sourcev1.HelmRepositoryKind {
		return (&reconciler.Failure{Condition: sourcev1.SourceVerifiedCondition, Reason: sourcev1.VerificationErrorReason,
			Message: "spec.verify is only supported when spec.sourceRef.kind is 'HelmRepository'"}).Stall()
	}
	return nil
}

// chartVerify returns the check of HelmChart spec.verify for a chart of
// hr, nil without spec.verify. Only OCI HelmRepositories hold signatures;
// the registry is read with hr's credentials and TLS settings.
func (r *HelmChartReconciler) chartVerify(ctx context.Context, obj *sourcev1.HelmChart, hr *sourcev1.HelmRepository) (func(context.Context, *helmrepo.ChartVersion) error, *reconciler.Failure) {
	if obj.Spec.Verify == nil {
		return nil, nil
	}
	if hr.Spec.Type != sourcev1.HelmRepositoryTypeOCI {
		return nil, (&reconciler.Failure{Condition: sourcev1.SourceVerifiedCondition, Reason: sourcev1.VerificationErrorReason,
			Message: "chart verification error: not implemented: spec.verify applies only to charts of an OCI HelmRepository (spec.type 'oci')"}).Stall()
	}
	ic, err := newIndexClient(ctx, r.Client, hr)
	if err != nil {
		return nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get authentication options for HelmRepository '%s': %s", hr.Name, err)
	}
	if f := helmProviderAuth(ctx, hr, ic); f != nil {
		return nil, f
	}
	var opts []remote.Option
	if ic.username != "" || ic.password != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: ic.username, Password: ic.password}))
	}
	if ic.tls != nil {
		tr := remote.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = ic.tls
		opts = append(opts, remote.WithTransport(tr))
	}
	spec := verifySpec{Provider: obj.Spec.Verify.Provider, SecretRef: obj.Spec.Verify.SecretRef}
	v, _, f := newVerifier(ctx, r.Client, sourcev1.HelmChartKind, obj.Namespace, spec, opts)
	if f != nil {
		return nil, f
	}
	var nameOpts []name.Option
	if hr.Spec.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	base := strings.TrimSuffix(strings.TrimPrefix(hr.Spec.URL, sourcev1.OCIRepositoryPrefix), "/")
	return func(ctx context.Context, cv *helmrepo.ChartVersion) error {
		ref, err := name.NewDigest(base+"/"+cv.Name+"@"+cv.Digest, nameOpts...)
		if err != nil {
			return fmt.Errorf("invalid chart reference: %s", err)
		}
		err = v.Verify(ctx, ref)
		if errors.Is(err, verify.ErrNotEnforced) {
			ctrl.LoggerFrom(ctx).Info(fmt.Sprintf("chart %s %s not verified: %s", cv.Name, cv.Version, err))
			return chart.ErrNotVerified
		}
		if err != nil {
			return fmt.Errorf("failed to verify %s%s:%s: %w", sourcev1.OCIRepositoryPrefix, base+"/"+cv.Name, cv.Version, err)
		}
		return nil
	}, nil
}

// recordChartVerification writes SourceVerified for a HelmChart build
// outcome: True "verified signature of version <v>" for a verified build,
// False VerificationError for a refused signature. Flux compatible.
func recordChartVerification(obj *sourcev1.HelmChart, b *chart.Build, recErr *reconciler.Failure) {
	switch {
	case obj.Spec.Verify == nil:
		reconciler.RemoveConditions(obj, sourcev1.SourceVerifiedCondition)
	case recErr == nil && b != nil && b.Verified:
		reconciler.SetCondition(obj, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason,
			"verified signature of version "+b.Version)
	case recErr == nil && b != nil:
		// The trust policy let the chart through unverified.
		reconciler.RemoveConditions(obj, sourcev1.SourceVerifiedCondition)
	case recErr != nil && recErr.Reason == chart.ErrVerification.Reason:
		reconciler.SetCondition(obj, sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, sourcev1.VerificationErrorReason, recErr.Message)
	}
}

package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/eddyops/eddy/source-controller/internal/verify/cosigntest"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// keySecret creates Secret name in ns with data (key → PEM).
func keySecret(t testing.TB, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// digestRef is the digest reference of an artifact pushed to reg.
func digestRef(t testing.TB, host, repo, digest string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(host + "/" + repo + "@" + digest)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// authOption is go-containerregistry's basic auth option.
func authOption(user, password string) remote.Option {
	return remote.WithAuth(&authn.Basic{Username: user, Password: password})
}

// verifiedBy returns spec.verify with provider cosign and the Secret secret.
func verifiedBy(secret string) func(*sourcev1.OCIRepository) {
	return func(o *sourcev1.OCIRepository) {
		o.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: secret}}
	}
}

// sourceVerified returns the SourceVerified condition, or a zero one.
func sourceVerified(conds []metav1.Condition) metav1.Condition {
	if c := apimeta.FindStatusCondition(conds, sourcev1.SourceVerifiedCondition); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// TestOCIRepositoryCosignVerification: an artifact signed with the trusted
// key is stored with SourceVerified=True and Flux's message; unsigned,
// signed by another key, signed for another digest, a missing Secret and a
// Secret without `.pub` keys are VerificationError with nothing stored;
// keyless is refused (Stalled).
func TestOCIRepositoryCosignVerification(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-verify-")
	trusted, other := cosigntest.NewKey(t), cosigntest.NewKey(t)
	keySecret(t, ns, "keys", map[string][]byte{"cosign.pub": trusted.PublicPEM, "README": []byte("not a key")})
	keySecret(t, ns, "nokeys", map[string][]byte{"cosign.key": []byte("private, not .pub")})
	push := func(repo string) name.Digest {
		return digestRef(t, reg.Host(), repo, pushFiles(t, reg, repo, "latest", "r-"+repo, map[string]string{"a.yaml": repo + "\n"}))
	}
	signed := push("signed")
	trusted.Sign(t, signed)
	byOther := push("other")
	other.Sign(t, byOther)
	claims := push("claims")
	trusted.SignClaiming(t, claims, signed)
	push("unsigned")

	url := func(repo string) string { return "oci://" + reg.Host() + "/" + repo }
	got := waitOCIReady(t, newOCIRepository(t, ns, "signed", url("signed"), verifiedBy("keys")))
	c := sourceVerified(got.Status.Conditions)
	if c.Status != metav1.ConditionTrue || c.Reason != meta.SucceededReason || c.Message != "verified signature of revision latest@"+signed.DigestStr() {
		t.Errorf("SourceVerified %+v", c)
	}
	if !strings.HasPrefix(got.Status.SourceVerificationFingerprint, "sha256:") {
		t.Errorf("sourceVerificationFingerprint %q", got.Status.SourceVerificationFingerprint)
	}

	noMatch := func(repo string, d name.Digest) string {
		return fmt.Sprintf("failed to verify the signature using provider 'cosign': no matching signatures were found for '%s/%s@%s'", reg.Host(), repo, d.DigestStr())
	}
	for _, tc := range []struct {
		name, repo, secret, msg string
	}{
		{"unsigned", "unsigned", "keys", "no matching signatures were found for '" + reg.Host() + "/unsigned@sha256:"},
		{"by-other-key", "other", "keys", noMatch("other", byOther)},
		{"claims-other-digest", "claims", "keys", noMatch("claims", claims)},
		{"missing-secret", "signed", "absent", `failed to verify the signature using provider 'cosign': secrets "absent" not found`},
		{"no-pub-keys", "signed", "nokeys", noMatch("signed", signed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := waitOCIFailed(t, newOCIRepository(t, ns, tc.name, url(tc.repo), verifiedBy(tc.secret)), sourcev1.VerificationErrorReason)
			checkFailureMessage(t, got, tc.msg, "private, not .pub")
			if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionFalse || c.Reason != sourcev1.VerificationErrorReason {
				t.Errorf("SourceVerified %+v", c)
			}
			if got.Status.Artifact != nil || apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition) {
				t.Errorf("artifact %+v, conditions %+v: want none stored, retried", got.Status.Artifact, got.Status.Conditions)
			}
		})
	}
	for provider, msg := range map[string]string{"cosign": "keyless verification (spec.verify without secretRef) is not supported by Eddy yet"} {
		got := waitOCIFailed(t, newOCIRepository(t, ns, "refused-"+provider, url("signed"), func(o *sourcev1.OCIRepository) {
			o.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: provider}
		}), sourcev1.VerificationErrorReason)
		checkFailureMessage(t, got, msg)
		if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition) || got.Status.Artifact != nil {
			t.Errorf("%s: conditions %+v, artifact %+v: want Stalled, none stored", provider, got.Status.Conditions, got.Status.Artifact)
		}
	}
}

// TestOCIRepositoryReverification: an unchanged verified digest is not
// verified again; a new unsigned digest fails and the verified artifact
// stays; signing it lets it through; new keys verify the stored digest
// again; dropping spec.verify drops the observations.
func TestOCIRepositoryReverification(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-reverify-")
	k1, k2 := cosigntest.NewKey(t), cosigntest.NewKey(t)
	keySecret(t, ns, "keys", map[string][]byte{"k1.pub": k1.PublicPEM})
	d1 := digestRef(t, reg.Host(), "app", pushFiles(t, reg, "app", "latest", "r1", map[string]string{"v.yaml": "1\n"}))
	k1.Sign(t, d1)
	obj := newOCIRepository(t, ns, "app", "oci://"+reg.Host()+"/app", verifiedBy("keys"))
	first := waitOCIReady(t, obj)

	before := snapshot(reg)
	requestOCIReconcile(t, obj)
	if after := snapshot(reg); after.gets != before.gets || after.blobs != before.blobs {
		t.Errorf("an unchanged verified digest was fetched again: %+v → %+v", before, after)
	}

	d2 := digestRef(t, reg.Host(), "app", pushFiles(t, reg, "app", "latest", "r2", map[string]string{"v.yaml": "2\n"}))
	requestOCIReconcile(t, obj)
	got := waitOCIFailed(t, obj, sourcev1.VerificationErrorReason)
	if got.Status.Artifact == nil || got.Status.Artifact.Digest != first.Status.Artifact.Digest {
		t.Errorf("artifact %+v, want the verified one kept", got.Status.Artifact)
	}
	if v := string(untar(t, download(t, got.Status.Artifact))["v.yaml"]); v != "1\n" {
		t.Errorf("served v.yaml %q, want the verified 1", v)
	}

	k1.Sign(t, d2)
	requestOCIReconcile(t, obj)
	got = waitOCI(t, obj, "the signed new digest", func(o *sourcev1.OCIRepository) bool {
		return ociSettled(o) && o.Status.Artifact != nil && o.Status.Artifact.Revision == "latest@"+d2.DigestStr() &&
			sourceVerified(o.Status.Conditions).Status == metav1.ConditionTrue
	})

	// The keys change: the stored digest is verified again, with the new key.
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "keys"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"k2.pub": k2.PublicPEM}
	if err := env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	requestOCIReconcile(t, obj)
	got = waitOCIFailed(t, obj, sourcev1.VerificationErrorReason)
	if got.Status.Artifact == nil || got.Status.Artifact.Revision != "latest@"+d2.DigestStr() {
		t.Errorf("artifact %+v, want the last verified kept", got.Status.Artifact)
	}

	update(t, obj, func(o *sourcev1.OCIRepository) { o.Spec.Verify = nil })
	got = waitOCIReady(t, obj)
	if apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.SourceVerifiedCondition) != nil || got.Status.SourceVerificationFingerprint != "" {
		t.Errorf("verification observations kept without spec.verify: %+v, %q", got.Status.Conditions, got.Status.SourceVerificationFingerprint)
	}
}

// TestHelmChartCosignVerification: a chart of an OCI HelmRepository signed
// with the trusted key is pulled with SourceVerified=True; an unsigned
// version is ChartVerificationError with SourceVerified=False and the
// verified artifact kept; a Secret without `.pub` keys and a HelmRepository
// that is not OCI are refused.
func TestHelmChartCosignVerification(t *testing.T) {
	ns := newNamespace(t)
	reg := helmtest.NewOCIRegistry(t, helmtest.WithRegistryAuth("user", "pass"))
	latest := reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))
	older := reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), helmtest.WithVersion("6.13.0")))
	key := cosigntest.NewKey(t)
	key.Sign(t, digestRef(t, reg.Host(), "charts/podinfo", latest.Digest), authOption("user", "pass"))
	keySecret(t, ns, "keys", map[string][]byte{"cosign.pub": key.PublicPEM})
	keySecret(t, ns, "nokeys", map[string][]byte{"x": []byte("y")})
	if err := env.Client.Create(context.Background(), secret(ns, "auth", map[string]string{"username": "user", "password": "pass"})); err != nil {
		t.Fatal(err)
	}
	for _, hr := range []*sourcev1.HelmRepository{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oci"}, Spec: sourcev1.HelmRepositorySpec{URL: reg.URL(), Type: sourcev1.HelmRepositoryTypeOCI,
			Insecure: true, Interval: metav1.Duration{Duration: time.Hour}, SecretRef: &meta.LocalObjectReference{Name: "auth"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "http"}, Spec: sourcev1.HelmRepositorySpec{URL: "http://127.0.0.1:1/charts",
			Interval: metav1.Duration{Duration: time.Hour}}},
	} {
		if err := env.Client.Create(context.Background(), hr); err != nil {
			t.Fatal(err)
		}
		if hr.Spec.Type != sourcev1.HelmRepositoryTypeOCI {
			storeIndex(t, storage, env.Client, hr, []byte("apiVersion: v1\nentries: {}\n"))
		}
	}
	chartOf := func(name, source, secret string) *sourcev1.HelmChart {
		return newHelmChart(t, ns, name, func(o *sourcev1.HelmChart) {
			o.Spec.Chart = "podinfo"
			o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: source}
			o.Spec.Verify = &sourcev1.HelmChartVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: secret}}
		})
	}
	obj := chartOf("podinfo", "oci", "keys")
	got := waitChart(t, obj, "Ready", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
	if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionTrue || c.Message != "verified signature of version 6.14.1" {
		t.Errorf("SourceVerified %+v", c)
	}
	checkChartArtifact(t, got, "6.14.1")

	update(t, obj, func(o *sourcev1.HelmChart) { o.Spec.Version = older.Version })
	want := fmt.Sprintf("chart verification error: failed to verify oci://%s/charts/podinfo:6.13.0: no matching signatures were found for '%s/charts/podinfo@%s'",
		reg.Host(), reg.Host(), older.Digest)
	got = waitChart(t, obj, "ChartVerificationError", failedWith(sourcev1.BuildFailedCondition, "ChartVerificationError", want))
	if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionFalse || c.Reason != sourcev1.VerificationErrorReason || c.Message != want {
		t.Errorf("SourceVerified %+v", c)
	}
	if stalled(got) || got.Status.Artifact == nil || got.Status.Artifact.Revision != "6.14.1" {
		t.Errorf("artifact %+v, conditions %+v: want the verified 6.14.1 kept, retried", got.Status.Artifact, got.Status.Conditions)
	}

	got = waitChart(t, chartOf("nokeys", "oci", "nokeys"), "VerificationError", failedWith(sourcev1.SourceVerifiedCondition,
		sourcev1.VerificationErrorReason, fmt.Sprintf("failed to verify the signature using provider 'cosign': no public keys found in secret '%s/nokeys'", ns)))
	if got.Status.Artifact != nil {
		t.Error("stored a chart without trusted keys")
	}
	got = waitChart(t, chartOf("http", "http", "keys"), "VerificationError", failedWith(sourcev1.SourceVerifiedCondition,
		sourcev1.VerificationErrorReason, "spec.verify applies only to charts of an OCI HelmRepository"))
	if !stalled(got) {
		t.Errorf("verify of an HTTP HelmRepository's chart is not stalled: %+v", got.Status.Conditions)
	}
}

// verifyShard labels the objects of TestBinaryCosignVerifiedSource.
const verifyShard = "verify-binary"

// TestBinaryCosignVerifiedSource runs the built source-controller and
// kustomize-controller: a Kustomization applies the verified artifact of an
// OCIRepository; an unsigned new digest is refused, so the Kustomization
// keeps the verified revision applied; once signed, it is applied. Then
// HelmCharts of an OCI HelmRepository: signed pulled, unsigned refused.
func TestBinaryCosignVerifiedSource(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--watch-label-selector=" + shardKey + "=" + verifyShard, "--min-retry-delay=100ms", "--max-retry-delay=2s"}
	testenv.RunController(t, env, ControllerName, append(flags, "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port))...)
	testenv.RunController(t, env, "kustomize-controller", append(flags, "--requeue-dependency=1s")...)
	label := map[string]string{shardKey: verifyShard}

	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "verify-e2e-")
	key := cosigntest.NewKey(t)
	keySecret(t, ns, "keys", map[string][]byte{"cosign.pub": key.PublicPEM})
	cm := func(v string) map[string]string {
		return map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: " + ns + "}\ndata: {v: \"" + v + "\"}\n"}
	}
	d1 := digestRef(t, reg.Host(), "app", pushFiles(t, reg, "app", "latest", "r1", cm("one")))
	key.Sign(t, d1)
	obj := newOCIRepository(t, ns, "app", "oci://"+reg.Host()+"/app", func(o *sourcev1.OCIRepository) {
		o.Labels = label
		verifiedBy("keys")(o)
	})
	got := waitOCIReady(t, obj)
	if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionTrue {
		t.Fatalf("SourceVerified %+v", c)
	}
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: label},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true, Path: "./",
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "app"}}}
	if err := env.Client.Create(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	applied := func(rev, v string) {
		t.Helper()
		testenv.WaitFor(t, env.Client, k, "applied "+rev, func() bool { return k.Status.LastAppliedRevision == rev })
		c := &corev1.ConfigMap{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, c); err != nil || c.Data["v"] != v {
			t.Errorf("ConfigMap %v, %v; want v=%s", c.Data, err, v)
		}
	}
	applied("latest@"+d1.DigestStr(), "one")

	d2 := digestRef(t, reg.Host(), "app", pushFiles(t, reg, "app", "latest", "r2", cm("two")))
	requestOCIReconcile(t, obj)
	got = waitOCIFailed(t, obj, sourcev1.VerificationErrorReason)
	if got.Status.Artifact == nil || got.Status.Artifact.Revision != "latest@"+d1.DigestStr() {
		t.Errorf("artifact %+v, want the verified one kept", got.Status.Artifact)
	}
	applied("latest@"+d1.DigestStr(), "one")

	key.Sign(t, d2)
	requestOCIReconcile(t, obj)
	applied("latest@"+d2.DigestStr(), "two")

	// A HelmChart of an OCI HelmRepository: the signed version is pulled, an unsigned one refused.
	charts := helmtest.NewOCIRegistry(t)
	signed := charts.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))
	charts.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), helmtest.WithVersion("6.13.0")))
	key.Sign(t, digestRef(t, charts.Host(), "charts/podinfo", signed.Digest))
	hr := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oci", Labels: label},
		Spec: sourcev1.HelmRepositorySpec{URL: charts.URL(), Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true, Interval: metav1.Duration{Duration: time.Hour}}}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	for version, ready := range map[string]bool{"6.14.1": true, "6.13.0": false} {
		hc := newHelmChart(t, ns, "podinfo-"+strings.ReplaceAll(version, ".", "-"), func(o *sourcev1.HelmChart) {
			o.Labels = label
			o.Spec.Chart, o.Spec.Version = "podinfo", version
			o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "oci"}
			o.Spec.Verify = &sourcev1.HelmChartVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: "keys"}}
		})
		if !ready {
			got := waitChart(t, hc, "ChartVerificationError", failedWith(sourcev1.BuildFailedCondition, "ChartVerificationError", "no matching signatures were found"))
			if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionFalse || got.Status.Artifact != nil {
				t.Errorf("unsigned chart: SourceVerified %+v, artifact %+v", c, got.Status.Artifact)
			}
			continue
		}
		got := waitChart(t, hc, "Ready", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
		if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionTrue || c.Message != "verified signature of version 6.14.1" {
			t.Errorf("signed chart: SourceVerified %+v", c)
		}
		if !strings.HasPrefix(got.Status.Artifact.URL, fmt.Sprintf("http://127.0.0.1:%d/", port)) {
			t.Errorf("artifact URL %s is not the binary's file server", got.Status.Artifact.URL)
		}
	}
}

// TestChartVerifyNeedsHelmRepository: spec.verify on a chart of a
// GitRepository is refused (Stalled) even where the CEL rule is missing,
// rather than served unverified.
func TestChartVerifyNeedsHelmRepository(t *testing.T) {
	obj := &sourcev1.HelmChart{Spec: sourcev1.HelmChartSpec{
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "git"},
		Verify:    &sourcev1.HelmChartVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: "keys"}}}}
	f := startChartVerification(obj)
	if f == nil || !f.Stalled || f.Condition != sourcev1.SourceVerifiedCondition {
		t.Fatalf("failure %+v, want a stalled SourceVerified refusal", f)
	}
	obj.Spec.SourceRef.Kind = sourcev1.HelmRepositoryKind
	if f := startChartVerification(obj); f != nil {
		t.Errorf("a HelmRepository source was refused: %+v", f)
	}
}

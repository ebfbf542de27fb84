package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/eddyops/eddy/source-controller/internal/verify"
	"github.com/eddyops/eddy/source-controller/internal/verify/notationtest"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// notationSecret creates Secret name in ns with a trust policy of level
// for scopes and the CA of pki.
func notationSecret(t testing.TB, ns, name string, pki *notationtest.PKI, level string, scopes ...string) {
	t.Helper()
	keySecret(t, ns, name, map[string][]byte{
		verify.NotationTrustPolicyKey: notationtest.TrustPolicy(t, level, scopes),
		"ca.crt":                      pki.CAPEM(),
	})
}

// notationBy returns spec.verify with provider notation and the Secret
// secret (none when empty).
func notationBy(secret string) func(*sourcev1.OCIRepository) {
	return func(o *sourcev1.OCIRepository) {
		o.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: "notation"}
		if secret != "" {
			o.Spec.Verify.SecretRef = &meta.LocalObjectReference{Name: secret}
		}
	}
}

// TestOCIRepositoryNotationVerification: an artifact signed under a CA of
// the Secret is stored with SourceVerified=True; unsigned, a trust policy
// whose registryScopes miss the repository, a Secret without
// trustpolicy.json and no secretRef are VerificationError with Flux's
// messages and nothing stored; a policy of level skip stores it without
// SourceVerified.
func TestOCIRepositoryNotationVerification(t *testing.T) {
	ns := newNamespace(t)
	reg := testenv.NewRegistry(t)
	pki := notationtest.NewPKI(t, "eddy test")
	signed := pushFiles(t, reg, "app", "signed", "r1", map[string]string{"v.yaml": "v: 1\n"})
	pki.Sign(t, reg.Host()+"/app@"+signed, notationtest.JWS)
	unsigned := pushFiles(t, reg, "app", "unsigned", "r2", map[string]string{"v.yaml": "v: 2\n"})
	notationSecret(t, ns, "policy", pki, "strict", reg.Host()+"/app")
	notationSecret(t, ns, "other-scope", pki, "strict", reg.Host()+"/other")
	notationSecret(t, ns, "skip", pki, "skip", "*")
	keySecret(t, ns, "no-policy", map[string][]byte{"ca.crt": pki.CAPEM()})
	url := "oci://" + reg.Host() + "/app"
	repo := func(name, tag, secret string) *sourcev1.OCIRepository {
		return newOCIRepository(t, ns, name, url, func(o *sourcev1.OCIRepository) {
			o.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: tag}
			notationBy(secret)(o)
		})
	}

	got := waitOCIReady(t, repo("signed", "signed", "policy"))
	if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionTrue || c.Reason != meta.SucceededReason ||
		c.Message != "verified signature of revision signed@"+signed {
		t.Errorf("signed: SourceVerified %+v", c)
	}

	got = waitOCIReady(t, repo("skip", "unsigned", "skip"))
	if c := sourceVerified(got.Status.Conditions); c.Type != "" {
		t.Errorf("level skip: SourceVerified %+v, want none", c)
	}

	prefix := "failed to verify the signature using provider 'notation': "
	for _, tc := range []struct{ name, tag, secret, msg string }{
		{"unsigned", "unsigned", "policy", fmt.Sprintf(`no signature is associated with "%s/app@%s", make sure the artifact was signed successfully`, reg.Host(), unsigned)},
		{"other-scope", "signed", "other-scope", fmt.Sprintf(`artifact "%s/app@%s" has no applicable trust policy statement.`, reg.Host(), signed)},
		{"no-policy", "signed", "no-policy", fmt.Sprintf("'trustpolicy.json' not found in secret '%s/no-policy'", ns)},
		{"no-secret-ref", "signed", "", fmt.Sprintf("verification secret cannot be empty: '%s/app@%s'", reg.Host(), signed)},
	} {
		got := waitOCIFailed(t, repo(tc.name, tc.tag, tc.secret), sourcev1.VerificationErrorReason)
		if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionFalse || !strings.HasPrefix(c.Message, prefix+tc.msg) {
			t.Errorf("%s: SourceVerified %+v, want message %q", tc.name, c, prefix+tc.msg)
		}
		if got.Status.Artifact != nil {
			t.Errorf("%s: stored %+v", tc.name, got.Status.Artifact)
		}
	}
}

// TestHelmChartNotationVerification: a chart version of an OCI
// HelmRepository signed under the Secret's CA is pulled with
// SourceVerified=True; an unsigned version is ChartVerificationError.
func TestHelmChartNotationVerification(t *testing.T) {
	ns := newNamespace(t)
	reg := helmtest.NewOCIRegistry(t)
	latest := reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))
	older := reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), helmtest.WithVersion("6.13.0")))
	pki := notationtest.NewPKI(t, "eddy test")
	pki.Sign(t, reg.Host()+"/charts/podinfo@"+latest.Digest, notationtest.COSE)
	notationSecret(t, ns, "policy", pki, "strict", reg.Host()+"/charts/podinfo")
	hr := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oci"}, Spec: sourcev1.HelmRepositorySpec{
		URL: reg.URL(), Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true, Interval: metav1.Duration{Duration: time.Hour}}}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	obj := newHelmChart(t, ns, "podinfo", func(o *sourcev1.HelmChart) {
		o.Spec.Chart = "podinfo"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "oci"}
		o.Spec.Verify = &sourcev1.HelmChartVerification{Provider: "notation", SecretRef: &meta.LocalObjectReference{Name: "policy"}}
	})
	got := waitChart(t, obj, "Ready", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
	if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionTrue || c.Message != "verified signature of version 6.14.1" {
		t.Errorf("SourceVerified %+v", c)
	}

	update(t, obj, func(o *sourcev1.HelmChart) { o.Spec.Version = older.Version })
	want := fmt.Sprintf(`chart verification error: failed to verify oci://%s/charts/podinfo:6.13.0: no signature is associated with "%s/charts/podinfo@%s"`,
		reg.Host(), reg.Host(), older.Digest)
	got = waitChart(t, obj, "ChartVerificationError", failedWith(sourcev1.BuildFailedCondition, "ChartVerificationError", want))
	if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionFalse || c.Reason != sourcev1.VerificationErrorReason {
		t.Errorf("SourceVerified %+v", c)
	}
}

// notationShard labels the objects of TestBinaryNotationVerifiedSource.
const notationShard = "notation-binary"

// TestBinaryNotationVerifiedSource runs the built source-controller: an
// OCIRepository signed under the notation Secret's CA is served as
// SourceVerified, an unsigned one refused with Flux's condition and
// message, storing nothing; a HelmChart of an OCI HelmRepository likewise.
func TestBinaryNotationVerifiedSource(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"="+notationShard, "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s")
	label := map[string]string{shardKey: notationShard}

	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "notation-e2e-")
	signed := pushFiles(t, reg, "app", "1.0.0", "rev1", map[string]string{"v.yaml": "v: 1\n"})
	unsigned := pushFiles(t, reg, "app", "2.0.0", "rev2", map[string]string{"v.yaml": "v: 2\n"})
	charts := helmtest.NewOCIRegistry(t)
	chart := charts.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))
	pki := notationtest.NewPKI(t, "eddy test")
	pki.Sign(t, reg.Host()+"/app@"+signed, notationtest.COSE)
	pki.Sign(t, charts.Host()+"/charts/podinfo@"+chart.Digest, notationtest.JWS)
	notationSecret(t, ns, "notation-config", pki, "strict", reg.Host()+"/app", charts.Host()+"/charts/podinfo")
	repo := func(name, tag string) *sourcev1.OCIRepository {
		return newOCIRepository(t, ns, name, "oci://"+reg.Host()+"/app", func(o *sourcev1.OCIRepository) {
			o.Labels = label
			o.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: tag}
			notationBy("notation-config")(o)
		})
	}

	got := waitOCIReady(t, repo("signed", "1.0.0"))
	if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionTrue || c.Message != "verified signature of revision 1.0.0@"+signed {
		t.Errorf("signed: SourceVerified %+v", c)
	}
	if v := string(untar(t, download(t, got.Status.Artifact))["v.yaml"]); v != "v: 1\n" {
		t.Errorf("signed: artifact v.yaml %q", v)
	}
	got = waitOCIFailed(t, repo("unsigned", "2.0.0"), sourcev1.VerificationErrorReason)
	want := fmt.Sprintf(`failed to verify the signature using provider 'notation': no signature is associated with "%s/app@%s", make sure the artifact was signed successfully`,
		reg.Host(), unsigned)
	if c := sourceVerified(got.Status.Conditions); c.Status != metav1.ConditionFalse || c.Message != want || got.Status.Artifact != nil {
		t.Errorf("unsigned: SourceVerified %+v, artifact %+v; want %q and none", c, got.Status.Artifact, want)
	}

	hr := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oci", Labels: label}, Spec: sourcev1.HelmRepositorySpec{
		URL: charts.URL(), Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true, Interval: metav1.Duration{Duration: time.Hour}}}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	hc := newHelmChart(t, ns, "podinfo", func(o *sourcev1.HelmChart) {
		o.Labels = label
		o.Spec.Chart = "podinfo"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "oci"}
		o.Spec.Verify = &sourcev1.HelmChartVerification{Provider: "notation", SecretRef: &meta.LocalObjectReference{Name: "notation-config"}}
	})
	gotChart := waitChart(t, hc, "Ready", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
	if c := sourceVerified(gotChart.Status.Conditions); c.Status != metav1.ConditionTrue || c.Message != "verified signature of version 6.14.1" {
		t.Errorf("chart: SourceVerified %+v", c)
	}
}

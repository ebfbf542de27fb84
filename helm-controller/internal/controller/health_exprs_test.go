package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func TestHealthCheckExprsThatDoNotCompileStall(t *testing.T) {
	hr := &helmv2.HelmRelease{Spec: helmv2.HelmReleaseSpec{HealthCheckExprs: []kustomizev1.CustomHealthCheck{
		{APIVersion: "apps/v1", Kind: "Deployment", Current: "true"},
		{APIVersion: "v1", Kind: "ConfigMap", Current: "data.a =="},
	}}}
	_, f := healthCheckExprs(hr)
	want := "Reconciliation failed terminally due to configuration error: failed to create custom status evaluator for healthchecks[1]: " +
		"failed to parse the expression Current: failed to parse the CEL expression 'data.a =='"
	if f == nil || !f.Stalled || f.Reason != meta.InvalidCELExpressionReason || !strings.HasPrefix(f.Message, want) {
		t.Fatalf("failure %+v", f)
	}
	hr.Spec.HealthCheckExprs = nil
	if exprs, f := healthCheckExprs(hr); exprs != nil || f != nil {
		t.Errorf("no expressions: %v %v", exprs, f)
	}
}

func TestHealthCheckExprsDecideTheKindsTheyName(t *testing.T) {
	exprs, f := healthCheckExprs(&helmv2.HelmRelease{Spec: helmv2.HelmReleaseSpec{HealthCheckExprs: []kustomizev1.CustomHealthCheck{
		{APIVersion: "batch/v1", Kind: "Job", Current: "status.done == true"},
		{APIVersion: "v1", Kind: "ConfigMap", InProgress: "has(data.foo.bar)", Current: "true"},
	}}})
	if f != nil {
		t.Fatal(f)
	}
	obj := func(apiVersion, kind, fields string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"x","generation":1}%s}`, apiVersion, kind, fields))); err != nil {
			t.Fatal(err)
		}
		return u
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		u      *unstructured.Unstructured
		want   status.Status
		celErr string
	}{
		// The expression decides a Job too, as in Flux's helm-controller.
		{"job by expression", obj("batch/v1", "Job", `,"status":{"done":true}`), status.CurrentStatus, ""},
		{"job not yet", obj("batch/v1", "Job", `,"status":{"done":false}`), status.InProgressStatus, ""},
		{"observedGeneration behind", obj("batch/v1", "Job", `,"status":{"done":true,"observedGeneration":0}`), status.InProgressStatus, ""},
		{"evaluation error", obj("v1", "ConfigMap", ``), "", "failed to evaluate the CEL expression 'has(data.foo.bar)'"},
		{"kstatus for others", obj("v1", "Secret", ``), status.CurrentStatus, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, celErr, err := objectStatus(ctx, exprs, tc.u)
			if err != nil {
				t.Fatal(err)
			}
			if tc.celErr != "" {
				if celErr == nil || !strings.HasPrefix(celErr.Error(), tc.celErr) {
					t.Fatalf("CEL error %v, want %q", celErr, tc.celErr)
				}
				return
			}
			if celErr != nil || res.Status != tc.want {
				t.Errorf("status %v %v, want %s", res, celErr, tc.want)
			}
		})
	}
}

// testHealthCheckExprs runs against the built binary: an expression makes
// a Deployment that can never be Available healthy (its pods are not
// scheduled), a failed expression fails the install at once with the
// object's status, one that cannot be evaluated keeps the wait going until
// the timeout with the evaluation error, and one that does not compile
// stalls with Flux's message before anything is installed.
func testHealthCheckExprs(t *testing.T) {
	t.Parallel()
	ns, _, a := chartFixture(t)
	unschedulable := jsonValues(`{"nodeSelector":{"eddy.test/none":"x"}}`)
	deployment := func(e kustomizev1.CustomHealthCheck) []kustomizev1.CustomHealthCheck {
		e.APIVersion, e.Kind = "apps/v1", "Deployment"
		return []kustomizev1.CustomHealthCheck{e}
	}
	healthy := newRelease(t, ns, "healthy", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.Values = unschedulable
		hr.Spec.HealthCheckExprs = deployment(kustomizev1.CustomHealthCheck{Current: "metadata.name == 'healthy-podinfo'"})
	})
	failed := newRelease(t, ns, "failed", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Minute}
		hr.Spec.HealthCheckExprs = deployment(kustomizev1.CustomHealthCheck{Failed: "spec.replicas == 1", Current: "true"})
	})
	unknown := newRelease(t, ns, "unknown", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second}
		hr.Spec.HealthCheckExprs = deployment(kustomizev1.CustomHealthCheck{InProgress: "has(data.foo.bar)", Current: "true"})
	})
	invalid := newRelease(t, ns, "invalid", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.HealthCheckExprs = deployment(kustomizev1.CustomHealthCheck{Current: "status.readyReplicas =="})
	})

	waitReady(t, healthy, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/healthy.v1 with chart podinfo@%s", ns, a.Revision))

	installFailed := func(hr *helmv2.HelmRelease, contains string) {
		t.Helper()
		prefix := fmt.Sprintf("Helm install failed for release %s/%s with chart podinfo@%s: ", ns, hr.Name, a.Revision)
		waitFor(t, hr, "InstallFailed "+contains, func() bool {
			c := cond(hr, meta.ReadyCondition)
			return c != nil && c.Reason == helmv2.InstallFailedReason && strings.HasPrefix(c.Message, prefix) && strings.Contains(c.Message, contains)
		})
	}
	installFailed(failed, fmt.Sprintf("Deployment/%s/failed-podinfo status: 'Failed'", ns))
	installFailed(unknown, fmt.Sprintf("timeout waiting for: [Deployment/%s/unknown-podinfo status: 'Unknown': failed to evaluate the CEL expression 'has(data.foo.bar)'", ns))

	waitFor(t, invalid, "Stalled InvalidCELExpression", func() bool {
		c := cond(invalid, meta.StalledCondition)
		return c != nil && c.Reason == meta.InvalidCELExpressionReason && invalid.Status.ObservedGeneration == invalid.Generation
	})
	testenv.CheckStatus(t, invalid)
	want := "Reconciliation failed terminally due to configuration error: failed to create custom status evaluator for healthchecks[0]: " +
		"failed to parse the expression Current: failed to parse the CEL expression 'status.readyReplicas =='"
	if c := cond(invalid, meta.ReadyCondition); c.Status != metav1.ConditionFalse || c.Reason != meta.InvalidCELExpressionReason || !strings.HasPrefix(c.Message, want) {
		t.Errorf("Ready %+v", c)
	}
	if len(invalid.Status.History) != 0 || len(releaseSecrets(t, ns, "invalid")) != 0 {
		t.Errorf("a release with invalid healthCheckExprs was installed: %+v", invalid.Status.History)
	}
}

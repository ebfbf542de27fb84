package controller

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// job is a Job manifest; spec and podSpec are extra lines of its spec and
// of its pod template's spec.
func job(ns, name, spec, podSpec string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s, namespace: %s}
spec:
%s  template:
    spec:
%s      restartPolicy: Never
      containers: [{name: run, image: "ghcr.io/example/migrate:1.0.0"}]
`, name, ns, spec, podSpec)
}

// TestJobHealth runs three Job inputs through the built
// kustomize-controller with spec.wait: a Job whose pod cannot be scheduled
// is in progress until it times out (kstatus alone says Current once
// started); a Job with ttlSecondsAfterFinished: 0, deleted once complete,
// is healthy; a suspended Job is healthy; a Job past its deadline fails
// the health check at once, with Flux's message in the status and the
// Job's own reason added in the event.
func TestJobHealth(t *testing.T) {
	ns := binaryNS
	appNS := newNamespace(t)
	r := newRepo(t, map[string]string{
		"unschedulable/job.yaml": job(appNS, "stuck", "  backoffLimit: 0\n", "      nodeSelector: {no-such-node: \"true\"}\n"),
		// A Deployment keeps the first round of health checks pending, so
		// the Job, deleted once complete, is checked again when it is gone.
		"ttl/job.yaml":        job(appNS, "once", "  ttlSecondsAfterFinished: 0\n", ""),
		"ttl/deployment.yaml": strings.ReplaceAll(deployment(appNS, 1, ""), "payment-api", "ttl-web"),
		"suspended/job.yaml":  job(appNS, "later", "  suspend: true\n", ""),
		// The Job controller fails it once its deadline passes.
		"failed/job.yaml": job(appNS, "late", "  backoffLimit: 0\n  activeDeadlineSeconds: 1\n", "      nodeSelector: {no-such-node: \"true\"}\n"),
	})
	src := newSource(t, ns, "jobs-"+appNS, r)
	rev := src.Status.Artifact.Revision
	ks := func(name string) *kustomizev1.Kustomization {
		return newKustomization(t, ns, name+"-"+appNS, src.Name, func(k *kustomizev1.Kustomization) {
			k.Spec.Path = "./" + name
			k.Spec.Wait = true
			k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second}
		})
	}
	unschedulable, ttl, suspended := ks("unschedulable"), ks("ttl"), ks("suspended")
	failed := newKustomization(t, ns, "failed-"+appNS, src.Name, func(k *kustomizev1.Kustomization) {
		k.Spec.Path = "./failed"
		k.Spec.Wait = true
		// Far beyond the test's own wait: only failing fast ends it in time.
		k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Minute}
	})

	t.Run("suspended", func(t *testing.T) {
		t.Parallel()
		waitApplied(t, suspended, rev)
	})
	t.Run("ttl", func(t *testing.T) {
		t.Parallel()
		waitApplied(t, ttl, rev)
		// The input really was a Job deleted once complete.
		if !waitGone(t, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"namespace": appNS, "name": "once"}}}) {
			t.Error("the Job with ttlSecondsAfterFinished: 0 was not deleted")
		}
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		c := waitFailed(t, failed, kustomizev1.HealthCheckFailedReason)
		// Flux's text, exactly; kstatus's reason is in the event only.
		want := regexp.MustCompile(`^health check failed after [0-9]+s: failed early due to stalled resources: \[Job/` +
			regexp.QuoteMeta(appNS) + `/late status: 'Failed'\]$`)
		if !want.MatchString(c.Message) {
			t.Errorf("Ready message %q, want %s", c.Message, want)
		}
		var evs []string
		waitFor(t, failed, "a HealthCheckFailed event", func() bool {
			evs = kubeEvents(t, failed.Namespace, failed.Name, kustomizev1.HealthCheckFailedReason)
			return len(evs) > 0
		})
		if detail := fmt.Sprintf("(Job/%s/late: Job Failed. failed: ", appNS); !strings.HasPrefix(evs[0], c.Message+" "+detail) {
			t.Errorf("event %q, want the Ready message followed by %q", evs[0], detail)
		}
	})
	t.Run("unschedulable", func(t *testing.T) {
		t.Parallel()
		c := waitFailed(t, unschedulable, kustomizev1.HealthCheckFailedReason)
		want := fmt.Sprintf("timeout waiting for: [Job/%s/stuck status: 'InProgress']", appNS)
		if !strings.Contains(c.Message, want) {
			t.Errorf("Ready message %q, want it to contain %q", c.Message, want)
		}
		if h := apimeta.FindStatusCondition(unschedulable.Status.Conditions, kustomizev1.HealthyCondition); h == nil || h.Status != metav1.ConditionFalse {
			t.Errorf("Healthy %+v", h)
		}
	})
}

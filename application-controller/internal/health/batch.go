package health

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// jobHealth reads the Job's conditions as Argo CD does: none of Complete,
// Failed or Suspended ⇒ Progressing; a Failed condition ⇒ Degraded with its
// message; Suspended=True ⇒ Suspended; else Healthy. Like Argo CD it looks
// at a condition's type, not its status, except for Suspended: a Job
// resumed after a suspension (Suspended=False) is Healthy while it runs.
func jobHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var job batchv1.Job
	if err := typed(u, &job); err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	var finished, failed, suspended bool
	var msg, failMsg string
	for _, c := range job.Status.Conditions {
		switch c.Type {
		case batchv1.JobFailed:
			finished, failed, failMsg = true, true, c.Message
		case batchv1.JobComplete:
			finished, msg = true, c.Message
		case batchv1.JobSuspended:
			finished, msg = true, c.Message
			suspended = c.Status == corev1.ConditionTrue
		}
	}
	switch {
	case !finished:
		return status(v1alpha1.HealthProgressing, msg), nil
	case failed:
		return status(v1alpha1.HealthDegraded, failMsg), nil
	case suspended:
		return status(v1alpha1.HealthSuspended, msg), nil
	}
	return status(v1alpha1.HealthHealthy, msg), nil
}

// cronJobHealth behaves as the CronJob health script Argo CD bundles
// (resource_customizations/batch/CronJob): a suspended CronJob is Healthy
// (Argo CD says so until its Suspended handling is fixed); without a
// status ⇒ Progressing; never scheduled, never succeeded yet, or running a
// Job ⇒ Healthy; last success before the last schedule ⇒ Degraded (the
// last run failed); else Healthy.
func cronJobHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	if suspend, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); suspend {
		return status(v1alpha1.HealthHealthy, "CronJob is suspended"), nil
	}
	st, found, _ := unstructured.NestedMap(u.Object, "status")
	if !found {
		return status(v1alpha1.HealthProgressing, "Waiting for the CronJob controller"), nil
	}
	scheduled, _, _ := unstructured.NestedString(st, "lastScheduleTime")
	succeeded, _, _ := unstructured.NestedString(st, "lastSuccessfulTime")
	active, _, _ := unstructured.NestedSlice(st, "active")
	switch {
	case scheduled == "":
		return status(v1alpha1.HealthHealthy, "CronJob has not been scheduled yet"), nil
	case succeeded == "":
		return status(v1alpha1.HealthHealthy, "CronJob has never completed successfully, it may not be healthy"), nil
	case len(active) > 0:
		return status(v1alpha1.HealthHealthy, "A Job of the CronJob is running; the previous one may have failed"), nil
	case before(succeeded, scheduled):
		return status(v1alpha1.HealthDegraded, "The last Job of the CronJob did not complete successfully"), nil
	}
	return status(v1alpha1.HealthHealthy, "The last Job of the CronJob completed successfully"), nil
}

// before compares two RFC 3339 timestamps; when one does not parse it
// compares the strings, as Argo CD's script does.
func before(a, b string) bool {
	ta, errA := time.Parse(time.RFC3339, a)
	tb, errB := time.Parse(time.RFC3339, b)
	if errA != nil || errB != nil {
		return a < b
	}
	return ta.Before(tb)
}

// workflowHealth maps an Argo Workflow's status.phase: none, Pending,
// Running ⇒ Progressing; Succeeded ⇒ Healthy; Failed, Error ⇒ Degraded;
// anything else ⇒ Unknown. The message is status.message.
func workflowHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
	switch phase {
	case "", "Pending", "Running":
		return status(v1alpha1.HealthProgressing, msg), nil
	case "Succeeded":
		return status(v1alpha1.HealthHealthy, msg), nil
	case "Failed", "Error":
		return status(v1alpha1.HealthDegraded, msg), nil
	}
	return status(v1alpha1.HealthUnknown, msg), nil
}

// pdbHealth behaves as the PodDisruptionBudget script Argo CD bundles: no
// conditions yet ⇒ Progressing; a condition False for any reason but
// InsufficientPods (a valid state for small apps) ⇒ Degraded; else
// Healthy. The message names the last condition's reason.
func pdbHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	st := status(v1alpha1.HealthProgressing, "Waiting for the disruption controller")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		s, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		if s == "False" && reason != "InsufficientPods" {
			return status(v1alpha1.HealthDegraded, "PodDisruptionBudget: "+reason), nil
		}
		st = status(v1alpha1.HealthHealthy, "PodDisruptionBudget: "+reason)
	}
	return st, nil
}

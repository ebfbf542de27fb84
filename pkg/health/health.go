// Package health says whether an object applied by Eddy is healthy, for the
// health checks of kustomize-controller (spec.wait, spec.healthChecks).
//
// The rules are kstatus's (sigs.k8s.io/cli-utils/pkg/kstatus/status), which
// Flux uses, with Flux's rule for batch Jobs in place of kstatus's: kstatus
// reports a started Job as Current while its pods still run (or cannot be
// scheduled), Flux waits for it to finish. Flux compatible
// (fluxcd/pkg runtime/statusreaders job reader, ssa WaitOptions.JobsWithTTL).
package health

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Compute returns the kstatus status of u (Current, InProgress, Failed,
// Terminating, ...) with a message saying why. It is status.Compute for
// every kind but batch Jobs, for which see JobStatus. The error is
// status.Compute's: a status field of an unexpected type.
func Compute(u *unstructured.Unstructured) (*status.Result, error) {
	if IsJob(u) {
		return JobStatus(u)
	}
	return status.Compute(u)
}

// IsJob reports whether u is a batch Job (any version of group batch).
func IsJob(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "batch" && gvk.Kind == "Job"
}

// JobStatus is the status of a batch Job:
//   - condition Complete=True ⇒ Current (Flux compatible);
//   - condition Failed=True ⇒ Failed, so health checks fail fast (Flux
//     compatible), also when the failed Job was suspended afterwards;
//   - spec.suspend: true ⇒ Current ("Job is suspended"). Beyond Flux:
//     Flux's job reader and kstatus v0.37 both say
//     InProgress, so a Kustomization with wait and a suspended Job would
//     time out there although nothing will ever run until someone resumes it;
//   - otherwise InProgress, whether the Job has started or not: a Job is
//     healthy once it has finished, not while its pods run or wait for a
//     node (Flux compatible; kstatus says Current once started).
//
// The conditions and counters are those the Job controller writes.
func JobStatus(u *unstructured.Unstructured) (*status.Result, error) {
	obj := u.UnstructuredContent()
	parallelism := status.GetIntField(obj, ".spec.parallelism", 1)
	completions := status.GetIntField(obj, ".spec.completions", parallelism)
	active := status.GetIntField(obj, ".status.active", 0)
	succeeded := status.GetIntField(obj, ".status.succeeded", 0)
	failed := status.GetIntField(obj, ".status.failed", 0)
	withConds, err := status.GetObjectWithConditions(obj)
	if err != nil {
		return nil, err
	}
	for _, c := range withConds.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case "Complete":
			return &status.Result{Status: status.CurrentStatus, Conditions: []status.Condition{},
				Message: fmt.Sprintf("Job Completed. succeeded: %d/%d", succeeded, completions)}, nil
		case "Failed":
			msg := fmt.Sprintf("Job Failed. failed: %d/%d", failed, completions)
			return &status.Result{Status: status.FailedStatus, Message: msg, Conditions: []status.Condition{
				{Type: status.ConditionStalled, Status: corev1.ConditionTrue, Reason: "JobFailed", Message: msg}}}, nil
		}
	}
	if suspended, found, err := unstructured.NestedBool(obj, "spec", "suspend"); err == nil && found && suspended {
		return &status.Result{Status: status.CurrentStatus, Message: "Job is suspended", Conditions: []status.Condition{}}, nil
	}
	reason, msg := "JobInProgress", fmt.Sprintf("Job in progress. success:%d, active: %d, failed: %d", succeeded, active, failed)
	if status.GetStringField(obj, ".status.startTime", "") == "" {
		reason, msg = "JobNotStarted", fmt.Sprintf("Job not started. active: 0/%d", parallelism)
	}
	return &status.Result{Status: status.InProgressStatus, Message: msg, Conditions: []status.Condition{
		{Type: status.ConditionReconciling, Status: corev1.ConditionTrue, Reason: reason, Message: msg}}}, nil
}

// DeletedWhenFinished reports whether u, as applied, is a batch Job with
// spec.ttlSecondsAfterFinished set (0 included): the TTL controller deletes
// it once it has finished, so a health check counts its absence as healthy.
// Flux compatible (ExtractJobsWithTTL).
func DeletedWhenFinished(u *unstructured.Unstructured) bool {
	if !IsJob(u) {
		return false
	}
	_, found, err := unstructured.NestedInt64(u.Object, "spec", "ttlSecondsAfterFinished")
	return err == nil && found
}

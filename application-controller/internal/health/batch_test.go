package health

import (
	"fmt"
	"testing"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// job is a Job with the given extra spec fields and status.
func job(spec, status string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, generation: 1}
spec: {completions: 1, parallelism: 1, backoffLimit: 2%s, template: {spec: {restartPolicy: Never, containers: [{name: m, image: migrate}]}}}
status: %s`, spec, status)
}

func TestJobHealthFollowsItsConditions(t *testing.T) {
	runHealth(t, []healthCase{
		{name: "not started", want: v1alpha1.HealthProgressing, yaml: job("", "{}")},
		{name: "running", want: v1alpha1.HealthProgressing, yaml: job("", `{startTime: "2026-01-01T00:00:00Z", active: 1, ready: 1}`)},
		{name: "complete", want: v1alpha1.HealthHealthy, msgHas: "Reached expected number of succeeded pods", yaml: job("", `{succeeded: 1,
  conditions: [{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached},
    {type: Complete, status: "True", reason: CompletionsReached, message: Reached expected number of succeeded pods}]}`)},
		{name: "failed", want: v1alpha1.HealthDegraded, msgHas: "backoff limit", yaml: job("", `{failed: 3,
  conditions: [{type: FailureTarget, status: "True", reason: BackoffLimitExceeded},
    {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}]}`)},
		{name: "suspended", want: v1alpha1.HealthSuspended, msgHas: "Job suspended", yaml: job(", suspend: true",
			`{conditions: [{type: Suspended, status: "True", reason: JobSuspended, message: Job suspended}]}`)},
		// Argo CD reads any Suspended condition as an end state: a resumed
		// Job is Healthy while it runs.
		{name: "resumed", want: v1alpha1.HealthHealthy, msgHas: "Job resumed", yaml: job(", suspend: false",
			`{active: 1, conditions: [{type: Suspended, status: "False", reason: JobResumed, message: Job resumed}]}`)},
	})
}

// cronJob is the nightly CronJob with the given extra spec and status
// ("" for no status at all).
func cronJob(spec, status string) string {
	y := fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: app}
spec: {schedule: "0 2 * * *"%s, jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: r, image: report}]}}}}}
`, spec)
	if status != "" {
		y += "status: " + status
	}
	return y
}

func TestCronJobHealthAsArgoCDsScript(t *testing.T) {
	runHealth(t, []healthCase{
		{name: "suspended is Healthy", want: v1alpha1.HealthHealthy, msgHas: "suspended", yaml: cronJob(", suspend: true",
			`{lastScheduleTime: "2026-01-02T02:00:00Z", lastSuccessfulTime: "2026-01-01T02:00:10Z"}`)},
		{name: "no status yet", want: v1alpha1.HealthProgressing, yaml: cronJob("", "")},
		{name: "never scheduled", want: v1alpha1.HealthHealthy, msgHas: "not been scheduled", yaml: cronJob("", "{}")},
		{name: "first run, never succeeded", want: v1alpha1.HealthHealthy, msgHas: "never completed",
			yaml: cronJob("", `{lastScheduleTime: "2026-01-01T02:00:00Z", active: [{kind: Job, name: nightly-29000000, namespace: app}]}`)},
		{name: "running after a success", want: v1alpha1.HealthHealthy, msgHas: "running", yaml: cronJob("", `{lastScheduleTime: "2026-01-02T02:00:00Z",
  lastSuccessfulTime: "2026-01-01T02:00:10Z", active: [{kind: Job, name: nightly-29001440, namespace: app}]}`)},
		{name: "last run failed", want: v1alpha1.HealthDegraded, msgHas: "did not complete",
			yaml: cronJob("", `{lastScheduleTime: "2026-01-02T02:00:00Z", lastSuccessfulTime: "2026-01-01T02:00:10Z"}`)},
		{name: "last run succeeded", want: v1alpha1.HealthHealthy, msgHas: "completed successfully",
			yaml: cronJob("", `{lastScheduleTime: "2026-01-02T02:00:00Z", lastSuccessfulTime: "2026-01-02T02:00:09Z"}`)},
	})
}

func TestHPAHealthFollowsItsConditions(t *testing.T) {
	v2 := func(conds string) string {
		return `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: app}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 2, maxReplicas: 5}
status: {currentReplicas: 2, desiredReplicas: 2, conditions: ` + conds + "}"
	}
	v1 := func(annotations string) string {
		return fmt.Sprintf(`apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: app, annotations: {%s}}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 5}`, annotations)
	}
	runHealth(t, []healthCase{
		{name: "v2 scaling", want: v1alpha1.HealthHealthy, msgHas: "recommended size matches", yaml: v2(`[
  {type: AbleToScale, status: "True", reason: ReadyForNewScale, message: recommended size matches current size},
  {type: ScalingActive, status: "True", reason: ValidMetricFound},
  {type: ScalingLimited, status: "False", reason: DesiredWithinRange}]`)},
		{name: "v2 without metrics server", want: v1alpha1.HealthDegraded, msgHas: "unable to get metrics", yaml: v2(`[
  {type: AbleToScale, status: "True", reason: SucceededGetScale},
  {type: ScalingActive, status: "False", reason: FailedGetResourceMetric, message: "the HPA was unable to compute the replica count: unable to get metrics"}]`)},
		{name: "v2 at its limit", want: v1alpha1.HealthHealthy, yaml: v2(`[{type: ScalingLimited, status: "True", reason: TooManyReplicas}]`)},
		{name: "v2 not yet processed", want: v1alpha1.HealthProgressing, yaml: v2("[]")},
		{name: "v1 without conditions annotation", want: v1alpha1.HealthProgressing, yaml: v1("")},
		{name: "v1 conditions annotation", want: v1alpha1.HealthHealthy, yaml: v1(
			`autoscaling.alpha.kubernetes.io/conditions: '[{"type":"AbleToScale","status":"True","reason":"SucceededGetScale"}]'`)},
	})
}

func TestAPIServiceHealthFollowsAvailable(t *testing.T) {
	api := func(status string) string {
		return `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec: {group: metrics.k8s.io, version: v1beta1, service: {name: metrics-server, namespace: kube-system}}
status: ` + status
	}
	runHealth(t, []healthCase{
		{name: "available", want: v1alpha1.HealthHealthy, msgHas: "Passed: all checks passed",
			yaml: api(`{conditions: [{type: Available, status: "True", reason: Passed, message: all checks passed}]}`)},
		{name: "service unreachable", want: v1alpha1.HealthProgressing, msgHas: "FailedDiscoveryCheck",
			yaml: api(`{conditions: [{type: Available, status: "False", reason: FailedDiscoveryCheck, message: failing}]}`)},
		{name: "not yet checked", want: v1alpha1.HealthProgressing, yaml: api("{}")},
	})
}

func TestWorkflowAndPDBHealth(t *testing.T) {
	wf := func(phase string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: wf, namespace: app}\nstatus: {phase: " + phase + ", message: m}"
	}
	pdb := func(status string) string {
		return "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: app}\nspec: {minAvailable: 1}\nstatus: " + status
	}
	runHealth(t, []healthCase{
		{name: "Workflow running", want: v1alpha1.HealthProgressing, yaml: wf("Running")},
		{name: "Workflow succeeded", want: v1alpha1.HealthHealthy, yaml: wf("Succeeded")},
		{name: "Workflow error", want: v1alpha1.HealthDegraded, yaml: wf("Error")},
		{name: "Workflow odd phase", want: v1alpha1.HealthUnknown, yaml: wf("Skipped")},
		{name: "PDB without status", want: v1alpha1.HealthProgressing, yaml: pdb("{}")},
		{name: "PDB allows disruption", want: v1alpha1.HealthHealthy, msgHas: "SufficientPods",
			yaml: pdb(`{conditions: [{type: DisruptionAllowed, status: "True", reason: SufficientPods}]}`)},
		{name: "PDB with too few pods is fine", want: v1alpha1.HealthHealthy,
			yaml: pdb(`{conditions: [{type: DisruptionAllowed, status: "False", reason: InsufficientPods}]}`)},
		{name: "PDB sync failed", want: v1alpha1.HealthDegraded, msgHas: "SyncFailed",
			yaml: pdb(`{conditions: [{type: DisruptionAllowed, status: "False", reason: SyncFailed}]}`)},
	})
}

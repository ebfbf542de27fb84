package health

import (
	"fmt"
	"testing"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// deployment is a 3-replica Deployment at generation 2 with the given
// extra spec fields and status, as the deployment controller writes it.
func deployment(spec, status string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 2}
spec: {replicas: 3, progressDeadlineSeconds: 600, selector: {matchLabels: {app: web}}%s}
status: %s`, spec, status)
}

// deployStatus is an observed status; progressing is the Progressing
// condition's status and reason.
func deployStatus(observed, replicas, updated, available int, progressing string) string {
	return fmt.Sprintf(`{observedGeneration: %d, replicas: %d, updatedReplicas: %d, readyReplicas: %d, availableReplicas: %d,
  conditions: [{type: Available, status: "True", reason: MinimumReplicasAvailable}, {type: Progressing, %s}]}`,
		observed, replicas, updated, available, available, progressing)
}

func TestDeploymentHealthFollowsTheRollout(t *testing.T) {
	const updating = `status: "True", reason: ReplicaSetUpdated`
	runHealth(t, []healthCase{
		{name: "spec not yet observed", want: v1alpha1.HealthProgressing, msgHas: "latest spec",
			yaml: deployment("", deployStatus(1, 3, 3, 3, `status: "True", reason: NewReplicaSetAvailable`))},
		{name: "mid-rollout: new pods being created", want: v1alpha1.HealthProgressing, msgHas: "1 of 3 replicas updated",
			yaml: deployment("", deployStatus(2, 4, 1, 3, updating))},
		{name: "mid-rollout: old pods terminating", want: v1alpha1.HealthProgressing, msgHas: "1 old replicas",
			yaml: deployment("", deployStatus(2, 4, 3, 3, updating))},
		{name: "mid-rollout: new pods not yet available", want: v1alpha1.HealthProgressing, msgHas: "2 of 3 updated replicas available",
			yaml: deployment("", deployStatus(2, 3, 3, 2, updating))},
		{name: "progress deadline exceeded", want: v1alpha1.HealthDegraded, msgHas: `"web" has exceeded its progress deadline`,
			yaml: deployment("", deployStatus(2, 4, 1, 3, `status: "False", reason: ProgressDeadlineExceeded`))},
		{name: "paused mid-rollout", want: v1alpha1.HealthSuspended, msgHas: "paused",
			yaml: deployment(", paused: true", deployStatus(2, 4, 1, 3, `status: "Unknown", reason: DeploymentPaused`))},
		{name: "rolled out", want: v1alpha1.HealthHealthy,
			yaml: deployment("", deployStatus(2, 3, 3, 3, `status: "True", reason: NewReplicaSetAvailable`))},
		{name: "scaled to zero", want: v1alpha1.HealthHealthy, yaml: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 3}
spec: {replicas: 0}
status: {observedGeneration: 3}`},
	})
}

// statefulSet is a 3-replica StatefulSet at generation 2.
func statefulSet(spec, status string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: app, generation: 2}
spec: {replicas: 3, serviceName: db%s}
status: %s`, spec, status)
}

func TestStatefulSetHealthFollowsTheRollout(t *testing.T) {
	const rolling = ", updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: %d}}"
	runHealth(t, []healthCase{
		{name: "never observed", want: v1alpha1.HealthProgressing, yaml: statefulSet("", "{replicas: 0}")},
		{name: "spec not yet observed", want: v1alpha1.HealthProgressing,
			yaml: statefulSet("", "{observedGeneration: 1, replicas: 3, readyReplicas: 3}")},
		{name: "pods not ready", want: v1alpha1.HealthProgressing, msgHas: "Waiting for 2 pods",
			yaml: statefulSet("", "{observedGeneration: 2, replicas: 3, readyReplicas: 1, currentRevision: db-1, updateRevision: db-1}")},
		{name: "partitioned rollout under way", want: v1alpha1.HealthProgressing, msgHas: "0 of 1 pods updated",
			yaml: statefulSet(fmt.Sprintf(rolling, 2),
				"{observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 0, currentRevision: db-1, updateRevision: db-2}")},
		{name: "partitioned rollout done", want: v1alpha1.HealthHealthy,
			yaml: statefulSet(fmt.Sprintf(rolling, 2),
				"{observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}")},
		{name: "OnDelete with an old revision", want: v1alpha1.HealthHealthy,
			yaml: statefulSet(", updateStrategy: {type: OnDelete}",
				"{observedGeneration: 2, replicas: 3, readyReplicas: 3, currentRevision: db-1, updateRevision: db-2}")},
		{name: "rolling update under way", want: v1alpha1.HealthProgressing, msgHas: "revision db-2",
			yaml: statefulSet("", "{observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}")},
		{name: "rolled out", want: v1alpha1.HealthHealthy,
			yaml: statefulSet("", "{observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, currentRevision: db-2, updateRevision: db-2}")},
	})
}

// daemonSet is a DaemonSet at generation 2.
func daemonSet(spec, status string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: app, generation: 2}
spec: {selector: {matchLabels: {app: agent}}%s}
status: %s`, spec, status)
}

func TestDaemonSetHealthFollowsTheRollout(t *testing.T) {
	runHealth(t, []healthCase{
		{name: "spec not yet observed", want: v1alpha1.HealthProgressing,
			yaml: daemonSet("", "{observedGeneration: 1, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2}")},
		{name: "OnDelete with old pods", want: v1alpha1.HealthHealthy,
			yaml: daemonSet(", updateStrategy: {type: OnDelete}", "{observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 0, numberAvailable: 2}")},
		{name: "pods being updated", want: v1alpha1.HealthProgressing, msgHas: "1 of 2 pods updated",
			yaml: daemonSet("", "{observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 1, numberAvailable: 2}")},
		{name: "pods not available", want: v1alpha1.HealthProgressing, msgHas: "1 of 2 pods available",
			yaml: daemonSet("", "{observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 1}")},
		{name: "rolled out", want: v1alpha1.HealthHealthy,
			yaml: daemonSet("", "{observedGeneration: 2, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, numberReady: 2}")},
	})
}

func TestReplicaSetHealth(t *testing.T) {
	rs := func(status string) string {
		return "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web-5d4f, namespace: app, generation: 1}\nspec: {replicas: 2}\nstatus: " + status
	}
	runHealth(t, []healthCase{
		{name: "spec not yet observed", want: v1alpha1.HealthProgressing, yaml: rs("{replicas: 0}")},
		{name: "quota refuses pods", want: v1alpha1.HealthDegraded, msgHas: "exceeded quota", yaml: rs(`{observedGeneration: 1, replicas: 0,
  conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreate, message: "pods \"web-5d4f-x\" is forbidden: exceeded quota: compute"}]}`)},
		{name: "pods not available", want: v1alpha1.HealthProgressing, msgHas: "1 of 2", yaml: rs("{observedGeneration: 1, replicas: 2, availableReplicas: 1}")},
		{name: "available", want: v1alpha1.HealthHealthy, yaml: rs("{observedGeneration: 1, replicas: 2, readyReplicas: 2, availableReplicas: 2}")},
	})
}

package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	// Through JSON, as the API server's answers arrive: integers stay int64.
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return u
}

// manifest is an object as YAML: metadata and spec are the insides of
// flow maps; status is appended after "status:" (" {...}" or an indented
// block), none when "".
func manifest(apiVersion, kind, metadata, spec, status string) string {
	s := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {%s}\nspec: {%s}\n", apiVersion, kind, metadata, spec)
	if status != "" {
		s += "status:" + status + "\n"
	}
	return s
}

func deployment(generation int, status string) string {
	return manifest("apps/v1", "Deployment", fmt.Sprintf("name: web, namespace: app, generation: %d", generation),
		"replicas: 2, progressDeadlineSeconds: 600", status)
}

// deploymentStatus has 2 ready and available replicas, Available, and the
// given Progressing condition (its status and reason).
func deploymentStatus(observed, replicas, updated int, extra, progressing string) string {
	return fmt.Sprintf(`
  observedGeneration: %d
  replicas: %d
  updatedReplicas: %d
  readyReplicas: 2
  availableReplicas: 2%s
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, %s}`, observed, replicas, updated, extra, progressing)
}

// statefulSet has 3 replicas, observed; spec and status add to that.
func statefulSet(generation int, spec, status string) string {
	return manifest("apps/v1", "StatefulSet", fmt.Sprintf("name: db, namespace: app, generation: %d", generation),
		"replicas: 3"+spec, fmt.Sprintf(" {observedGeneration: %d, replicas: 3, %s}", generation, status))
}

func daemonSet(status string) string {
	return manifest("apps/v1", "DaemonSet", "name: agent, namespace: app, generation: 1", "", status)
}

func job(generation int, spec, status string) string {
	return manifest("batch/v1", "Job", fmt.Sprintf("name: migrate, namespace: app, generation: %d", generation), spec, status)
}

func pod(metadata, spec, status string) string {
	return manifest("v1", "Pod", "name: p, namespace: app"+metadata, "containers: [{name: c, image: busybox}]"+spec, status)
}

// The objects are shaped as the built-in controllers (deployment, statefulset,
// daemonset, job, persistentvolume binder, service, kubelet) write them.
var (
	deployNew         = deployment(1, "")
	deployRollout     = deployment(2, deploymentStatus(1, 2, 2, "", `status: "True", reason: NewReplicaSetAvailable`))
	deployUnavailable = deployment(2, deploymentStatus(2, 3, 1, "\n  unavailableReplicas: 1", `status: "True", reason: ReplicaSetUpdated`))
	deployAvailable   = deployment(2, deploymentStatus(2, 2, 2, "", `status: "True", reason: NewReplicaSetAvailable`))
	deployDeadline    = deployment(2, deploymentStatus(2, 3, 1, "", `status: "False", reason: ProgressDeadlineExceeded`))
	deployDeleting    = manifest("apps/v1", "Deployment",
		`name: web, namespace: app, generation: 2, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [foregroundDeletion]`,
		"replicas: 2", " {observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}")
	stsNotReady  = statefulSet(1, "", "readyReplicas: 1, currentReplicas: 3, updatedReplicas: 3, currentRevision: db-1, updateRevision: db-1")
	stsRevision  = statefulSet(2, "", "readyReplicas: 3, currentReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2")
	stsReady     = statefulSet(2, "", "readyReplicas: 3, availableReplicas: 3, currentReplicas: 3, updatedReplicas: 3, currentRevision: db-2, updateRevision: db-2")
	stsOnDelete  = statefulSet(2, ", updateStrategy: {type: OnDelete}", "readyReplicas: 1, currentReplicas: 3, currentRevision: db-1, updateRevision: db-2")
	dsUnobserved = daemonSet("")
	dsNotReady   = daemonSet(" {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 1, numberReady: 1}")
	dsReady      = daemonSet(" {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, numberReady: 2}")
	jobNew       = job(1, "completions: 1, parallelism: 1", "")
	// A started Job whose pod waits for a node: active, no condition.
	jobActive = job(1, "completions: 1, parallelism: 1",
		` {startTime: "2026-01-01T00:00:00Z", active: 1, ready: 0, terminating: 0, uncountedTerminatedPods: {}}`)
	jobComplete = job(1, "completions: 1, parallelism: 1, ttlSecondsAfterFinished: 0", ` {startTime: "2026-01-01T00:00:00Z", completionTime: "2026-01-01T00:00:05Z", succeeded: 1, conditions: [`+
		`{type: SuccessCriteriaMet, status: "True", reason: CompletionsReached}, {type: Complete, status: "True", reason: CompletionsReached}]}`)
	jobFailed = job(1, "completions: 1, parallelism: 1, backoffLimit: 0", ` {startTime: "2026-01-01T00:00:00Z", failed: 1, conditions: [`+
		`{type: FailureTarget, status: "True", reason: BackoffLimitExceeded}, {type: Failed, status: "True", reason: BackoffLimitExceeded}]}`)
	// Created suspended: the Job controller never starts it.
	jobSuspended = job(1, "completions: 1, parallelism: 1, suspend: true", `
  conditions:
  - {type: Suspended, status: "True", reason: JobSuspended, message: Job suspended}`)
	// Suspended after it started: startTime stays, active drops to 0.
	jobSuspendedStarted = job(2, "completions: 1, parallelism: 1, suspend: true", `
  startTime: "2026-01-01T00:00:00Z"
  active: 0
  conditions:
  - {type: Suspended, status: "True", reason: JobSuspended, message: Job suspended}`)
	pvcPending = manifest("v1", "PersistentVolumeClaim", "name: data, namespace: app",
		"accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}", " {phase: Pending}")
	pvcBound = manifest("v1", "PersistentVolumeClaim", "name: data, namespace: app",
		"accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeName: pv-1",
		" {phase: Bound, accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}}")
	svcLBNoIP    = manifest("v1", "Service", "name: edge, namespace: app", "type: LoadBalancer, ports: [{port: 80}]", "")
	svcLBPending = manifest("v1", "Service", "name: edge, namespace: app",
		"type: LoadBalancer, clusterIP: 10.0.0.12, ports: [{port: 80, nodePort: 30080}]", " {loadBalancer: {}}")
	svcLBIngress = manifest("v1", "Service", "name: edge, namespace: app",
		"type: LoadBalancer, clusterIP: 10.0.0.12, ports: [{port: 80, nodePort: 30080}]", " {loadBalancer: {ingress: [{ip: 192.0.2.10}]}}")
	svcClusterIP     = manifest("v1", "Service", "name: api, namespace: app", "clusterIP: 10.0.0.13, ports: [{port: 80}]", "")
	podNoPhase       = pod("", "", "")
	podPending       = pod("", "", ` {phase: Pending, conditions: [{type: PodScheduled, status: "True"}]}`)
	podUnschedulable = pod(`, creationTimestamp: "%s"`, ", nodeSelector: {disk: ssd}", `
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."}`)
	podRunningNotReady = pod("", "", `
  phase: Running
  conditions: [{type: Ready, status: "False", reason: ContainersNotReady}]
  containerStatuses: [{name: c, ready: false, restartCount: 0, image: busybox, imageID: "", state: {running: {startedAt: "2026-01-01T00:00:00Z"}}}]`)
	podCrashLoop = pod("", "", `
  phase: Running
  conditions: [{type: Ready, status: "False", reason: ContainersNotReady}]
  containerStatuses: [{name: c, ready: false, restartCount: 5, image: busybox, imageID: "", state: {waiting: {reason: CrashLoopBackOff}}}]`)
	podReady = pod("", "", `
  phase: Running
  conditions: [{type: Ready, status: "True"}]`)
	podSucceeded = pod("", ", restartPolicy: Never", " {phase: Succeeded}")
)

// TestComputeFollowsKstatus checks Compute against kstatus's status.Compute on
// each built-in workload kind in its usual states: the same status and
// message, except for Jobs, where Flux's rule differs from kstatus's in the
// rows that say so (and the messages are Flux's).
func TestComputeFollowsKstatus(t *testing.T) {
	now := time.Now().UTC()
	recent := now.Add(-2 * time.Second).Format(time.RFC3339)
	old := now.Add(-time.Minute).Format(time.RFC3339)
	for _, tc := range []struct {
		name string
		yaml string
		want status.Status
		// kstatus is status.Compute's answer where Flux's Job rule differs.
		kstatus status.Status
	}{
		{name: "Deployment created, not observed", yaml: deployNew, want: status.InProgressStatus},
		{name: "Deployment new generation not observed", yaml: deployRollout, want: status.InProgressStatus},
		{name: "Deployment rolling out", yaml: deployUnavailable, want: status.InProgressStatus},
		{name: "Deployment available", yaml: deployAvailable, want: status.CurrentStatus},
		{name: "Deployment progress deadline exceeded", yaml: deployDeadline, want: status.FailedStatus},
		{name: "Deployment being deleted", yaml: deployDeleting, want: status.TerminatingStatus},
		{name: "StatefulSet pods not ready", yaml: stsNotReady, want: status.InProgressStatus},
		{name: "StatefulSet revision rolling", yaml: stsRevision, want: status.InProgressStatus},
		{name: "StatefulSet ready", yaml: stsReady, want: status.CurrentStatus},
		{name: "StatefulSet OnDelete", yaml: stsOnDelete, want: status.CurrentStatus},
		{name: "DaemonSet not observed", yaml: dsUnobserved, want: status.InProgressStatus},
		{name: "DaemonSet pods not ready", yaml: dsNotReady, want: status.InProgressStatus},
		{name: "DaemonSet ready", yaml: dsReady, want: status.CurrentStatus},
		{name: "Job not started", yaml: jobNew, want: status.InProgressStatus},
		{name: "Job active, pod not scheduled", yaml: jobActive, want: status.InProgressStatus, kstatus: status.CurrentStatus},
		{name: "Job complete", yaml: jobComplete, want: status.CurrentStatus},
		{name: "Job failed", yaml: jobFailed, want: status.FailedStatus},
		{name: "Job suspended", yaml: jobSuspended, want: status.CurrentStatus, kstatus: status.InProgressStatus},
		{name: "Job suspended after start", yaml: jobSuspendedStarted, want: status.CurrentStatus},
		{name: "Job failed, then suspended", yaml: strings.Replace(jobFailed, "backoffLimit: 0}", "backoffLimit: 0, suspend: true}", 1),
			want: status.FailedStatus},
		{name: "PVC pending", yaml: pvcPending, want: status.InProgressStatus},
		{name: "PVC bound", yaml: pvcBound, want: status.CurrentStatus},
		{name: "Service LoadBalancer without cluster IP", yaml: svcLBNoIP, want: status.InProgressStatus},
		{name: "Service LoadBalancer without ingress", yaml: svcLBPending, want: status.CurrentStatus},
		{name: "Service LoadBalancer with ingress", yaml: svcLBIngress, want: status.CurrentStatus},
		{name: "Service ClusterIP", yaml: svcClusterIP, want: status.CurrentStatus},
		{name: "Pod not observed", yaml: podNoPhase, want: status.InProgressStatus},
		{name: "Pod pending", yaml: podPending, want: status.InProgressStatus},
		{name: "Pod unschedulable within the schedule window", yaml: sprintf(podUnschedulable, recent), want: status.InProgressStatus},
		{name: "Pod unschedulable after the schedule window", yaml: sprintf(podUnschedulable, old), want: status.FailedStatus},
		{name: "Pod running, not ready", yaml: podRunningNotReady, want: status.InProgressStatus},
		{name: "Pod crash looping", yaml: podCrashLoop, want: status.FailedStatus},
		{name: "Pod ready", yaml: podReady, want: status.CurrentStatus},
		{name: "Pod succeeded", yaml: podSucceeded, want: status.CurrentStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compute(obj(t, tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			ks, err := status.Compute(obj(t, tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.want {
				t.Errorf("Compute = %s (%s), want %s", got.Status, got.Message, tc.want)
			}
			if tc.kstatus == "" {
				// Job messages are Flux's (TestJobStatusMessages).
				if got.Status != ks.Status || got.Message != ks.Message && !IsJob(obj(t, tc.yaml)) {
					t.Errorf("Compute = %s %q, kstatus = %s %q", got.Status, got.Message, ks.Status, ks.Message)
				}
			} else if ks.Status != tc.kstatus {
				t.Errorf("kstatus = %s (%s), the table says %s", ks.Status, ks.Message, tc.kstatus)
			}
		})
	}
}

func sprintf(format, ts string) string { return fmt.Sprintf(format, ts) }

func TestJobStatusMessages(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{jobNew, "Job not started. active: 0/1"},
		{jobActive, "Job in progress. success:0, active: 1, failed: 0"},
		{jobComplete, "Job Completed. succeeded: 1/1"},
		{jobFailed, "Job Failed. failed: 1/1"},
		{jobSuspended, "Job is suspended"},
	} {
		got, err := JobStatus(obj(t, tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if got.Message != tc.want {
			t.Errorf("message %q, want %q", got.Message, tc.want)
		}
	}
}

func TestDeletedWhenFinished(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want bool
	}{
		{jobComplete, true}, // ttlSecondsAfterFinished: 0 counts
		{jobNew, false},
		{deployAvailable, false},
		{manifest("batch/v1", "Job", "name: j, namespace: app", "ttlSecondsAfterFinished: 300", ""), true},
		{manifest("example.com/v1", "Job", "name: j, namespace: app", "ttlSecondsAfterFinished: 0", ""), false},
	} {
		u := obj(t, tc.yaml)
		if got := DeletedWhenFinished(u); got != tc.want {
			t.Errorf("%s %s: DeletedWhenFinished = %v, want %v", u.GetAPIVersion(), u.GetKind(), got, tc.want)
		}
	}
}

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

// The objects are shaped as the built-in controllers (deployment, statefulset,
// daemonset, job, persistentvolume binder, service, kubelet) write them.
const (
	deployNew = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 1}
spec: {replicas: 2, progressDeadlineSeconds: 600}
`
	deployRollout = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 2}
spec: {replicas: 2, progressDeadlineSeconds: 600}
status:
  observedGeneration: 1
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`
	deployUnavailable = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 2}
spec: {replicas: 2, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 1
  readyReplicas: 2
  availableReplicas: 2
  unavailableReplicas: 1
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`
	deployAvailable = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 2}
spec: {replicas: 2, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`
	deployDeadline = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 2}
spec: {replicas: 2, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 1
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded}
`
	deployDeleting = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 2, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [foregroundDeletion]}
spec: {replicas: 2}
status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}
`
	stsNotReady = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: app, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 1, currentReplicas: 3, updatedReplicas: 3, currentRevision: db-1, updateRevision: db-1}
`
	stsRevision = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: app, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}
`
	stsReady = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: app, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, availableReplicas: 3, currentReplicas: 3, updatedReplicas: 3, currentRevision: db-2, updateRevision: db-2}
`
	stsOnDelete = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: app, generation: 2}
spec: {replicas: 3, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 1, currentReplicas: 3, currentRevision: db-1, updateRevision: db-2}
`
	dsUnobserved = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: app, generation: 1}
spec: {}
`
	dsNotReady = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: app, generation: 1}
spec: {}
status: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 1, numberReady: 1}
`
	dsReady = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: app, generation: 1}
spec: {}
status: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, numberReady: 2}
`
	jobNew = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, generation: 1}
spec: {completions: 1, parallelism: 1}
`
	// A started Job whose pod waits for a node: active, no condition.
	jobActive = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, generation: 1}
spec: {completions: 1, parallelism: 1}
status: {startTime: "2026-01-01T00:00:00Z", active: 1, ready: 0, terminating: 0, uncountedTerminatedPods: {}}
`
	jobComplete = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, generation: 1}
spec: {completions: 1, parallelism: 1, ttlSecondsAfterFinished: 0}
status:
  startTime: "2026-01-01T00:00:00Z"
  completionTime: "2026-01-01T00:00:05Z"
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True", reason: CompletionsReached}
  - {type: Complete, status: "True", reason: CompletionsReached}
`
	jobFailed = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, generation: 1}
spec: {completions: 1, parallelism: 1, backoffLimit: 0}
status:
  startTime: "2026-01-01T00:00:00Z"
  failed: 1
  conditions:
  - {type: FailureTarget, status: "True", reason: BackoffLimitExceeded}
  - {type: Failed, status: "True", reason: BackoffLimitExceeded}
`
	// Created suspended: the Job controller never starts it.
	jobSuspended = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, generation: 1}
spec: {completions: 1, parallelism: 1, suspend: true}
status:
  conditions:
  - {type: Suspended, status: "True", reason: JobSuspended, message: Job suspended}
`
	// Suspended after it started: startTime stays, active drops to 0.
	jobSuspendedStarted = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, generation: 2}
spec: {completions: 1, parallelism: 1, suspend: true}
status:
  startTime: "2026-01-01T00:00:00Z"
  active: 0
  conditions:
  - {type: Suspended, status: "True", reason: JobSuspended, message: Job suspended}
`
	pvcPending = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: app}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Pending}
`
	pvcBound = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: app}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeName: pv-1}
status: {phase: Bound, accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}}
`
	svcLBNoIP = `apiVersion: v1
kind: Service
metadata: {name: edge, namespace: app}
spec: {type: LoadBalancer, ports: [{port: 80}]}
`
	svcLBPending = `apiVersion: v1
kind: Service
metadata: {name: edge, namespace: app}
spec: {type: LoadBalancer, clusterIP: 10.0.0.12, ports: [{port: 80, nodePort: 30080}]}
status: {loadBalancer: {}}
`
	svcLBIngress = `apiVersion: v1
kind: Service
metadata: {name: edge, namespace: app}
spec: {type: LoadBalancer, clusterIP: 10.0.0.12, ports: [{port: 80, nodePort: 30080}]}
status: {loadBalancer: {ingress: [{ip: 192.0.2.10}]}}
`
	svcClusterIP = `apiVersion: v1
kind: Service
metadata: {name: api, namespace: app}
spec: {clusterIP: 10.0.0.13, ports: [{port: 80}]}
`
	podNoPhase = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: app}
spec: {containers: [{name: c, image: busybox}]}
`
	podPending = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: app}
spec: {containers: [{name: c, image: busybox}]}
status: {phase: Pending, conditions: [{type: PodScheduled, status: "True"}]}
`
	podUnschedulable = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: app, creationTimestamp: "%s"}
spec: {containers: [{name: c, image: busybox}], nodeSelector: {disk: ssd}}
status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."}
`
	podRunningNotReady = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: app}
spec: {containers: [{name: c, image: busybox}]}
status:
  phase: Running
  conditions: [{type: Ready, status: "False", reason: ContainersNotReady}]
  containerStatuses: [{name: c, ready: false, restartCount: 0, image: busybox, imageID: "", state: {running: {startedAt: "2026-01-01T00:00:00Z"}}}]
`
	podCrashLoop = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: app}
spec: {containers: [{name: c, image: busybox}]}
status:
  phase: Running
  conditions: [{type: Ready, status: "False", reason: ContainersNotReady}]
  containerStatuses: [{name: c, ready: false, restartCount: 5, image: busybox, imageID: "", state: {waiting: {reason: CrashLoopBackOff}}}]
`
	podReady = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: app}
spec: {containers: [{name: c, image: busybox}]}
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
`
	podSucceeded = `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: app}
spec: {containers: [{name: c, image: busybox}], restartPolicy: Never}
status: {phase: Succeeded}
`
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
		{`apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: app}
spec: {ttlSecondsAfterFinished: 300}
`, true},
		{`apiVersion: example.com/v1
kind: Job
metadata: {name: j, namespace: app}
spec: {ttlSecondsAfterFinished: 0}
`, false},
	} {
		u := obj(t, tc.yaml)
		if got := DeletedWhenFinished(u); got != tc.want {
			t.Errorf("%s %s: DeletedWhenFinished = %v, want %v", u.GetAPIVersion(), u.GetKind(), got, tc.want)
		}
	}
}

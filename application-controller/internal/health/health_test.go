package health

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// obj reads a YAML object through JSON, as the API server's answers
// arrive (integers int64).
func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
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

// healthCase is one object and the health Of must give it.
type healthCase struct {
	name   string
	yaml   string
	want   string // "" with ok false: no rule
	msgHas string // a substring the message must contain
}

// runHealth checks each case with Of.
func runHealth(t *testing.T, cases []healthCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, ok := Of(obj(t, tc.yaml))
			if ok != (tc.want != "") || st.Status != tc.want {
				t.Fatalf("Of = %+v, %v; want status %q (ok %v)", st, ok, tc.want, tc.want != "")
			}
			if !strings.Contains(st.Message, tc.msgHas) {
				t.Errorf("message %q does not contain %q", st.Message, tc.msgHas)
			}
		})
	}
}

func TestOfGivesNoHealthToKindsWithoutARule(t *testing.T) {
	runHealth(t, []healthCase{
		{name: "ConfigMap", yaml: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: app}\ndata: {a: b}"},
		{name: "child Application", yaml: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: child, namespace: argocd}
spec: {project: default, destination: {server: "https://kubernetes.default.svc"}}
status: {health: {status: Degraded}}`},
		{name: "CRD of another group", yaml: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nstatus: {phase: Failed}"},
	})
}

func TestOfSaysPendingDeletionForAnyObjectBeingDeleted(t *testing.T) {
	runHealth(t, []healthCase{
		{name: "ConfigMap with a finalizer", want: v1alpha1.HealthProgressing, msgHas: "Pending deletion", yaml: `apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: app, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [example.com/keep]}`},
		{name: "healthy Deployment", want: v1alpha1.HealthProgressing, msgHas: "Pending deletion", yaml: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, generation: 1, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [foregroundDeletion]}
spec: {replicas: 1}
status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}`},
		// A hook held by Argo CD's hook finalizer is judged by its state.
		{name: "hook Job holding the hook finalizer", want: v1alpha1.HealthHealthy, yaml: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, annotations: {argocd.argoproj.io/hook: PreSync},
  deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [argocd.argoproj.io/hook-finalizer]}
status: {conditions: [{type: Complete, status: "True"}]}`},
	})
}

func TestOfReadsAnObjectOfUnexpectedShapeAsUnknown(t *testing.T) {
	runHealth(t, []healthCase{
		{name: "Deployment replicas as a string", want: v1alpha1.HealthUnknown, msgHas: "cannot read Deployment", yaml: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec: {replicas: "two"}`},
		{name: "HPA v1 conditions annotation not JSON", want: v1alpha1.HealthUnknown, msgHas: "conditions annotation", yaml: `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: app, annotations: {autoscaling.alpha.kubernetes.io/conditions: "not json"}}`},
	})
}

func TestWorseOrdersHealthAsArgoCD(t *testing.T) {
	ordered := []string{v1alpha1.HealthHealthy, v1alpha1.HealthSuspended, v1alpha1.HealthProgressing,
		v1alpha1.HealthMissing, v1alpha1.HealthDegraded, v1alpha1.HealthUnknown}
	for i, a := range ordered {
		for j, b := range ordered {
			if got := Worse(a, b); got != (i > j) {
				t.Errorf("Worse(%s, %s) = %v", a, b, got)
			}
		}
	}
	if Worse("Bogus", v1alpha1.HealthHealthy) || !Worse(v1alpha1.HealthSuspended, "") {
		t.Error("an unknown code must rank as Healthy")
	}
}

func TestHookPhaseFollowsTheHooksHealth(t *testing.T) {
	cases := []struct {
		name, yaml, phase, msg string
	}{
		{"Job complete", `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, annotations: {argocd.argoproj.io/hook: PreSync}}
status: {succeeded: 1, conditions: [{type: Complete, status: "True"}]}`, v1alpha1.OperationSucceeded, ""},
		{"Job failed", `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, annotations: {argocd.argoproj.io/hook: PreSync}}
status: {failed: 1, conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}]}`,
			v1alpha1.OperationFailed, "Job has reached the specified backoff limit"},
		{"Job running", `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, annotations: {argocd.argoproj.io/hook: Sync}}
status: {active: 1, startTime: "2026-01-01T00:00:00Z"}`, v1alpha1.OperationRunning, ""},
		{"suspended Job", `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, annotations: {argocd.argoproj.io/hook: Sync}}
spec: {suspend: true}
status: {conditions: [{type: Suspended, status: "True", reason: JobSuspended, message: Job suspended}]}`, v1alpha1.OperationRunning, "Job suspended"},
		{"PVC lost is Degraded", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: app, annotations: {argocd.argoproj.io/hook: PreSync}}
status: {phase: Lost}`, v1alpha1.OperationFailed, ""},
		{"PVC without phase is Unknown", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: app, annotations: {argocd.argoproj.io/hook: PreSync}}`, v1alpha1.OperationFailed, ""},
		{"ConfigMap has no rule", `apiVersion: v1
kind: ConfigMap
metadata: {name: marker, namespace: app, annotations: {argocd.argoproj.io/hook: PostSync}}`, v1alpha1.OperationSucceeded, "marker created"},
		// A hook Pod waiting on a bad image is not failed early: its
		// restart policy makes it finite (argocd-contract §6.2).
		{"hook Pod pulling a bad image", `apiVersion: v1
kind: Pod
metadata: {name: smoke, namespace: app, annotations: {argocd.argoproj.io/hook: PostSync, argocd.argoproj.io/ignore-restart-policy: "true"}}
spec: {restartPolicy: Never, containers: [{name: c, image: nope}]}
status:
  phase: Pending
  containerStatuses: [{name: c, ready: false, restartCount: 0, image: nope, imageID: "", state: {waiting: {reason: ImagePullBackOff, message: Back-off pulling image "nope"}}}]`,
			v1alpha1.OperationRunning, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := obj(t, tc.yaml)
			if got := HookPhase(u); got != tc.phase {
				t.Errorf("HookPhase = %s, want %s", got, tc.phase)
			}
			if phase, msg := HookStatus(u); phase != tc.phase || msg != tc.msg {
				t.Errorf("HookStatus = %s, %q; want %s, %q", phase, msg, tc.phase, tc.msg)
			}
		})
	}
}

package health

import (
	"fmt"
	"testing"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// item builds an Item from a live object's YAML ("" for a missing object
// named by group, kind, namespace and name).
func item(t *testing.T, group, kind, ns, name, live string) Item {
	t.Helper()
	it := Item{Group: group, Kind: kind, Namespace: ns, Name: name}
	if live != "" {
		it.Live = obj(t, live)
	}
	return it
}

// deploy is Deployment name in namespace app: healthy, rolling out
// (Progressing), paused (Suspended) or stuck (Degraded).
func deploy(t *testing.T, name, health string) Item {
	t.Helper()
	status := map[string]string{
		v1alpha1.HealthHealthy:     `{observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}`,
		v1alpha1.HealthProgressing: `{observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 0}`,
		v1alpha1.HealthSuspended:   `{observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}`,
		v1alpha1.HealthDegraded: `{observedGeneration: 1, replicas: 1, updatedReplicas: 0, availableReplicas: 0,
  conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]}`,
	}[health]
	paused := health == v1alpha1.HealthSuspended
	y := fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: app, generation: 1}\nspec: {replicas: 1, paused: %v}\nstatus: %s",
		name, paused, status)
	return item(t, "apps", "Deployment", "app", name, y)
}

func missing(t *testing.T, name string) Item {
	return item(t, "apps", "Deployment", "app", name, "")
}

func TestAggregate(t *testing.T) {
	configMap := item(t, "", "ConfigMap", "app", "cfg", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: app}")
	lostPVC := item(t, "", "PersistentVolumeClaim", "app", "data",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: app}\nstatus: {phase: Lost}")
	unknownPVC := item(t, "", "PersistentVolumeClaim", "app", "scratch",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: scratch, namespace: app}\nstatus: {}")
	apiService := item(t, "apiregistration.k8s.io", "APIService", "", "v1beta1.metrics.k8s.io",
		"apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1beta1.metrics.k8s.io}\nstatus: {}")
	failedHook := item(t, "batch", "Job", "app", "migrate", `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: app, annotations: {argocd.argoproj.io/hook: PreSync}}
status: {conditions: [{type: Failed, status: "True"}]}`)
	failedHook.Hook = true
	ignored := deploy(t, "legacy", v1alpha1.HealthDegraded)
	ignored.Ignore = true
	childApp := item(t, "argoproj.io", "Application", "argocd", "child", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: child, namespace: argocd}
status: {health: {status: Degraded}}`)
	missingChild := item(t, "argoproj.io", "Application", "argocd", "gone", "")

	cases := []struct {
		name  string
		items []Item
		want  v1alpha1.AppHealthStatus
	}{
		{"no objects", nil, v1alpha1.AppHealthStatus{Status: v1alpha1.HealthHealthy}},
		{"all healthy", []Item{deploy(t, "a", v1alpha1.HealthHealthy), configMap},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthHealthy}},
		{"kinds without a rule only", []Item{configMap}, v1alpha1.AppHealthStatus{Status: v1alpha1.HealthHealthy}},
		{"hooks skipped", []Item{deploy(t, "a", v1alpha1.HealthHealthy), failedHook},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthHealthy}},
		{"ignored objects skipped", []Item{deploy(t, "a", v1alpha1.HealthHealthy), ignored},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthHealthy}},
		{"child Applications have no health", []Item{deploy(t, "a", v1alpha1.HealthHealthy), childApp, missingChild},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthHealthy}},
		{"missing objects not counted", []Item{deploy(t, "a", v1alpha1.HealthProgressing), missing(t, "b")},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthProgressing, Message: "Caused by apps/Deployment:app/a"}},
		{"all missing", []Item{missing(t, "a"), missing(t, "b"), failedHook},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthMissing}},
		{"all missing but an ignored object exists", []Item{missing(t, "a"), ignored},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthHealthy}},
		{"only hooks", []Item{failedHook}, v1alpha1.AppHealthStatus{Status: v1alpha1.HealthHealthy}},
		{"worst wins and names its objects", []Item{deploy(t, "a", v1alpha1.HealthSuspended), deploy(t, "b", v1alpha1.HealthDegraded),
			deploy(t, "c", v1alpha1.HealthProgressing), lostPVC},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthDegraded,
				Message: "Caused by apps/Deployment:app/b, PersistentVolumeClaim:app/data"}},
		{"Suspended is worse than Healthy", []Item{deploy(t, "a", v1alpha1.HealthHealthy), deploy(t, "b", v1alpha1.HealthSuspended)},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthSuspended, Message: "Caused by apps/Deployment:app/b"}},
		{"Unknown is worst", []Item{lostPVC, unknownPVC},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthUnknown, Message: "Caused by PersistentVolumeClaim:app/scratch"}},
		{"cluster-scoped cause", []Item{apiService},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthProgressing, Message: "Caused by apiregistration.k8s.io/APIService:v1beta1.metrics.k8s.io"}},
		{"more than three causes", []Item{deploy(t, "a", v1alpha1.HealthProgressing), deploy(t, "b", v1alpha1.HealthProgressing),
			deploy(t, "c", v1alpha1.HealthProgressing), deploy(t, "d", v1alpha1.HealthProgressing), deploy(t, "e", v1alpha1.HealthProgressing)},
			v1alpha1.AppHealthStatus{Status: v1alpha1.HealthProgressing,
				Message: "Caused by apps/Deployment:app/a, apps/Deployment:app/b, apps/Deployment:app/c and 2 more"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Aggregate(tc.items); got != tc.want {
				t.Errorf("Aggregate = %+v\nwant        %+v", got, tc.want)
			}
		})
	}
}

func TestResourceHealthIsWhatStatusResourcesShows(t *testing.T) {
	hook := deploy(t, "h", v1alpha1.HealthHealthy)
	hook.Hook = true
	ignored := deploy(t, "i", v1alpha1.HealthDegraded)
	ignored.Ignore = true
	configMap := item(t, "", "ConfigMap", "app", "cfg", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: app}")
	cases := []struct {
		name string
		it   Item
		want string // "" for nil
	}{
		{"missing", missing(t, "a"), v1alpha1.HealthMissing},
		{"live", deploy(t, "b", v1alpha1.HealthDegraded), v1alpha1.HealthDegraded},
		{"hook", hook, ""},
		{"ignored", ignored, ""},
		{"no rule", configMap, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ResourceHealth(tc.it)
			if (got == nil) != (tc.want == "") || (got != nil && got.Status != tc.want) {
				t.Errorf("ResourceHealth = %+v, want %q", got, tc.want)
			}
		})
	}
}

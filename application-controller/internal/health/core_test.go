package health

import (
	"fmt"
	"testing"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

func TestServiceHealthWaitsForALoadBalancerAddress(t *testing.T) {
	svc := func(typ, status string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec: {type: %s, ports: [{port: 80}], selector: {app: web}}
status: %s`, typ, status)
	}
	runHealth(t, []healthCase{
		{name: "ClusterIP", want: v1alpha1.HealthHealthy, yaml: svc("ClusterIP", "{loadBalancer: {}}")},
		{name: "NodePort", want: v1alpha1.HealthHealthy, yaml: svc("NodePort", "{loadBalancer: {}}")},
		{name: "LoadBalancer without address", want: v1alpha1.HealthProgressing, yaml: svc("LoadBalancer", "{loadBalancer: {}}")},
		{name: "LoadBalancer with address", want: v1alpha1.HealthHealthy,
			yaml: svc("LoadBalancer", "{loadBalancer: {ingress: [{ip: 203.0.113.7, ipMode: VIP}]}}")},
	})
}

func TestIngressHealthWaitsForAnAddress(t *testing.T) {
	ing := func(apiVersion, status string) string {
		return fmt.Sprintf(`apiVersion: %s
kind: Ingress
metadata: {name: web, namespace: app}
spec: {rules: [{host: web.example.com}]}
status: %s`, apiVersion, status)
	}
	runHealth(t, []healthCase{
		{name: "networking.k8s.io without address", want: v1alpha1.HealthProgressing, yaml: ing("networking.k8s.io/v1", "{loadBalancer: {}}")},
		{name: "networking.k8s.io with address", want: v1alpha1.HealthHealthy,
			yaml: ing("networking.k8s.io/v1", "{loadBalancer: {ingress: [{hostname: lb.example.com}]}}")},
		{name: "extensions with address", want: v1alpha1.HealthHealthy,
			yaml: ing("extensions/v1beta1", "{loadBalancer: {ingress: [{ip: 10.0.0.1}]}}")},
	})
}

func TestPVCHealthFollowsItsPhase(t *testing.T) {
	pvc := func(status string) string {
		return `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: app}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: ` + status
	}
	runHealth(t, []healthCase{
		{name: "Bound", want: v1alpha1.HealthHealthy, yaml: pvc("{phase: Bound, capacity: {storage: 1Gi}}")},
		{name: "Pending", want: v1alpha1.HealthProgressing, yaml: pvc("{phase: Pending}")},
		{name: "Lost", want: v1alpha1.HealthDegraded, yaml: pvc("{phase: Lost}")},
		{name: "no phase yet", want: v1alpha1.HealthUnknown, yaml: pvc("{}")},
	})
}

// pod is a Pod with one container c; annotations is a flow map's insides.
func pod(annotations, policy, status string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web-7c9f-x2k4q, namespace: app, annotations: {%s}}
spec: {restartPolicy: %s, containers: [{name: c, image: "ghcr.io/acme/web:1.2"}]}
status: %s`, annotations, policy, status)
}

// containerStatus is container c's status with the given state, last
// state and readiness.
func containerStatus(state, last string, ready bool) string {
	return fmt.Sprintf(`{name: c, image: "ghcr.io/acme/web:1.2", imageID: "", ready: %v, restartCount: 3, state: %s, lastState: %s}`,
		ready, state, last)
}

const (
	crashLooping   = `{waiting: {reason: CrashLoopBackOff, message: "back-off 40s restarting failed container=c pod=web-7c9f-x2k4q_app"}}`
	crashedBefore  = `{terminated: {exitCode: 1, reason: Error, startedAt: "2026-01-01T00:00:00Z", finishedAt: "2026-01-01T00:00:01Z"}}`
	runningState   = `{running: {startedAt: "2026-01-01T00:00:02Z"}}`
	readyCondition = `[{type: Ready, status: "True"}, {type: ContainersReady, status: "True"}]`
	notReady       = `[{type: Ready, status: "False", reason: ContainersNotReady}]`
)

func TestPodHealthOfALongRunningPod(t *testing.T) {
	running := func(conds, cs string) string {
		return fmt.Sprintf("{phase: Running, conditions: %s, containerStatuses: [%s]}", conds, cs)
	}
	runHealth(t, []healthCase{
		{name: "CrashLoopBackOff", want: v1alpha1.HealthDegraded, msgHas: "back-off 40s restarting failed container",
			yaml: pod("", "Always", running(notReady, containerStatus(crashLooping, crashedBefore, false)))},
		{name: "ImagePullBackOff while Pending", want: v1alpha1.HealthDegraded, msgHas: "Back-off pulling image",
			yaml: pod("", "Always", fmt.Sprintf("{phase: Pending, containerStatuses: [%s]}", containerStatus(
				`{waiting: {reason: ImagePullBackOff, message: "Back-off pulling image \"ghcr.io/acme/web:1.2\""}}`, "{}", false)))},
		{name: "ErrImagePull", want: v1alpha1.HealthDegraded,
			yaml: pod("", "Always", fmt.Sprintf("{phase: Pending, containerStatuses: [%s]}", containerStatus(
				`{waiting: {reason: ErrImagePull, message: "manifest unknown"}}`, "{}", false)))},
		{name: "CreateContainerConfigError", want: v1alpha1.HealthDegraded, msgHas: `secret "db" not found`,
			yaml: pod("", "Always", fmt.Sprintf("{phase: Pending, containerStatuses: [%s]}", containerStatus(
				`{waiting: {reason: CreateContainerConfigError, message: "secret \"db\" not found"}}`, "{}", false)))},
		{name: "ContainerCreating", want: v1alpha1.HealthProgressing,
			yaml: pod("", "Always", fmt.Sprintf("{phase: Pending, containerStatuses: [%s]}", containerStatus(
				`{waiting: {reason: ContainerCreating}}`, "{}", false)))},
		{name: "unschedulable", want: v1alpha1.HealthProgressing, yaml: pod("", "Always",
			`{phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, message: "0/1 nodes are available"}]}`)},
		{name: "running and ready", want: v1alpha1.HealthHealthy,
			yaml: pod("", "Always", running(readyCondition, containerStatus(runningState, "{}", true)))},
		{name: "ready after earlier crashes", want: v1alpha1.HealthHealthy,
			yaml: pod("", "Always", running(readyCondition, containerStatus(runningState, crashedBefore, true)))},
		{name: "restarted and not ready", want: v1alpha1.HealthDegraded,
			yaml: pod("", "Always", running(notReady, containerStatus(runningState, crashedBefore, false)))},
		{name: "starting, not ready yet", want: v1alpha1.HealthProgressing,
			yaml: pod("", "Always", running(notReady, containerStatus(runningState, "{}", false)))},
	})
}

func TestPodHealthOfAFinitePod(t *testing.T) {
	ready := fmt.Sprintf("{phase: Running, conditions: %s, containerStatuses: [%s]}", readyCondition, containerStatus(runningState, "{}", true))
	pullBackOff := fmt.Sprintf("{phase: Pending, containerStatuses: [%s]}", containerStatus(
		`{waiting: {reason: ImagePullBackOff, message: "Back-off pulling image"}}`, "{}", false))
	const ignore = `argocd.argoproj.io/ignore-restart-policy: "true"`
	runHealth(t, []healthCase{
		{name: "Never, running", want: v1alpha1.HealthProgressing, yaml: pod("", "Never", ready)},
		{name: "OnFailure, running", want: v1alpha1.HealthProgressing, yaml: pod("", "OnFailure", ready)},
		{name: "Never, image pull back-off is not Degraded", want: v1alpha1.HealthProgressing, yaml: pod("", "Never", pullBackOff)},
		{name: "ignore-restart-policy, running and ready", want: v1alpha1.HealthHealthy, yaml: pod(ignore, "Never", ready)},
		{name: "ignore-restart-policy, back-off", want: v1alpha1.HealthDegraded, yaml: pod(ignore, "OnFailure", pullBackOff)},
		{name: "ignore-restart-policy not honoured on a hook", want: v1alpha1.HealthProgressing,
			yaml: pod(ignore+", argocd.argoproj.io/hook: PreSync", "Never", ready)},
		{name: "ignore-restart-policy not honoured on a Helm hook", want: v1alpha1.HealthProgressing,
			yaml: pod(ignore+", helm.sh/hook: test", "Never", ready)},
		{name: "Succeeded", want: v1alpha1.HealthHealthy, yaml: pod("", "Never", fmt.Sprintf("{phase: Succeeded, containerStatuses: [%s]}",
			containerStatus(`{terminated: {exitCode: 0, reason: Completed}}`, "{}", false)))},
		{name: "Failed, evicted", want: v1alpha1.HealthDegraded, msgHas: "low on resource: memory",
			yaml: pod("", "Always", `{phase: Failed, reason: Evicted, message: "The node was low on resource: memory."}`)},
		{name: "Failed, exit code", want: v1alpha1.HealthDegraded, msgHas: `container "c" exited with code 2`,
			yaml: pod("", "Never", fmt.Sprintf("{phase: Failed, containerStatuses: [%s]}",
				containerStatus(`{terminated: {exitCode: 2, reason: Error}}`, "{}", false)))},
		{name: "Failed, OOMKilled", want: v1alpha1.HealthDegraded, msgHas: "OOMKilled",
			yaml: pod("", "Never", fmt.Sprintf("{phase: Failed, containerStatuses: [%s]}",
				containerStatus(`{terminated: {exitCode: 137, reason: OOMKilled}}`, "{}", false)))},
		{name: "Failed, init container message", want: v1alpha1.HealthDegraded, msgHas: "schema migration failed",
			yaml: pod("", "Never", `{phase: Failed, initContainerStatuses: [{name: init, image: x, imageID: "", ready: false, restartCount: 0,
  state: {terminated: {exitCode: 1, reason: Error, message: "schema migration failed"}}}]}`)},
		{name: "phase Unknown", want: v1alpha1.HealthUnknown, yaml: pod("", "Always", `{phase: Unknown}`)},
	})
}

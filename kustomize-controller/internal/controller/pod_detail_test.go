package controller

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// customStatusWorkload is a workload manifest whose pods kwok leaves alone
// (kwok.x-k8s.io/status: custom), so that the test writes their status.
func customStatusWorkload(kind, ns, name string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata: {name: %s, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata:
      labels: {app: %s}
      annotations: {kwok.x-k8s.io/status: custom}
    spec:
      containers: [{name: app, image: "ghcr.io/example/app:1.0.0"}]
`, kind, name, ns, name, name)
}

// TestHealthCheckTimeoutSaysWhatThePodsShow: a Kustomization with wait
// whose workloads never become ready fails its health check with Flux's
// message first, then, per workload, the pod and what its container shows:
// CrashLoopBackOff with the last exit code, ImagePullBackOff with the
// kubelet's message, a running container not ready with the kubelet's
// readiness probe failure. The pod statuses are written by the test, as a
// kubelet would.
func TestHealthCheckTimeoutSaysWhatThePodsShow(t *testing.T) {
	ns := newNamespace(t)
	appNS := newNamespace(t)
	r := newRepo(t, map[string]string{
		"crash.yaml":   customStatusWorkload("Deployment", appNS, "crash"),
		"pull.yaml":    customStatusWorkload("Deployment", appNS, "pull"),
		"unready.yaml": customStatusWorkload("StatefulSet", appNS, "unready"),
	})
	src := newSource(t, ns, "workloads", r)
	k := newKustomization(t, ns, "workloads", src.Name, func(k *kustomizev1.Kustomization) {
		k.Spec.Wait = true
		k.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Second}
	})
	setPodStatus(t, appNS, "crash", corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
	})
	setPodStatus(t, appNS, "pull", corev1.ContainerStatus{
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "ghcr.io/example/app:1.0.0"`}},
	})
	unready := setPodStatus(t, appNS, "unready", corev1.ContainerStatus{
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
	})
	probeFailed(t, unready, "Readiness probe failed: HTTP probe failed with statuscode: 503")

	c := waitFailed(t, k, kustomizev1.HealthCheckFailedReason)
	prefix := regexp.MustCompile(`^health check failed after [0-9]+s: ` + regexp.QuoteMeta(fmt.Sprintf("timeout waiting for: [Deployment/%[1]s/crash status: 'InProgress', "+
		"Deployment/%[1]s/pull status: 'InProgress', StatefulSet/%[1]s/unready status: 'InProgress']: ", appNS)))
	if !prefix.MatchString(c.Message) {
		t.Errorf("Ready message %q, want Flux's message first: %s", c.Message, prefix)
	}
	for _, want := range []string{
		fmt.Sprintf("Deployment/%s/crash: container app: CrashLoopBackOff, exit code 1 (Error)", appNS),
		fmt.Sprintf(`Deployment/%s/pull: container app: ImagePullBackOff (Back-off pulling image "ghcr.io/example/app:1.0.0")`, appNS),
		fmt.Sprintf("StatefulSet/%s/unready: container app: running, not ready (Readiness probe failed: HTTP probe failed with statuscode: 503)", appNS),
	} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Ready message %q, want it to contain %q", c.Message, want)
		}
	}
}

// setPodStatus waits for the pod of workload app in ns and writes its
// status: Running, not Ready, with cs as the status of container app.
func setPodStatus(t *testing.T, ns, app string, cs corev1.ContainerStatus) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	cs.Name, cs.Image = "app", "ghcr.io/example/app:1.0.0"
	var pod *corev1.Pod
	// The scheduler and the node write the new pod too: a conflict reads it again.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil || len(pods.Items) == 0 {
			return false, err
		}
		pod = &pods.Items[0]
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"},
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		err := env.Client.Status().Update(ctx, pod)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("setting the status of the pod of %s/%s: %v", ns, app, err)
	}
	return pod
}

// probeFailed records the kubelet's Unhealthy event of pod.
func probeFailed(t *testing.T, pod *corev1.Pod, msg string) {
	t.Helper()
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, GenerateName: pod.Name + "."},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			APIVersion: "v1", FieldPath: "spec.containers{app}"},
		Reason: "Unhealthy", Message: msg, Type: corev1.EventTypeWarning, Source: corev1.EventSource{Component: "kubelet"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := env.Client.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

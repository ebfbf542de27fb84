package health

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// serviceHealth: a LoadBalancer Service is Progressing until the cloud
// gives it an address (status.loadBalancer.ingress); every other Service
// is Healthy.
func serviceHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var svc corev1.Service
	if err := typed(u, &svc); err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
		return status(v1alpha1.HealthProgressing, ""), nil
	}
	return status(v1alpha1.HealthHealthy, ""), nil
}

// ingressHealth: Healthy once status.loadBalancer.ingress lists an
// address, else Progressing (an Ingress without a controller stays so).
func ingressHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	addrs, _, _ := unstructured.NestedSlice(u.Object, "status", "loadBalancer", "ingress")
	if len(addrs) > 0 {
		return status(v1alpha1.HealthHealthy, ""), nil
	}
	return status(v1alpha1.HealthProgressing, ""), nil
}

// pvcHealth maps status.phase: Bound ⇒ Healthy, Pending ⇒ Progressing,
// Lost ⇒ Degraded, anything else (none yet) ⇒ Unknown.
func pvcHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := typed(u, &pvc); err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	switch pvc.Status.Phase {
	case corev1.ClaimBound:
		return status(v1alpha1.HealthHealthy, ""), nil
	case corev1.ClaimPending:
		return status(v1alpha1.HealthProgressing, ""), nil
	case corev1.ClaimLost:
		return status(v1alpha1.HealthDegraded, ""), nil
	}
	return status(v1alpha1.HealthUnknown, ""), nil
}

// podHealth judges a Pod as Argo CD does. A long-running Pod
// (restartPolicy Always, or the ignore-restart-policy annotation on a Pod
// that is not a hook) is Degraded as soon as a container waits with a
// reason starting "Err" or ending "Error" or "BackOff" (CrashLoopBackOff,
// ImagePullBackOff, ErrImagePull, CreateContainerConfigError). Then by
// phase: Pending ⇒ Progressing, Succeeded ⇒ Healthy, Failed ⇒ Degraded;
// Running: a long-running Pod is Healthy when Ready, Degraded when a
// container has terminated before, else Progressing; a finite Pod
// (OnFailure, Never: typically a hook) stays Progressing while it runs.
// A phase Argo CD does not know ⇒ Unknown.
func podHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var pod corev1.Pod
	if err := typed(u, &pod); err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	policy := pod.Spec.RestartPolicy
	longRunning := policy == corev1.RestartPolicyAlways ||
		(pod.Annotations[annotationIgnoreRestartPolicy] == "true" && !isHook(u))
	if longRunning {
		if msgs := containerErrors(pod.Status.ContainerStatuses); msgs != nil {
			return status(v1alpha1.HealthDegraded, strings.Join(msgs, ", ")), nil
		}
	}
	msg := pod.Status.Message
	switch pod.Status.Phase {
	case corev1.PodPending:
		return status(v1alpha1.HealthProgressing, msg), nil
	case corev1.PodSucceeded:
		return status(v1alpha1.HealthHealthy, msg), nil
	case corev1.PodFailed:
		return status(v1alpha1.HealthDegraded, podFailure(&pod)), nil
	case corev1.PodRunning:
		switch {
		case longRunning && podReady(&pod):
			return status(v1alpha1.HealthHealthy, msg), nil
		case longRunning && restarted(pod.Status.ContainerStatuses):
			return status(v1alpha1.HealthDegraded, msg), nil
		case longRunning, policy == corev1.RestartPolicyOnFailure, policy == corev1.RestartPolicyNever:
			return status(v1alpha1.HealthProgressing, msg), nil
		}
	}
	return status(v1alpha1.HealthUnknown, msg), nil
}

// containerErrors returns the messages of containers waiting for an error
// reason, nil when there is none. Init containers are not looked at.
func containerErrors(cs []corev1.ContainerStatus) []string {
	var msgs []string
	for _, c := range cs {
		w := c.State.Waiting
		if w != nil && (strings.HasPrefix(w.Reason, "Err") || strings.HasSuffix(w.Reason, "Error") ||
			strings.HasSuffix(w.Reason, "BackOff")) {
			msgs = append(msgs, w.Message)
		}
	}
	return msgs
}

// podFailure says why a Failed Pod failed: the Pod's status message, else
// the first container (init containers first) that terminated with a
// message, OOMKilled, or a non-zero exit code; "" when nothing says.
func podFailure(pod *corev1.Pod) string {
	if pod.Status.Message != "" {
		return pod.Status.Message
	}
	for _, c := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		t := c.State.Terminated
		switch {
		case t == nil:
		case t.Message != "":
			return t.Message
		case t.Reason == "OOMKilled":
			return t.Reason
		case t.ExitCode != 0:
			return fmt.Sprintf("container %q exited with code %d", c.Name, t.ExitCode)
		}
	}
	return ""
}

// podReady reports the Pod's Ready condition.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// restarted reports whether a container has terminated before (it has a
// last termination state), the sign of a crash loop between back-offs.
func restarted(cs []corev1.ContainerStatus) bool {
	for _, c := range cs {
		if c.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

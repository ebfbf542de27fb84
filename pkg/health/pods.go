package health

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Beyond Flux: when a health check fails or times out, Eddy says why the
// pods of a workload are not ready (kstatus only says InProgress).

const (
	// maxPods is how many pods of one workload with different problems are
	// described; pods with yet other problems are counted.
	maxPods = 2
	// maxMessage bounds the kubelet's or a container's message, in runes.
	maxMessage = 240
	// podListLimit bounds the one pod LIST per workload.
	podListLimit = 200
)

// PodsDetail says why the pods of u (a Deployment, StatefulSet, DaemonSet,
// ReplicaSet, Job or Pod) are not ready, e.g. "container web:
// CrashLoopBackOff, exit code 1 (Error)"; "" when u is of another kind, no
// pod shows a problem, or the pods cannot be read (the reader's account may
// not list pods). Pods with the same problems are said once, and no pod name
// nor container output is said: the message stays the same while the same
// failure lasts (alerts deduplicate on it) and carries nothing a log line
// could hold. One LIST of pods by u's selector (none for a Pod), and one
// LIST of events of a described pod whose container runs but is not ready
// (the kubelet's "Readiness probe failed: ..." event). Reads are
// unstructured, so a controller-runtime client reads them directly, never
// through an informer on every pod.
func PodsDetail(ctx context.Context, c client.Reader, u *unstructured.Unstructured) string {
	pods, err := podsOf(ctx, c, u)
	if err != nil {
		return ""
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var described []*corev1.Pod
	seen := map[string]bool{}
	more := 0
	for i := range pods {
		problems := podProblems(ctx, c, &pods[i], false)
		if len(problems) == 0 {
			continue
		}
		key := strings.Join(problems, ", ")
		switch {
		case seen[key]:
		case len(described) == maxPods:
			more++
		default:
			seen[key] = true
			described = append(described, &pods[i])
		}
	}
	lines := make([]string, 0, len(described))
	for _, p := range described {
		// Events only for the pods described.
		lines = append(lines, strings.Join(podProblems(ctx, c, p, true), ", "))
	}
	out := strings.Join(lines, "; ")
	if more > 0 {
		out += fmt.Sprintf("; other problems in %d more pod(s)", more)
	}
	return out
}

// podsOf returns the pods of u: u itself for a Pod, those its selector
// matches in its namespace for a workload kind, none for another kind.
func podsOf(ctx context.Context, c client.Reader, u *unstructured.Unstructured) ([]corev1.Pod, error) {
	gvk := u.GroupVersionKind()
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		var p corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
			return nil, err
		}
		return []corev1.Pod{p}, nil
	case gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet" || gvk.Kind == "ReplicaSet"),
		gvk.Group == "batch" && gvk.Kind == "Job":
	default:
		return nil, nil
	}
	m, found, err := unstructured.NestedMap(u.Object, "spec", "selector")
	if err != nil || !found {
		return nil, err
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return nil, err
	}
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("v1")
	l.SetKind("PodList")
	if err := c.List(ctx, l, client.InNamespace(u.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}, client.Limit(podListLimit)); err != nil {
		return nil, err
	}
	pods := make([]corev1.Pod, 0, len(l.Items))
	for _, item := range l.Items {
		var p corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &p); err != nil {
			return nil, err
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// podProblems says what keeps p from being ready: not scheduled, a
// container waiting (CrashLoopBackOff, ImagePullBackOff, ErrImagePull,
// CreateContainerConfigError, ...), terminated with an error, or running
// but not ready (with the kubelet's latest probe failure); none for a pod
// that is ready, finished, or being deleted. events: read the probe failure.
func podProblems(ctx context.Context, c client.Reader, p *corev1.Pod, events bool) []string {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded {
		return nil
	}
	if p.Status.Phase == corev1.PodFailed && p.Status.Reason != "" {
		return []string{"failed: " + withMessage(p.Status.Reason, p.Status.Message)}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			return []string{"not scheduled: " + withMessage(cond.Reason, cond.Message)}
		}
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	var out []string
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if s := containerProblem(cs); s != "" {
			out = append(out, "container "+cs.Name+": "+s)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil && !cs.Ready {
			s := "container " + cs.Name + ": running, not ready"
			if probe := lastProbeFailureIf(ctx, c, p, events); probe != "" {
				s += " (" + probe + ")"
			}
			// A crash-looping container is running for a moment after each
			// restart: its last exit is then the reason, not the probe.
			if t := cs.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
				s += ", last " + exited(t)
			}
			out = append(out, s)
		}
	}
	return out
}

// containerProblem is a container waiting for a reason other than its
// start, or terminated with a non-zero exit code (and not restarted); ""
// otherwise.
func containerProblem(cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff":
		s := "CrashLoopBackOff"
		if t := cs.LastTerminationState.Terminated; t != nil {
			s += ", " + exited(t)
		}
		return s
	case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
		return withMessage(cs.State.Waiting.Reason, cs.State.Waiting.Message)
	case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
		return "terminated, " + exited(cs.State.Terminated)
	}
	return ""
}

// exited is "exit code N (Reason)" of a terminated container. Its
// termination message is left out: it may be the tail of the container's
// log (terminationMessagePolicy FallbackToLogsOnError).
func exited(t *corev1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	return s
}

// lastProbeFailure is the message of p's latest Unhealthy event (the
// kubelet's "Readiness probe failed: HTTP probe failed with statuscode:
// 503"), "" when there is none or events cannot be read.
func lastProbeFailure(ctx context.Context, c client.Reader, p *corev1.Pod) string {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("v1")
	l.SetKind("EventList")
	sel := client.MatchingFields{"involvedObject.uid": string(p.UID), "reason": "Unhealthy"}
	if err := c.List(ctx, l, client.InNamespace(p.Namespace), sel, client.Limit(podListLimit)); err != nil {
		return ""
	}
	latest, msg := "", ""
	for _, item := range l.Items {
		var ev corev1.Event
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &ev) != nil {
			continue
		}
		at := ev.LastTimestamp.UTC().Format("2006-01-02T15:04:05")
		if at < ev.EventTime.UTC().Format("2006-01-02T15:04:05") {
			at = ev.EventTime.UTC().Format("2006-01-02T15:04:05")
		}
		if msg == "" || at >= latest {
			latest, msg = at, ev.Message
		}
	}
	return clip(msg)
}

// lastProbeFailureIf is lastProbeFailure when events, else "".
func lastProbeFailureIf(ctx context.Context, c client.Reader, p *corev1.Pod, events bool) string {
	if !events {
		return ""
	}
	return lastProbeFailure(ctx, c, p)
}

// withMessage is "reason (message)", or reason alone.
func withMessage(reason, message string) string {
	if m := clip(message); m != "" {
		return reason + " (" + m + ")"
	}
	return reason
}

// clip trims m to one line of at most maxMessage runes.
func clip(m string) string {
	m = strings.Join(strings.Fields(m), " ")
	if r := []rune(m); len(r) > maxMessage {
		m = string(r[:maxMessage]) + "..."
	}
	return m
}

// Package health assesses Kubernetes objects as Argo CD does: one object's
// health by Argo CD's built-in rules (argocd-contract §6.2), an
// Application's aggregated health, and a hook's operation phase
// (argocd-contract §4.2 point 3).
//
// Health is Argo CD's notion, not kstatus's (pkg/health): a paused
// Deployment is Suspended, a LoadBalancer Service without an address is
// Progressing, a Pod in CrashLoopBackOff is Degraded, and kinds without a
// rule have no health at all.
package health

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// annotationIgnoreRestartPolicy makes a running Pod with restartPolicy
// OnFailure or Never be judged like a long-running one (Argo CD's name).
const annotationIgnoreRestartPolicy = "argocd.argoproj.io/ignore-restart-policy"

// annotationHelmHook marks a Helm hook, which Argo CD runs as a hook too.
const annotationHelmHook = "helm.sh/hook"

// order lists the health codes best first; Argo CD takes the worst.
var order = []string{
	v1alpha1.HealthHealthy,
	v1alpha1.HealthSuspended,
	v1alpha1.HealthProgressing,
	v1alpha1.HealthMissing,
	v1alpha1.HealthDegraded,
	v1alpha1.HealthUnknown,
}

// rank is a code's place in order; a code Argo CD does not know (or "")
// ranks as Healthy, as in Argo CD.
func rank(code string) int {
	if i := slices.Index(order, code); i >= 0 {
		return i
	}
	return 0
}

// Worse reports whether health code a is worse than b in the order
// Healthy < Suspended < Progressing < Missing < Degraded < Unknown
// (argocd-contract §6.2). Unknown strings rank as Healthy, as in Argo CD.
func Worse(a, b string) bool { return rank(a) > rank(b) }

// rule computes one kind's health; an error means the object could not be
// read and makes it Unknown with the error as message, as in Argo CD.
type rule func(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error)

// ruleFor returns the built-in rule for an object's group and kind, nil
// when there is none. Any version of the group is accepted: the fields read
// are the same in every served version. argoproj.io Application has no rule
// on purpose (Argo CD dropped it in v1.8, argocd-contract §6.2).
func ruleFor(group, kind string) rule {
	switch group {
	case "apps":
		return map[string]rule{"Deployment": deploymentHealth, "StatefulSet": statefulSetHealth,
			"DaemonSet": daemonSetHealth, "ReplicaSet": replicaSetHealth}[kind]
	case "":
		return map[string]rule{"Service": serviceHealth, "PersistentVolumeClaim": pvcHealth, "Pod": podHealth}[kind]
	case "networking.k8s.io", "extensions":
		if kind == "Ingress" {
			return ingressHealth
		}
	case "batch":
		return map[string]rule{"Job": jobHealth, "CronJob": cronJobHealth}[kind]
	case "autoscaling":
		if kind == "HorizontalPodAutoscaler" {
			return hpaHealth
		}
	case "apiregistration.k8s.io":
		if kind == "APIService" {
			return apiServiceHealth
		}
	case "argoproj.io":
		if kind == "Workflow" {
			return workflowHealth
		}
	case "policy":
		if kind == "PodDisruptionBudget" {
			return pdbHealth
		}
	}
	return fluxRule(group, kind)
}

// Of returns a live object's health by Argo CD's built-in rules and the
// scripts Argo CD bundles for batch CronJob, policy PodDisruptionBudget and
// Flux's kinds (argocd-contract §6.2). ok is false when its kind has no
// rule: such an object has no health, is skipped in aggregation and counts
// as done in wave gating. An object with a deletionTimestamp is Progressing
// "Pending deletion" whatever its kind, unless it holds Argo CD's hook
// finalizer (a hook being run). Status codes are v1alpha1.Health*; an
// object whose fields have unexpected types is Unknown with the reason.
func Of(u *unstructured.Unstructured) (st v1alpha1.HealthStatus, ok bool) {
	if u.GetDeletionTimestamp() != nil && !slices.Contains(u.GetFinalizers(), v1alpha1.FinalizerHook) {
		return v1alpha1.HealthStatus{Status: v1alpha1.HealthProgressing, Message: "Pending deletion"}, true
	}
	gvk := u.GroupVersionKind()
	r := ruleFor(gvk.Group, gvk.Kind)
	if r == nil {
		return v1alpha1.HealthStatus{}, false
	}
	st, err := r(u)
	if err != nil {
		return v1alpha1.HealthStatus{Status: v1alpha1.HealthUnknown, Message: err.Error()}, true
	}
	return st, true
}

// isHook reports whether u runs as a hook as Argo CD decides it: an
// argocd.argoproj.io/hook annotation other than "Skip" alone, or else a
// helm.sh/hook annotation other than "crd-install".
func isHook(u *unstructured.Unstructured) bool {
	ann := u.GetAnnotations()
	if v, found := ann[v1alpha1.AnnotationHook]; found {
		types := strings.Split(v, ",")
		return !(len(types) == 1 && strings.TrimSpace(types[0]) == "Skip")
	}
	v, found := ann[annotationHelmHook]
	return found && v != "crd-install"
}

// typed converts u into the typed object out points to; the error names
// the kind and says which field did not fit.
func typed(u *unstructured.Unstructured, out any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return fmt.Errorf("cannot read %s: %w", u.GetKind(), err)
	}
	return nil
}

// status builds a HealthStatus.
func status(code, msg string) v1alpha1.HealthStatus {
	return v1alpha1.HealthStatus{Status: code, Message: msg}
}

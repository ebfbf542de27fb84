package health

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// deploymentHealth follows kubectl rollout status, as Argo CD does:
// spec.paused ⇒ Suspended; a generation not yet observed ⇒ Progressing;
// condition Progressing with reason ProgressDeadlineExceeded ⇒ Degraded;
// fewer updated replicas than wanted, old replicas still there, or updated
// replicas not all available ⇒ Progressing; else Healthy.
func deploymentHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var d appsv1.Deployment
	if err := typed(u, &d); err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	s := d.Status
	switch {
	case d.Spec.Paused:
		return status(v1alpha1.HealthSuspended, "Deployment is paused"), nil
	case d.Generation > s.ObservedGeneration:
		return status(v1alpha1.HealthProgressing,
			"Waiting for the rollout: the deployment controller has not yet seen the latest spec"), nil
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return status(v1alpha1.HealthDegraded, fmt.Sprintf("Deployment %q has exceeded its progress deadline", d.Name)), nil
		}
	}
	switch {
	case d.Spec.Replicas != nil && s.UpdatedReplicas < *d.Spec.Replicas:
		return status(v1alpha1.HealthProgressing,
			fmt.Sprintf("Waiting for the rollout: %d of %d replicas updated", s.UpdatedReplicas, *d.Spec.Replicas)), nil
	case s.Replicas > s.UpdatedReplicas:
		return status(v1alpha1.HealthProgressing,
			fmt.Sprintf("Waiting for the rollout: %d old replicas still to terminate", s.Replicas-s.UpdatedReplicas)), nil
	case s.AvailableReplicas < s.UpdatedReplicas:
		return status(v1alpha1.HealthProgressing,
			fmt.Sprintf("Waiting for the rollout: %d of %d updated replicas available", s.AvailableReplicas, s.UpdatedReplicas)), nil
	}
	return status(v1alpha1.HealthHealthy, ""), nil
}

// statefulSetHealth: a spec not yet observed (or observedGeneration 0) or
// fewer ready pods than replicas ⇒ Progressing; with RollingUpdate
// parameters, Healthy once replicas−partition pods are updated; OnDelete ⇒
// Healthy; otherwise Healthy once updateRevision is currentRevision.
func statefulSetHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var sts appsv1.StatefulSet
	if err := typed(u, &sts); err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	s, spec := sts.Status, sts.Spec
	if s.ObservedGeneration == 0 || sts.Generation > s.ObservedGeneration {
		return status(v1alpha1.HealthProgressing, "Waiting for the statefulset controller to see the latest spec"), nil
	}
	if spec.Replicas != nil && s.ReadyReplicas < *spec.Replicas {
		return status(v1alpha1.HealthProgressing, fmt.Sprintf("Waiting for %d pods to be ready", *spec.Replicas-s.ReadyReplicas)), nil
	}
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && spec.UpdateStrategy.RollingUpdate != nil {
		if p := spec.UpdateStrategy.RollingUpdate.Partition; spec.Replicas != nil && p != nil && s.UpdatedReplicas < *spec.Replicas-*p {
			return status(v1alpha1.HealthProgressing, fmt.Sprintf("Waiting for the partitioned rollout: %d of %d pods updated",
				s.UpdatedReplicas, *spec.Replicas-*p)), nil
		}
		return status(v1alpha1.HealthHealthy, fmt.Sprintf("Partitioned rollout complete: %d pods updated", s.UpdatedReplicas)), nil
	}
	if spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return status(v1alpha1.HealthHealthy, fmt.Sprintf("%d pods ready", s.ReadyReplicas)), nil
	}
	if s.UpdateRevision != s.CurrentRevision {
		return status(v1alpha1.HealthProgressing, fmt.Sprintf("Waiting for the rolling update: %d pods at revision %s",
			s.UpdatedReplicas, s.UpdateRevision)), nil
	}
	return status(v1alpha1.HealthHealthy, fmt.Sprintf("Rolling update complete: %d pods at revision %s",
		s.CurrentReplicas, s.CurrentRevision)), nil
}

// daemonSetHealth: a generation not yet observed ⇒ Progressing; OnDelete ⇒
// Healthy; fewer updated or available pods than desired ⇒ Progressing;
// else Healthy.
func daemonSetHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var ds appsv1.DaemonSet
	if err := typed(u, &ds); err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	s := ds.Status
	switch {
	case ds.Generation > s.ObservedGeneration:
		return status(v1alpha1.HealthProgressing,
			"Waiting for the rollout: the daemon set controller has not yet seen the latest spec"), nil
	case ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType:
		return status(v1alpha1.HealthHealthy,
			fmt.Sprintf("%d of %d pods updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)), nil
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return status(v1alpha1.HealthProgressing, fmt.Sprintf("Waiting for daemon set %q rollout: %d of %d pods updated",
			ds.Name, s.UpdatedNumberScheduled, s.DesiredNumberScheduled)), nil
	case s.NumberAvailable < s.DesiredNumberScheduled:
		return status(v1alpha1.HealthProgressing, fmt.Sprintf("Waiting for daemon set %q rollout: %d of %d pods available",
			ds.Name, s.NumberAvailable, s.DesiredNumberScheduled)), nil
	}
	return status(v1alpha1.HealthHealthy, ""), nil
}

// replicaSetHealth: a generation not yet observed ⇒ Progressing; condition
// ReplicaFailure=True ⇒ Degraded with its message; fewer available
// replicas than wanted ⇒ Progressing; else Healthy.
func replicaSetHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var rs appsv1.ReplicaSet
	if err := typed(u, &rs); err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	s := rs.Status
	if rs.Generation > s.ObservedGeneration {
		return status(v1alpha1.HealthProgressing,
			"Waiting for the rollout: the replica set controller has not yet seen the latest spec"), nil
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return status(v1alpha1.HealthDegraded, c.Message), nil
		}
	}
	if rs.Spec.Replicas != nil && s.AvailableReplicas < *rs.Spec.Replicas {
		return status(v1alpha1.HealthProgressing,
			fmt.Sprintf("Waiting for the rollout: %d of %d replicas available", s.AvailableReplicas, *rs.Spec.Replicas)), nil
	}
	return status(v1alpha1.HealthHealthy, ""), nil
}

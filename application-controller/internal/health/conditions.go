package health

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// condition is the part of a status condition the rules read.
type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// conditionsAt reads the conditions list at path; the error says which
// field did not have a condition's shape.
func conditionsAt(u *unstructured.Unstructured, path ...string) ([]condition, error) {
	raw, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !found {
		return nil, err
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var cs []condition
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("cannot read the conditions of %s: %w", u.GetKind(), err)
	}
	return cs, nil
}

// hpaFailures are the (type, reason) pairs that make a
// HorizontalPodAutoscaler Degraded whatever the condition's status: the
// autoscaler cannot read its target's scale or metrics.
var hpaFailures = map[[2]string]bool{
	{"AbleToScale", "FailedGetScale"}:                 true,
	{"AbleToScale", "FailedUpdateScale"}:              true,
	{"ScalingActive", "FailedGetResourceMetric"}:      true,
	{"ScalingActive", "FailedGetObjectMetric"}:        true,
	{"ScalingActive", "FailedGetPodsMetric"}:          true,
	{"ScalingActive", "FailedGetExternalMetric"}:      true,
	{"ScalingActive", "FailedComputeMetricsReplicas"}: true,
	{"ScalingActive", "InvalidSelector"}:              true,
}

// hpaHealth judges a HorizontalPodAutoscaler by its conditions
// (status.conditions from autoscaling/v2 on; in autoscaling/v1 the JSON of
// the autoscaling.alpha.kubernetes.io/conditions annotation): a failure
// listed in hpaFailures ⇒ Degraded; AbleToScale or ScalingLimited True ⇒
// Healthy; no conditions or none of these ⇒ Progressing. An annotation
// that is not JSON ⇒ Unknown.
func hpaHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	var conds []condition
	if u.GroupVersionKind().Version == "v1" {
		ann, found := u.GetAnnotations()["autoscaling.alpha.kubernetes.io/conditions"]
		if found {
			if err := json.Unmarshal([]byte(ann), &conds); err != nil {
				return v1alpha1.HealthStatus{}, fmt.Errorf("cannot read the conditions annotation of HorizontalPodAutoscaler: %w", err)
			}
		}
	} else {
		var err error
		if conds, err = conditionsAt(u, "status", "conditions"); err != nil {
			return v1alpha1.HealthStatus{}, err
		}
	}
	for _, c := range conds {
		if hpaFailures[[2]string{c.Type, c.Reason}] {
			return status(v1alpha1.HealthDegraded, c.Message), nil
		}
	}
	for _, c := range conds {
		if (c.Type == "AbleToScale" || c.Type == "ScalingLimited") && c.Status == "True" {
			return status(v1alpha1.HealthHealthy, c.Message), nil
		}
	}
	return status(v1alpha1.HealthProgressing, "Waiting for the autoscaler"), nil
}

// apiServiceHealth: condition Available True ⇒ Healthy, present but not
// True ⇒ Progressing, the message "<reason>: <message>"; no Available
// condition yet ⇒ Progressing.
func apiServiceHealth(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
	conds, err := conditionsAt(u, "status", "conditions")
	if err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	for _, c := range conds {
		if c.Type != "Available" {
			continue
		}
		msg := c.Reason + ": " + c.Message
		if c.Status == "True" {
			return status(v1alpha1.HealthHealthy, msg), nil
		}
		return status(v1alpha1.HealthProgressing, msg), nil
	}
	return status(v1alpha1.HealthProgressing, "Waiting for the aggregator to check the APIService"), nil
}

package webui

import (
	"strconv"
	"time"

	"github.com/eddyops/eddy/cli/internal/kinds"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// conditions reads status.conditions.
func conditions(u *unstructured.Unstructured) []Condition {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := make([]Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := Condition{Type: str(m, "type"), Status: str(m, "status"), Reason: str(m, "reason"), Message: str(m, "message")}
		if t := parseTime(str(m, "lastTransitionTime")); t != nil {
			c.LastTransitionTime = t
		}
		if g, ok := m["observedGeneration"].(int64); ok {
			c.ObservedGeneration = g
		}
		out = append(out, c)
	}
	return out
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func parseTime(s string) *time.Time {
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil
	}
	return &t
}

// typed is u as the API type of its kind (kinds.All), with the kind's row;
// false for another kind or content that does not convert.
func typed(u *unstructured.Unstructured) (kinds.Kind, kinds.Object, bool) {
	k, ok := kinds.ByKind(u.GetKind())
	if !ok {
		return kinds.Kind{}, nil, false
	}
	o := k.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
		return kinds.Kind{}, nil, false
	}
	return k, o, true
}

// summarize derives the overview row of an object. State, in order:
// suspended; Stalled=True: stalled; Ready=False (of this generation):
// failed, also while it retries; Reconciling=True: reconciling; no Ready:
// unknown (ready for the kinds without status and objects never
// reconciled, as `get` shows them); Ready of an older generation or
// Unknown: reconciling; Ready=True: ready.
func summarize(u *unstructured.Unstructured) Summary {
	s := Summary{Ref: refOf(u)}
	k, o, isKind := typed(u)
	if isKind {
		s.Suspended = o.IsSuspended()
	}
	var ready, stalled, reconciling *Condition
	conds := conditions(u)
	for i := range conds {
		switch conds[i].Type {
		case "Ready":
			ready = &conds[i]
		case "Stalled":
			stalled = &conds[i]
		case "Reconciling":
			reconciling = &conds[i]
		}
	}
	if ready != nil {
		s.Ready, s.Reason, s.Message, s.Updated = ready.Status, ready.Reason, ready.Message, ready.LastTransitionTime
	}
	// A Ready condition of an older generation says nothing of the spec
	// now: the object waits to be reconciled.
	stale := false
	if isKind && ready != nil {
		_, current := kinds.ReadyCondition(o)
		stale = !current
	}
	switch {
	case s.Suspended:
		s.State = "suspended"
	case stalled != nil && stalled.Status == "True":
		s.State, s.Reason, s.Message = "stalled", stalled.Reason, stalled.Message
	case ready != nil && !stale && ready.Status == "False":
		s.State = "failed" // also while it retries (Reconciling ProgressingWithRetry)
	case reconciling != nil && reconciling.Status == "True":
		s.State = "reconciling"
	case ready == nil && isKind && (k.NoStatus || k.IsUnreconciled(o)):
		s.State = "ready"
	case ready == nil:
		s.State = "unknown"
	case stale:
		s.State = "reconciling"
	case ready.Status == "True":
		s.State = "ready"
	default:
		s.State = "reconciling"
	}
	if isKind && k.Revision != nil {
		s.Revision = k.Revision(o)
	}
	s.SourceRef = sourceRefOf(u)
	s.DependsOn = dependsOnOf(u)
	return s
}

func refOf(u *unstructured.Unstructured) Ref {
	return Ref{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// sourceRefOf reads spec.sourceRef (Kustomization, HelmChart), or a
// HelmRelease's chart source: spec.chartRef, or the chart template's
// sourceRef. The namespace defaults to the object's.
func sourceRefOf(u *unstructured.Unstructured) *Ref {
	var m map[string]any
	switch u.GetKind() {
	case "HelmRelease":
		if r, ok, _ := unstructured.NestedMap(u.Object, "spec", "chartRef"); ok {
			m = r
		} else if r, ok, _ := unstructured.NestedMap(u.Object, "spec", "chart", "spec", "sourceRef"); ok {
			m = r
		}
	default:
		m, _, _ = unstructured.NestedMap(u.Object, "spec", "sourceRef")
	}
	if m == nil || str(m, "name") == "" {
		return nil
	}
	ns := str(m, "namespace")
	if ns == "" {
		ns = u.GetNamespace()
	}
	return &Ref{APIVersion: str(m, "apiVersion"), Kind: str(m, "kind"), Namespace: ns, Name: str(m, "name")}
}

// dependsOnOf reads spec.dependsOn: objects of the same kind unless an
// entry names another; the namespace defaults to the object's.
func dependsOnOf(u *unstructured.Unstructured) []Ref {
	raw, _, _ := unstructured.NestedSlice(u.Object, "spec", "dependsOn")
	var out []Ref
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok || str(m, "name") == "" {
			continue
		}
		kind, ns := str(m, "kind"), str(m, "namespace")
		if kind == "" {
			kind = u.GetKind()
		}
		if ns == "" {
			ns = u.GetNamespace()
		}
		out = append(out, Ref{Kind: kind, Namespace: ns, Name: str(m, "name")})
	}
	return out
}

// history reads status.history: a Kustomization's snapshots (revision in
// metadata), or a HelmRelease's releases (chart version).
func history(u *unstructured.Unstructured) []Snapshot {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
	out := make([]Snapshot, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		s := Snapshot{Digest: str(m, "digest"), Status: str(m, "lastReconciledStatus")}
		if u.GetKind() == "HelmRelease" {
			s.Revision = str(m, "chartVersion")
			s.Status = str(m, "status")
			s.First, s.Last = parseTime(str(m, "firstDeployed")), parseTime(str(m, "lastDeployed"))
			if v, ok := m["version"].(int64); ok {
				s.Total = v
			}
			s.Metadata = map[string]string{"chart": str(m, "chartName"), "appVersion": str(m, "appVersion"), "release": str(m, "name") + ".v" + itoa(s.Total)}
		} else {
			md, _, _ := unstructured.NestedStringMap(m, "metadata")
			s.Metadata, s.Revision = md, md["revision"]
			s.First, s.Last = parseTime(str(m, "firstReconciled")), parseTime(str(m, "lastReconciled"))
			if d, err := time.ParseDuration(str(m, "lastReconciledDuration")); err == nil {
				s.DurationSec = d.Seconds()
			}
			if v, ok := m["totalReconciliations"].(int64); ok {
				s.Total = v
			}
		}
		out = append(out, s)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

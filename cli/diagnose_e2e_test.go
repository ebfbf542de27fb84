package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/process"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A failed e2e test prints what the next reader needs to tell why from CI's
// output alone: the environment's processes, the tail of every log it
// wrote, and, while the cluster answers, the Flux objects' conditions, the
// controllers' leases and the latest events.

// diagnosedKinds are the kinds whose conditions a diagnosis prints.
var diagnosedKinds = []schema.GroupVersionKind{
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepository"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmChart"},
	{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
	{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"},
	{Group: "notification.toolkit.fluxcd.io", Version: "v1", Kind: "Receiver"},
}

// diagnoseOnFailure makes u print its diagnosis when the test has failed,
// before the cleanups registered earlier (such as newUser's `dev down`) run.
func (u *user) diagnoseOnFailure() {
	u.t.Cleanup(func() {
		if u.t.Failed() {
			u.diagnose()
		}
	})
}

// diagnose logs the environment's state, objects and logs, once per user.
func (u *user) diagnose() {
	if u.diagnosed {
		return
	}
	u.diagnosed = true
	var b strings.Builder
	fmt.Fprintf(&b, "===== diagnosis of the eddy dev environment in %s =====\n", u.dir())
	s, err := dev.ReadState(u.dir())
	if err != nil {
		fmt.Fprintf(&b, "state: %v\n", err)
	} else {
		fmt.Fprintf(&b, "state: phase %s, owner pid %d (alive %v), started %s\n", s.Phase, s.PID, dev.Alive(s.PID), s.StartedAt.Format(time.RFC3339))
		for _, p := range s.Controllers {
			fmt.Fprintf(&b, "  %s pid %d alive %v restarts %d last exit %q started %s\n",
				p.Name, p.PID, dev.Alive(p.PID), p.Restarts, p.LastExit, p.StartedAt.Format(time.RFC3339))
		}
		for _, p := range s.Cluster {
			fmt.Fprintf(&b, "  %s pid %d alive %v\n", p.Name, p.PID, dev.Alive(p.PID))
		}
		writeObjects(&b, s.Kubeconfig)
	}
	writeLogTails(&b, filepath.Join(u.dir(), "logs"), 40)
	writeLogTails(&b, filepath.Join(u.dir(), "cluster"), 15)
	u.t.Log(b.String())
}

// writeObjects writes the conditions of diagnosedKinds, the leases and the
// latest events of the cluster of kubeconfig, each read bounded in time so
// that a cluster that is gone costs seconds.
func writeObjects(b *strings.Builder, kubeconfig string) {
	c, err := dev.ClientFor(kubeconfig)
	if err != nil {
		fmt.Fprintf(b, "cluster: %v\n", err)
		return
	}
	read := func(list client.ObjectList) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.List(ctx, list)
	}
	b.WriteString("----- objects and their conditions -----\n")
	for _, gvk := range diagnosedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := read(list); err != nil {
			fmt.Fprintf(b, "%s: %v\n", gvk.Kind, err)
			if strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "deadline") {
				return // the cluster is gone: nothing more to read
			}
			continue
		}
		for _, o := range list.Items {
			writeConditions(b, &o)
		}
	}
	leases := &coordinationv1.LeaseList{}
	if err := read(leases); err == nil {
		for _, l := range leases.Items {
			if l.Spec.HolderIdentity == nil || l.Namespace != dev.Namespace {
				continue
			}
			renew := ""
			if l.Spec.RenewTime != nil {
				renew = l.Spec.RenewTime.Format(time.RFC3339Nano)
			}
			fmt.Fprintf(b, "Lease %s/%s holder %s renewed %s\n", l.Namespace, l.Name, *l.Spec.HolderIdentity, renew)
		}
	}
	events := &corev1.EventList{}
	if err := read(events); err == nil {
		sort.Slice(events.Items, func(i, j int) bool { return eventTime(&events.Items[i]).Before(eventTime(&events.Items[j])) })
		if n := len(events.Items); n > 30 {
			events.Items = events.Items[n-30:]
		}
		b.WriteString("----- the latest events -----\n")
		for _, e := range events.Items {
			fmt.Fprintf(b, "%s %s %s/%s/%s %s (x%d): %s\n", eventTime(&e).Format(time.RFC3339), e.Type, e.InvolvedObject.Kind,
				e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Reason, max(e.Count, 1), strings.TrimSpace(e.Message))
		}
	}
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// writeConditions writes one object's generation, revisions and conditions.
func writeConditions(b *strings.Builder, o *unstructured.Unstructured) {
	observed, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
	applied, _, _ := unstructured.NestedString(o.Object, "status", "lastAppliedRevision")
	artifact, _, _ := unstructured.NestedString(o.Object, "status", "artifact", "revision")
	handled, _, _ := unstructured.NestedString(o.Object, "status", "lastHandledReconcileAt")
	suspended, _, _ := unstructured.NestedBool(o.Object, "spec", "suspend")
	fmt.Fprintf(b, "%s %s/%s generation %d observed %d suspend %v artifact %q applied %q requested %q handled %q\n",
		o.GetKind(), o.GetNamespace(), o.GetName(), o.GetGeneration(), observed, suspended, artifact, applied,
		o.GetAnnotations()["reconcile.fluxcd.io/requestedAt"], handled)
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		fmt.Fprintf(b, "    %v=%v %v (observed %v, %v): %v\n", m["type"], m["status"], m["reason"], m["observedGeneration"],
			m["lastTransitionTime"], m["message"])
	}
}

// writeLogTails writes the last n lines of each *.log file in dir.
func writeLogTails(b *strings.Builder, dir string, n int) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, path := range logs {
		if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
			fmt.Fprintf(b, "----- %s: empty -----\n", path)
			continue
		}
		fmt.Fprintf(b, "----- %s (last %d lines) -----\n%s\n", path, n, process.TailFile(path, n))
		// A crash-looping controller's cause is in its error lines, which
		// the tail of a stopped one (its shutdown) does not show.
		if errs := errorLines(path, 10); errs != "" {
			fmt.Fprintf(b, "----- %s (last 10 error lines) -----\n%s\n", path, errs)
		}
	}
}

// errorLines returns the last n lines of the JSON log at path whose level is error.
func errorLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `"level":"error"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

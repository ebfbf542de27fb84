package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/eddyops/eddy/application-controller/internal/project"
	"github.com/eddyops/eddy/pkg/appdiff"
	"github.com/eddyops/eddy/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// collectImages adds the container images of a workload or Pod.
func collectImages(u *unstructured.Unstructured, into map[string]bool) {
	var podSpec []string
	switch u.GetKind() {
	case "Pod":
		podSpec = []string{"spec"}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController":
		podSpec = []string{"spec", "template", "spec"}
	case "CronJob":
		podSpec = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	default:
		return
	}
	for _, field := range []string{"initContainers", "containers"} {
		list, _, _ := unstructured.NestedSlice(u.Object, append(append([]string{}, podSpec...), field)...)
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				if img, ok := m["image"].(string); ok && img != "" {
					into[img] = true
				}
			}
		}
	}
}

// collectURLs adds an Ingress's external URLs: http[s]://<host><path> for
// each rule (https when its host is in spec.tls).
func collectURLs(u *unstructured.Unstructured, into map[string]bool) {
	if u.GetKind() != "Ingress" {
		return
	}
	tlsHosts := map[string]bool{}
	tls, _, _ := unstructured.NestedSlice(u.Object, "spec", "tls")
	for _, t := range tls {
		if m, ok := t.(map[string]any); ok {
			hosts, _, _ := unstructured.NestedStringSlice(m, "hosts")
			for _, h := range hosts {
				tlsHosts[h] = true
			}
		}
	}
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	for _, rule := range rules {
		m, ok := rule.(map[string]any)
		if !ok {
			continue
		}
		host, _ := m["host"].(string)
		if host == "" {
			continue
		}
		scheme := "http"
		if tlsHosts[host] {
			scheme = "https"
		}
		paths, _, _ := unstructured.NestedSlice(m, "http", "paths")
		if len(paths) == 0 {
			into[scheme+"://"+host+"/"] = true
		}
		for _, p := range paths {
			pm, _ := p.(map[string]any)
			path, _ := pm["path"].(string)
			if path == "" {
				path = "/"
			}
			into[scheme+"://"+host+path] = true
		}
	}
}

// project returns the Application's AppProject, from the controller's
// namespace; "default" is created when missing (argocd-contract §8.1: Argo
// CD's API server does it at start).
func (r *ApplicationReconciler) project(ctx context.Context, app *argov1.Application) (*argov1.AppProject, error) {
	name := app.GetProject()
	p := &argov1.AppProject{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, p)
	if apierrors.IsNotFound(err) && name == argov1.DefaultProject {
		p = &argov1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}, Spec: project.Default()}
		if err := r.Client.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the default project: %s", apiReason(err))
		}
		return p, nil
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("Application referencing project %s which does not exist", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading project %s: %s", name, apiReason(err))
	}
	if app.Namespace != r.Namespace && !sourceNamespaceAllowed(p, app.Namespace) {
		return nil, fmt.Errorf("app is not allowed in project \"%s\", or the project does not exist", name)
	}
	return p, nil
}

// ensureDefaultProject creates the default AppProject in the controller's
// namespace when it is missing; a failure is logged, and project() tries
// again when an Application needs it.
func (r *ApplicationReconciler) ensureDefaultProject(ctx context.Context) {
	p := &argov1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: argov1.DefaultProject}, Spec: project.Default()}
	if err := r.Client.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
		r.Log.Info("cannot create the default project", "error", apiReason(err))
	}
}

// sourceNamespaceAllowed: an Application outside the controller's
// namespace must be in one of the project's sourceNamespaces (globs).
func sourceNamespaceAllowed(p *argov1.AppProject, ns string) bool {
	for _, g := range p.Spec.SourceNamespaces {
		if g == ns || g == "*" || (strings.HasSuffix(g, "*") && strings.HasPrefix(ns, strings.TrimSuffix(g, "*"))) {
			return true
		}
	}
	return false
}

// maxDiffBytes bounds the pending-diff annotation, well under the API
// server's 256 KiB for all annotations of an object.
const maxDiffBytes = 64 << 10

// pendingDiff is the comparison's pending diff for appdiff.Annotation:
// for each OutOfSync object, in status.resources order, its differing
// fields with their live and desired values and the field manager of the
// live value (ssa.DiffFields). An object missing live is one field at the
// whole-object pointer "" with the desired object (metadata reduced to
// name, namespace, labels and annotations) and no live value; one that
// requires pruning is that field with the live object and no desired one.
// A Secret's values are masked (appdiff.Encode). Past maxDiffBytes, whole-object
// values are dropped, then trailing objects. "" when nothing differs or
// the comparison failed.
func pendingDiff(c *comparison) string {
	if c.err != nil || c.target == nil {
		return ""
	}
	var objs []appdiff.Object
	for _, rs := range c.resources {
		if rs.Status != argov1.SyncStatusOutOfSync {
			continue
		}
		k := plan.Key(rs.Group, rs.Kind, rs.Namespace, rs.Name)
		o := appdiff.Object{Group: rs.Group, Kind: rs.Kind, Namespace: rs.Namespace, Name: rs.Name}
		switch {
		case rs.RequiresPruning:
			o.Fields = []appdiff.Field{{Path: "", Live: wholeObject(c.live[k], appdiff.MaskedLive)}}
		case c.live[k] == nil:
			o.Fields = []appdiff.Field{{Path: "", Desired: wholeObject(c.desired[k], appdiff.MaskedDesired)}}
		default:
			for _, f := range c.drift[k] {
				o.Fields = append(o.Fields, diffField(f))
			}
		}
		objs = append(objs, o)
	}
	s, _ := appdiff.Encode(objs)
	if len(s) <= maxDiffBytes {
		return s
	}
	for i := range objs {
		for j := range objs[i].Fields {
			if objs[i].Fields[j].Path == "" {
				objs[i].Fields[j].Live, objs[i].Fields[j].Desired = nil, nil
			}
		}
	}
	for len(objs) > 0 {
		if s, _ = appdiff.Encode(objs); len(s) <= maxDiffBytes {
			return s
		}
		objs = objs[:len(objs)/2]
	}
	return ""
}

// diffField turns an ssa drift into the annotation's field: absent
// values stay absent.
func diffField(f ssa.FieldDrift) appdiff.Field {
	out := appdiff.Field{Path: f.Pointer(), Manager: f.Manager}
	desiredAbsent, liveAbsent := f.Absent()
	if !liveAbsent && json.Valid([]byte(f.Live)) {
		out.Live = json.RawMessage(f.Live)
	}
	if !desiredAbsent && json.Valid([]byte(f.Desired)) {
		out.Desired = json.RawMessage(f.Desired)
	}
	return out
}

// wholeObject is u as the diff shows it: apiVersion, kind, the metadata a
// user writes and the rest but status; a Secret's data values replaced
// by mask.
func wholeObject(u *unstructured.Unstructured, mask string) json.RawMessage {
	if u == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	md := map[string]any{"name": u.GetName()}
	if ns := u.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	if l := u.GetLabels(); len(l) > 0 {
		md["labels"] = l
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
		md["annotations"] = a
	}
	out["metadata"] = md
	if u.GetKind() == "Secret" && u.GroupVersionKind().Group == "" {
		for _, field := range []string{"data", "stringData"} {
			if m, ok := out[field].(map[string]any); ok {
				masked := make(map[string]any, len(m))
				for key := range m {
					masked[key] = mask
				}
				out[field] = masked
			}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}

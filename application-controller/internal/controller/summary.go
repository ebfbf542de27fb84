package controller

import (
	"context"
	"fmt"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/project"
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

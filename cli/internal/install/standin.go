// Package install is a TEMPORARY STAND-IN for helper install's package of
// the same name (cli/internal/install on branch install), so that
// bootstrap builds and runs before it lands. It renders a minimal bundle
// (Namespace, the CRDs of config/crd/bases, one ServiceAccount and
// Deployment per component) and applies with pkg/ssa. REMOVE on merge.
package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/eddyops/eddy/pkg/testenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Options of the bundle.
type Options struct {
	Version            string
	Namespace          string
	Components         []string
	ComponentsExtra    []string
	Registry           string
	WatchAllNamespaces bool
	NetworkPolicy      bool
	LogLevel           string
	ClusterDomain      string
	TolerationKeys     []string
}

// DefaultOptions are flux's defaults for version.
func DefaultOptions(version string) Options {
	return Options{
		Version: version, Namespace: "flux-system",
		Components:         []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"},
		Registry:           "ghcr.io/eddyops",
		WatchAllNamespaces: true, NetworkPolicy: true, LogLevel: "info", ClusterDomain: "cluster.local",
	}
}

// Render returns the bundle as YAML documents.
func Render(o Options) (string, error) {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		return "", err
	}
	var docs []string
	docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    app.kubernetes.io/instance: %s\n    app.kubernetes.io/part-of: flux\n    app.kubernetes.io/version: %s\n", o.Namespace, o.Namespace, o.Version))
	files, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		docs = append(docs, strings.TrimPrefix(strings.TrimSpace(string(b)), "---\n")+"\n")
	}
	for _, c := range append(append([]string(nil), o.Components...), o.ComponentsExtra...) {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: %s\n  namespace: %s\n", c, o.Namespace))
		docs = append(docs, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
  labels:
    app.kubernetes.io/component: %[1]s
    app.kubernetes.io/part-of: flux
    app.kubernetes.io/version: %[4]s
spec:
  replicas: 1
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      serviceAccountName: %[1]s
      containers:
      - name: manager
        image: %[3]s/%[1]s:%[4]s
        args:
        - --log-level=%[5]s
`, c, o.Namespace, o.Registry, o.Version, o.LogLevel))
	}
	return "---\n" + strings.Join(docs, "---\n"), nil
}

// Objects decodes a rendered bundle.
func Objects(manifest string) ([]*unstructured.Unstructured, error) {
	docs, err := testenv.YAMLDocuments([]byte(manifest))
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out, nil
}

// Apply applies objs in stages with server-side apply, field manager flux.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]ssa.Change, error) {
	m := &ssa.Manager{Client: c, Owner: "flux", StageTimeout: time.Minute, Poll: 2 * time.Second}
	return m.ApplyAll(ctx, objs, ssa.ApplyOptions{})
}

package install

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSourceWatcherExtra: source-watcher is not a default component
// (nothing of it in the default bundle); --components-extra=source-watcher
// adds its Deployment (Flux's arguments, /data and the advertised address
// of its Service), Service, ServiceAccount, binding to crd-controller and
// the ArtifactGenerator CRD, labelled with its component.
func TestSourceWatcherExtra(t *testing.T) {
	for _, u := range objects(t, DefaultOptions("v1")) {
		if strings.Contains(u.GetName(), "source-watcher") || strings.Contains(u.GetName(), "source.extensions") {
			t.Errorf("the default bundle has %s/%s", u.GetKind(), u.GetName())
		}
	}
	o := DefaultOptions("v1")
	o.ComponentsExtra = []string{SourceWatcher}
	objs := objects(t, o)
	if len(objs) != 39 {
		t.Errorf("%d objects, want 39 (the default 34, a CRD, ServiceAccount, ClusterRoleBinding, Service and Deployment)", len(objs))
	}
	for _, want := range []string{"CustomResourceDefinition/artifactgenerators.source.extensions.fluxcd.io",
		"ClusterRoleBinding/crd-controller-source-watcher-flux-system", "Deployment/source-watcher",
		"ServiceAccount/source-watcher", "Service/source-watcher"} {
		kind, name, _ := strings.Cut(want, "/")
		u := find(objs, kind, name)
		if u == nil {
			t.Errorf("no %s", want)
			continue
		}
		if l := u.GetLabels(); l[ComponentLabel] != SourceWatcher || l[PartOfLabel] != PartOfValue || l[InstanceLabel] != "flux-system" {
			t.Errorf("%s labels %v", want, l)
		}
	}
	crb := find(objs, "ClusterRoleBinding", "crd-controller-source-watcher-flux-system")
	if crb != nil {
		subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
		if fmt.Sprint(subjects) != "[map[kind:ServiceAccount name:source-watcher namespace:flux-system]]" {
			t.Errorf("binding subjects %v", subjects)
		}
	}
	wantArgs := []string{"--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc.cluster.local./", "--watch-all-namespaces=true",
		"--log-level=info", "--log-encoding=json", "--enable-leader-election", "--storage-path=/data",
		"--storage-adv-addr=source-watcher.$(RUNTIME_NAMESPACE).svc.cluster.local."}
	if got := managerArgs(t, objs, SourceWatcher); !slices.Equal(got, wantArgs) {
		t.Errorf("args\n%q, want\n%q", got, wantArgs)
	}
	d := find(objs, "Deployment", SourceWatcher)
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if img := cs[0].(map[string]any)["image"]; img != "ghcr.io/eddyops/source-watcher:v1" {
		t.Errorf("image %v", img)
	}
	if !strings.Contains(fmt.Sprint(cs), "map[mountPath:/data name:data]") {
		t.Errorf("source-watcher mounts no /data: %v", cs)
	}
}

package install

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestImageControllersExtra: the image controllers are not default
// components (nothing of theirs in the default bundle);
// --components-extra=image-reflector-controller,image-automation-controller
// adds each one's Deployment (Flux's arguments and /data for the
// reflector), ServiceAccount, binding to crd-controller and CRDs, labelled
// with its component; either may come alone.
func TestImageControllersExtra(t *testing.T) {
	for _, u := range objects(t, DefaultOptions("v1")) {
		if strings.Contains(u.GetName(), "image") {
			t.Errorf("the default bundle has %s/%s", u.GetKind(), u.GetName())
		}
	}
	o := DefaultOptions("v1")
	o.ComponentsExtra = []string{ImageReflectorController, ImageAutomationController}
	objs := objects(t, o)
	if len(objs) != 43 {
		t.Errorf("%d objects, want 43 (the default 34, 3 CRDs, 2 each of ServiceAccount, ClusterRoleBinding and Deployment)", len(objs))
	}
	owned := map[string][]string{
		ImageReflectorController: {"CustomResourceDefinition/imagerepositories.image.toolkit.fluxcd.io",
			"CustomResourceDefinition/imagepolicies.image.toolkit.fluxcd.io", "ClusterRoleBinding/crd-controller-image-reflector-flux-system"},
		ImageAutomationController: {"CustomResourceDefinition/imageupdateautomations.image.toolkit.fluxcd.io",
			"ClusterRoleBinding/crd-controller-image-automation-flux-system"},
	}
	for _, c := range []string{ImageReflectorController, ImageAutomationController} {
		for _, want := range append(owned[c], "Deployment/"+c, "ServiceAccount/"+c) {
			kind, name, _ := strings.Cut(want, "/")
			u := find(objs, kind, name)
			if u == nil {
				t.Errorf("no %s", want)
				continue
			}
			if l := u.GetLabels(); l[ComponentLabel] != c || l[PartOfLabel] != PartOfValue || l[InstanceLabel] != "flux-system" {
				t.Errorf("%s labels %v", want, l)
			}
		}
		crb := find(objs, "ClusterRoleBinding", owned[c][len(owned[c])-1])
		if crb != nil {
			subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
			role, _, _ := unstructured.NestedString(crb.Object, "roleRef", "name")
			if role != "crd-controller-flux-system" || fmt.Sprint(subjects) != fmt.Sprintf("[map[kind:ServiceAccount name:%s namespace:flux-system]]", c) {
				t.Errorf("%s binds %s to %v", crb.GetName(), role, subjects)
			}
		}
		wantArgs := []string{"--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc.cluster.local./", "--watch-all-namespaces=true",
			"--log-level=info", "--log-encoding=json", "--enable-leader-election"}
		if got := managerArgs(t, objs, c); !slices.Equal(got, wantArgs) {
			t.Errorf("%s args\n%q, want\n%q", c, got, wantArgs)
		}
		d := find(objs, "Deployment", c)
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if img := cs[0].(map[string]any)["image"]; img != "ghcr.io/eddyops/"+c+":v1" {
			t.Errorf("image %v", img)
		}
	}
	mounts, _, _ := unstructured.NestedSlice(find(objs, "Deployment", ImageReflectorController).Object, "spec", "template", "spec", "containers")
	if !strings.Contains(fmt.Sprint(mounts), "map[mountPath:/data name:data]") {
		t.Errorf("image-reflector-controller mounts no /data: %v", mounts)
	}
	if h := Header(o); !strings.Contains(h, "# Components: source-controller,kustomize-controller,helm-controller,notification-controller,image-reflector-controller,image-automation-controller\n") {
		t.Errorf("header %q", h)
	}

	o.ComponentsExtra = []string{ImageReflectorController}
	for _, u := range objects(t, o) {
		if u.GetLabels()[ComponentLabel] == ImageAutomationController {
			t.Errorf("with the reflector alone: %s/%s", u.GetKind(), u.GetName())
		}
	}
}

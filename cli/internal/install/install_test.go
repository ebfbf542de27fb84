package install

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var (
	cacheMu sync.Mutex
	cache   = map[string][]*unstructured.Unstructured{}
)

// objects returns Objects(o), built once per distinct o: a build takes
// seconds under the race detector, so the tests share two option sets
// (custom and subset) and read them without changing them.
func objects(t *testing.T, o Options) []*unstructured.Unstructured {
	t.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	key := fmt.Sprintf("%#v", o)
	if objs, ok := cache[key]; ok {
		return objs
	}
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	cache[key] = objs
	return objs
}

var testDigest = "sha256:" + strings.Repeat("ab", 32)

// custom sets every option away from its default.
func custom() Options {
	o := DefaultOptions("v9.8.7")
	o.Namespace = "gitops"
	o.ClusterDomain = "corp.example"
	o.LogLevel = "debug"
	o.WatchAllNamespaces = false
	o.TolerationKeys = []string{"node.example.com/infra", "gpu"}
	o.Registry = "registry.local:5000/eddy"
	o.ImageDigests = map[string]string{"kustomize-controller": testDigest}
	return o
}

// subset has two components and no network policies.
func subset() Options {
	o := DefaultOptions("v1")
	o.Components = []string{"source-controller", "kustomize-controller"}
	o.NetworkPolicy = false
	return o
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

func managerArgs(t *testing.T, objs []*unstructured.Unstructured, name string) []string {
	t.Helper()
	d := find(objs, "Deployment", name)
	if d == nil {
		t.Fatalf("no Deployment %s", name)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	var args []string
	for _, a := range cs[0].(map[string]any)["args"].([]any) {
		args = append(args, a.(string))
	}
	return args
}

// TestLabels: every object carries Flux's part-of, instance and version
// labels; each component's objects, CRDs included, its component label; pod
// templates the same labels.
func TestLabels(t *testing.T) {
	objs := objects(t, custom())
	crdComponent := map[string]string{}
	for _, u := range objs {
		l := u.GetLabels()
		if l[PartOfLabel] != "flux" || l[InstanceLabel] != "gitops" || l[VersionLabel] != "v9.8.7" {
			t.Errorf("%s/%s labels %v, want part-of=flux, instance=gitops, version=v9.8.7", u.GetKind(), u.GetName(), l)
		}
		switch u.GetKind() {
		case "CustomResourceDefinition":
			crdComponent[u.GetName()] = l[ComponentLabel]
		case "Deployment", "ServiceAccount", "Service":
			if !slices.Contains(Components, l[ComponentLabel]) {
				t.Errorf("%s/%s has component label %q", u.GetKind(), u.GetName(), l[ComponentLabel])
			}
		}
		if u.GetKind() == "Deployment" {
			tl, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
			if tl[PartOfLabel] != "flux" || tl[ComponentLabel] != u.GetName() || tl["app"] != u.GetName() {
				t.Errorf("Deployment %s pod labels %v", u.GetName(), tl)
			}
		}
		if ns := u.GetNamespace(); ns != "" && ns != "gitops" {
			t.Errorf("%s/%s in namespace %s", u.GetKind(), u.GetName(), ns)
		}
	}
	want := map[string]string{
		"gitrepositories.source.toolkit.fluxcd.io":   "source-controller",
		"helmrepositories.source.toolkit.fluxcd.io":  "source-controller",
		"helmcharts.source.toolkit.fluxcd.io":        "source-controller",
		"ocirepositories.source.toolkit.fluxcd.io":   "source-controller",
		"buckets.source.toolkit.fluxcd.io":           "source-controller",
		"externalartifacts.source.toolkit.fluxcd.io": "source-controller",
		"kustomizations.kustomize.toolkit.fluxcd.io": "kustomize-controller",
		"helmreleases.helm.toolkit.fluxcd.io":        "helm-controller",
		"alerts.notification.toolkit.fluxcd.io":      "notification-controller",
		"providers.notification.toolkit.fluxcd.io":   "notification-controller",
		"receivers.notification.toolkit.fluxcd.io":   "notification-controller",
	}
	if fmt.Sprint(crdComponent) != fmt.Sprint(want) {
		t.Errorf("CRD components %v, want %v", crdComponent, want)
	}
}

// TestFluxNames: Flux's RBAC names with the namespace suffix, subjects in
// the namespace, the NetworkPolicies (left out with NetworkPolicy=false).
func TestFluxNames(t *testing.T) {
	objs := objects(t, custom())
	for _, want := range []string{"ClusterRole/crd-controller-gitops", "ClusterRoleBinding/crd-controller-gitops",
		"ClusterRoleBinding/cluster-reconciler-gitops", "ClusterRole/flux-edit-gitops", "ClusterRole/flux-view-gitops",
		"ResourceQuota/critical-pods-gitops", "Namespace/gitops", "NetworkPolicy/allow-egress", "NetworkPolicy/allow-scraping",
		"NetworkPolicy/allow-webhooks", "Service/webhook-receiver"} {
		kind, name, _ := strings.Cut(want, "/")
		if find(objs, kind, name) == nil {
			t.Errorf("no %s", want)
		}
	}
	crb := find(objs, "ClusterRoleBinding", "crd-controller-gitops")
	if ref, _, _ := unstructured.NestedString(crb.Object, "roleRef", "name"); ref != "crd-controller-gitops" {
		t.Errorf("crd-controller binding roleRef %q", ref)
	}
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	for _, s := range subjects {
		if ns := s.(map[string]any)["namespace"]; ns != "gitops" {
			t.Errorf("subject %v not in gitops", s)
		}
	}
	for _, u := range objects(t, subset()) {
		if u.GetKind() == "NetworkPolicy" {
			t.Errorf("NetworkPolicy %s with NetworkPolicy=false", u.GetName())
		}
	}
}

// TestArgs: flux install's positional arguments (events address with the
// cluster domain first, then watch-all-namespaces and log level;
// source-controller's storage address at 6), tolerations and node selector.
func TestArgs(t *testing.T) {
	objs := objects(t, custom())
	events := "--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc.corp.example./"
	for name, want := range map[string][]string{
		"source-controller": {events, "--watch-all-namespaces=false", "--log-level=debug", "--log-encoding=json", "--enable-leader-election",
			"--storage-path=/data", "--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.corp.example."},
		"kustomize-controller":    {events, "--watch-all-namespaces=false", "--log-level=debug", "--log-encoding=json", "--enable-leader-election"},
		"helm-controller":         {events, "--watch-all-namespaces=false", "--log-level=debug", "--log-encoding=json", "--enable-leader-election"},
		"notification-controller": {"--watch-all-namespaces=false", "--log-level=debug", "--log-encoding=json", "--enable-leader-election"},
	} {
		if got := managerArgs(t, objs, name); !slices.Equal(got, want) {
			t.Errorf("%s args\n%q, want\n%q", name, got, want)
		}
		d := find(objs, "Deployment", name)
		tol, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "tolerations")
		sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "spec", "nodeSelector")
		if fmt.Sprint(tol) != "[map[key:node.example.com/infra operator:Exists] map[key:gpu operator:Exists]]" || sel["kubernetes.io/os"] != "linux" {
			t.Errorf("%s tolerations %v, nodeSelector %v", name, tol, sel)
		}
	}
	// Without notification-controller the events address is empty, as flux's.
	if got := managerArgs(t, objects(t, subset()), "kustomize-controller")[0]; got != "--events-addr=" {
		t.Errorf("events address without notification-controller %q", got)
	}
}

// TestImages: <registry>/<component>:<version>, with @digest when known.
func TestImages(t *testing.T) {
	digest := testDigest
	objs := objects(t, custom())
	for _, c := range DefaultComponents {
		d := find(objs, "Deployment", c)
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		want := "registry.local:5000/eddy/" + c + ":v9.8.7"
		if c == "kustomize-controller" {
			want += "@" + digest
		}
		if got := cs[0].(map[string]any)["image"]; got != want {
			t.Errorf("%s image %v, want %s", c, got, want)
		}
	}
	parsed, err := ParseImageDigests("kustomize-controller=" + digest + ", helm-controller=" + digest)
	if err != nil || len(parsed) != 2 || parsed["helm-controller"] != digest {
		t.Errorf("ParseImageDigests %v, %v", parsed, err)
	}
	if _, err := ParseImageDigests("kustomize-controller=sha256:abc"); err == nil {
		t.Error("ParseImageDigests accepted a short digest")
	}
}

// TestComponentsSubset: an omitted component's Deployment, ServiceAccount,
// Service and CRDs are left out; unknown and Flux-only components are
// refused with the list of known ones.
func TestComponentsSubset(t *testing.T) {
	var crds []string
	for _, u := range objects(t, subset()) {
		if c := u.GetLabels()[ComponentLabel]; c == "helm-controller" || c == "notification-controller" {
			t.Errorf("%s/%s of an omitted component", u.GetKind(), u.GetName())
		}
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u.GetName())
		}
	}
	if len(crds) != 7 {
		t.Errorf("CRDs %v, want the 6 of source-controller and Kustomization", crds)
	}
	for _, tc := range []struct {
		extra, components []string
		want              string
	}{
		{components: []string{"source-controler"}, want: `component "source-controler" is not available (available: source-controller, kustomize-controller, helm-controller, notification-controller, image-reflector-controller, image-automation-controller, application-controller, source-watcher)`},
		{components: []string{}, want: "no components to install"},
	} {
		o := DefaultOptions("v1")
		if tc.components != nil {
			o.Components = tc.components
		}
		o.ComponentsExtra = tc.extra
		if _, err := Render(o); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("components %v extra %v: error %v, want %q", tc.components, tc.extra, err, tc.want)
		}
	}
}

// TestBadOptions: each invalid option gives one line naming it.
func TestBadOptions(t *testing.T) {
	for name, mod := range map[string]func(*Options){
		"namespace":        func(o *Options) { o.Namespace = "Flux_System" },
		"--cluster-domain": func(o *Options) { o.ClusterDomain = "a..b" },
		"--log-level":      func(o *Options) { o.LogLevel = "trace" },
		"--registry":       func(o *Options) { o.Registry = "ghcr.io/eddyops/" },
		"--version":        func(o *Options) { o.Version = "v1 2" },
		"--toleration-keys": func(o *Options) {
			o.TolerationKeys = []string{"bad key"}
		},
	} {
		o := DefaultOptions("v1")
		mod(&o)
		if _, err := Render(o); err == nil || !strings.HasPrefix(err.Error(), name) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

// TestRenderDeterministic: the same options give the same bytes, starting
// with the generation header, every document valid YAML in Objects' order.
func TestRenderDeterministic(t *testing.T) {
	o := DefaultOptions("v1.0.0")
	a, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two renders of the same options differ")
	}
	if !strings.HasPrefix(string(a), "---\n# This manifest was generated by eddy. DO NOT EDIT.\n# Eddy Version: v1.0.0\n# Components: source-controller,kustomize-controller,helm-controller,notification-controller\napiVersion: v1\nkind: Namespace\n") {
		t.Errorf("bundle starts %q", a[:200])
	}
	var objs []*unstructured.Unstructured
	for i, d := range strings.Split(string(a), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil || u.GetKind() == "" || u.GetName() == "" {
			t.Fatalf("document %d: %s/%s, %v", i, u.GetKind(), u.GetName(), err)
		}
		objs = append(objs, u)
	}
	if len(objs) != 34 {
		t.Errorf("%d documents, want 34 (11 CRDs, Namespace, quota, 5 cluster RBAC, source-controller's Role and RoleBinding, 4 each of ServiceAccounts and Deployments, 3 Services, 3 NetworkPolicies)", len(objs))
	}
	// kustomize's legacy order: Namespace, then CRDs before any Deployment.
	lastCRD, firstDeploy := -1, len(objs)
	for i, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			lastCRD = i
		}
		if u.GetKind() == "Deployment" && i < firstDeploy {
			firstDeploy = i
		}
	}
	if objs[0].GetKind() != "Namespace" || lastCRD > firstDeploy {
		t.Errorf("order: first %s, last CRD at %d, first Deployment at %d", objs[0].GetKind(), lastCRD, firstDeploy)
	}
}

// TestDefaultImageDigests: the build-time digest list pins the default
// images; a malformed one is reported, not ignored.
func TestDefaultImageDigests(t *testing.T) {
	defer func(old string) { DefaultImageDigests = old }(DefaultImageDigests)
	DefaultImageDigests = "helm-controller=" + testDigest
	if o := DefaultOptions("v1"); o.ImageDigests["helm-controller"] != testDigest || o.Validate() != nil {
		t.Errorf("DefaultOptions digests %v, %v", o.ImageDigests, o.Validate())
	}
	// Another --version than the build's: its digest would pull the old image.
	for version, pinned := range map[string]bool{"v1": true, "v2": false} {
		o := DefaultOptions("v1")
		o.Version = version
		out, err := Render(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(out), "helm-controller:"+version+"@"+testDigest); got != pinned {
			t.Errorf("version %s: image pinned to the build's digest %v, want %v", version, got, pinned)
		}
	}
	DefaultImageDigests = "helm-controller=latest"
	if err := DefaultOptions("v1").Validate(); err == nil || !strings.Contains(err.Error(), "malformed image digest") {
		t.Errorf("a malformed DefaultImageDigests: %v", err)
	}
}

// TestApplicationControllerExtra: application-controller is not a default
// component; --components-extra=application-controller adds its
// Deployment, ServiceAccount, both Argo CD CRDs with its component label,
// the argocd namespace it watches, and it is bound to cluster-admin.
func TestApplicationControllerExtra(t *testing.T) {
	argoCRDs := []string{"applications.argoproj.io", "appprojects.argoproj.io"}
	for _, u := range objects(t, DefaultOptions("v1")) {
		if u.GetLabels()[ComponentLabel] == ApplicationController || u.GetName() == ApplicationNamespace ||
			slices.Contains(argoCRDs, u.GetName()) {
			t.Errorf("the default bundle has %s/%s", u.GetKind(), u.GetName())
		}
	}
	o := DefaultOptions("v1")
	o.ComponentsExtra = []string{ApplicationController}
	objs := objects(t, o)
	if len(objs) != 39 {
		t.Errorf("%d objects, want 39 (the default 34, 2 CRDs, a ServiceAccount, a Deployment and a Namespace)", len(objs))
	}
	for _, want := range []string{"Deployment/application-controller", "ServiceAccount/application-controller",
		"CustomResourceDefinition/applications.argoproj.io", "CustomResourceDefinition/appprojects.argoproj.io", "Namespace/argocd"} {
		kind, name, _ := strings.Cut(want, "/")
		u := find(objs, kind, name)
		if u == nil {
			t.Errorf("no %s", want)
			continue
		}
		if l := u.GetLabels(); l[ComponentLabel] != ApplicationController || l[PartOfLabel] != PartOfValue || l[InstanceLabel] != "flux-system" {
			t.Errorf("%s labels %v", want, l)
		}
	}
	if objs[0].GetName() != "flux-system" || objs[1].GetName() != ApplicationNamespace {
		t.Errorf("first objects %s/%s, %s/%s; want the two Namespaces", objs[0].GetKind(), objs[0].GetName(), objs[1].GetKind(), objs[1].GetName())
	}
	wantArgs := []string{"--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc.cluster.local./", "--watch-all-namespaces=true",
		"--log-level=info", "--log-encoding=json", "--enable-leader-election", "--namespace=argocd"}
	if got := managerArgs(t, objs, ApplicationController); !slices.Equal(got, wantArgs) {
		t.Errorf("application-controller args\n%q, want\n%q", got, wantArgs)
	}
	d := find(objs, "Deployment", ApplicationController)
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if img := cs[0].(map[string]any)["image"]; img != "ghcr.io/eddyops/application-controller:v1" {
		t.Errorf("image %v", img)
	}
	for _, binding := range []string{"crd-controller-flux-system", "cluster-reconciler-flux-system"} {
		crb := find(objs, "ClusterRoleBinding", binding)
		subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
		if !strings.Contains(fmt.Sprint(subjects), "map[kind:ServiceAccount name:application-controller namespace:flux-system]") {
			t.Errorf("%s subjects %v lack application-controller", binding, subjects)
		}
	}
	if h := Header(o); !strings.Contains(h, "# Components: source-controller,kustomize-controller,helm-controller,notification-controller,application-controller\n") {
		t.Errorf("header %q", h)
	}
}

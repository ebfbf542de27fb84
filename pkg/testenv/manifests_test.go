package testenv_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/localcluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestInstallManifests builds config/default with kustomize, checks what
// Flux's manifests promise (names, ports, resources, storage) and has the
// API server validate every object with a server-side dry-run apply.
func TestInstallManifests(t *testing.T) {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	ctx := context.Background()
	var objs []*unstructured.Unstructured
	for _, res := range resMap.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	found := map[string]bool{}
	for _, u := range objs {
		key := u.GetKind() + "/" + u.GetName()
		found[key] = true
		if l := u.GetLabels(); l["app.kubernetes.io/part-of"] != "flux" || l["app.kubernetes.io/instance"] != "flux-system" {
			t.Errorf("%s labels %v, want Flux's part-of=flux and instance=flux-system", key, l)
		}
		if u.GetKind() == "Namespace" {
			if err := env.Client.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner("manifests-test"), client.ForceOwnership); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			continue
		}
		if u.GetKind() != "CustomResourceDefinition" && u.GetKind() != "ClusterRole" && u.GetKind() != "ClusterRoleBinding" && u.GetNamespace() != "flux-system" {
			t.Errorf("%s is in namespace %q, want flux-system", key, u.GetNamespace())
		}
		if err := env.Client.Patch(ctx, u.DeepCopy(), client.Apply, client.DryRunAll, client.FieldOwner("manifests-test"), client.ForceOwnership); err != nil {
			t.Errorf("%s rejected by the API server: %v", key, err)
		}
	}
	for _, want := range []string{"Deployment/source-controller", "Service/source-controller", "ServiceAccount/source-controller",
		"ClusterRole/crd-controller", "ClusterRoleBinding/crd-controller", "ClusterRoleBinding/cluster-reconciler",
		"ClusterRole/flux-edit", "ClusterRole/flux-view", "ResourceQuota/critical-pods",
		"NetworkPolicy/allow-egress", "NetworkPolicy/allow-scraping", "NetworkPolicy/allow-webhooks",
		"CustomResourceDefinition/gitrepositories.source.toolkit.fluxcd.io", "CustomResourceDefinition/kustomizations.kustomize.toolkit.fluxcd.io",
		"Deployment/kustomize-controller", "ServiceAccount/kustomize-controller",
		"Deployment/notification-controller", "ServiceAccount/notification-controller",
		"CustomResourceDefinition/alerts.notification.toolkit.fluxcd.io", "CustomResourceDefinition/providers.notification.toolkit.fluxcd.io",
		"CustomResourceDefinition/receivers.notification.toolkit.fluxcd.io",
		"Deployment/helm-controller", "ServiceAccount/helm-controller",
		"CustomResourceDefinition/helmreleases.helm.toolkit.fluxcd.io",
		"CustomResourceDefinition/helmrepositories.source.toolkit.fluxcd.io", "CustomResourceDefinition/helmcharts.source.toolkit.fluxcd.io"} {
		if !found[want] {
			t.Errorf("config/default lacks %s", want)
		}
	}

	var dep, kdep appsv1.Deployment
	var svc corev1.Service
	var crb rbacv1.ClusterRoleBinding
	decodeNamed(t, objs, map[string]any{"Deployment/source-controller": &dep, "Deployment/kustomize-controller": &kdep,
		"Service/source-controller": &svc, "ClusterRoleBinding/crd-controller": &crb})
	if len(dep.Spec.Template.Spec.Containers) != 1 || dep.Spec.Template.Spec.Containers[0].Name != "manager" {
		t.Fatalf("source-controller Deployment containers %+v, want one named manager", dep.Spec.Template.Spec.Containers)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	for name, q := range map[string]struct {
		got  resource.Quantity
		want string
	}{
		"requests.cpu": {c.Resources.Requests[corev1.ResourceCPU], "50m"}, "requests.memory": {c.Resources.Requests[corev1.ResourceMemory], "64Mi"},
		"limits.cpu": {c.Resources.Limits[corev1.ResourceCPU], "1"}, "limits.memory": {c.Resources.Limits[corev1.ResourceMemory], "1Gi"},
	} {
		if q.got.Cmp(resource.MustParse(q.want)) != 0 {
			t.Errorf("manager %s = %s, want %s", name, q.got.String(), q.want)
		}
	}
	dataFromEmptyDir := false
	for _, vm := range c.VolumeMounts {
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if vm.Name == v.Name && vm.MountPath == "/data" && v.EmptyDir != nil {
				dataFromEmptyDir = true
			}
		}
	}
	if !dataFromEmptyDir {
		t.Error("the manager's /data is not an emptyDir volume")
	}
	httpPort := int32(0)
	for _, p := range c.Ports {
		if p.Name == "http" {
			httpPort = p.ContainerPort
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.String() != "http" || httpPort != 9090 {
		t.Errorf("Service ports %+v and container port http %d, want 80 → http (9090)", svc.Spec.Ports, httpPort)
	}
	if kc := kdep.Spec.Template.Spec.Containers; len(kc) != 1 || kc[0].Name != "manager" ||
		kc[0].Resources.Requests.Cpu().Cmp(resource.MustParse("100m")) != 0 || kc[0].Resources.Requests.Memory().Cmp(resource.MustParse("64Mi")) != 0 ||
		kc[0].Resources.Limits.Cpu().Cmp(resource.MustParse("1")) != 0 || kc[0].Resources.Limits.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("kustomize-controller container %+v, want manager with requests 100m/64Mi and limits 1000m/1Gi", kc)
	}
	checkNotificationController(t, objs)
	checkHelmController(t, objs)
	if len(crb.Subjects) != 5 || crb.Subjects[0].Namespace != "flux-system" || crb.Subjects[4].Name != "application-controller" {
		t.Errorf("ClusterRoleBinding crd-controller subjects %+v, want the five flux-system ServiceAccounts", crb.Subjects)
	}
	// application-controller is not one of Flux's defaults: neither it nor
	// its Argo CD CRDs are in the bundle.
	for key := range found {
		if strings.HasSuffix(key, "/application-controller") || strings.HasSuffix(key, ".argoproj.io") {
			t.Errorf("config/default has %s", key)
		}
	}
}

// TestApplicationControllerManifests builds config/application-controller
// with kustomize: a ServiceAccount and a Deployment of the others' shape
// (probes on healthz, metrics on 8080, requests 100m/64Mi, limits
// 1000m/1Gi, the restricted security context, /tmp an emptyDir), Flux's
// runtime flags with --events-addr first and Argo CD's namespace argocd;
// the API server accepts both.
func TestApplicationControllerManifests(t *testing.T) {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "application-controller"))
	if err != nil {
		t.Fatalf("kustomize build config/application-controller: %v", err)
	}
	var objs []*unstructured.Unstructured
	var names []string
	for _, res := range resMap.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace("default")
		if l := u.GetLabels(); l["app.kubernetes.io/component"] != "application-controller" || l["app.kubernetes.io/part-of"] != "flux" {
			t.Errorf("%s/%s labels %v", u.GetKind(), u.GetName(), l)
		}
		if err := env.Client.Patch(context.Background(), u.DeepCopy(), client.Apply, client.DryRunAll, client.FieldOwner("manifests-test"), client.ForceOwnership); err != nil {
			t.Errorf("%s/%s rejected by the API server: %v", u.GetKind(), u.GetName(), err)
		}
		objs = append(objs, u)
		names = append(names, u.GetKind()+"/"+u.GetName())
	}
	if strings.Join(names, " ") != "ServiceAccount/application-controller Deployment/application-controller" {
		t.Fatalf("objects %v, want its ServiceAccount and Deployment", names)
	}
	var dep appsv1.Deployment
	decodeNamed(t, objs, map[string]any{"Deployment/application-controller": &dep})
	spec := dep.Spec.Template.Spec
	c := spec.Containers
	if spec.ServiceAccountName != "application-controller" || len(c) != 1 || c[0].Name != "manager" || c[0].Image != "eddy/application-controller:latest" {
		t.Fatalf("application-controller pod %+v", spec)
	}
	wantArgs := []string{"--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc.cluster.local./",
		"--watch-all-namespaces", "--log-level=info", "--log-encoding=json", "--enable-leader-election", "--namespace=argocd"}
	if strings.Join(c[0].Args, " ") != strings.Join(wantArgs, " ") {
		t.Errorf("application-controller args %q, want %q", c[0].Args, wantArgs)
	}
	ports := map[string]int32{}
	for _, p := range c[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http-prom"] != 8080 || ports["healthz"] != 9440 || len(ports) != 2 {
		t.Errorf("application-controller ports %v, want http-prom 8080 and healthz 9440", ports)
	}
	if p := c[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "healthz" {
		t.Errorf("application-controller readinessProbe %+v", p)
	}
	if c[0].Resources.Requests.Cpu().Cmp(resource.MustParse("100m")) != 0 || c[0].Resources.Requests.Memory().Cmp(resource.MustParse("64Mi")) != 0 ||
		c[0].Resources.Limits.Cpu().Cmp(resource.MustParse("1")) != 0 || c[0].Resources.Limits.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("application-controller resources %+v, want requests 100m/64Mi and limits 1000m/1Gi", c[0].Resources)
	}
	if sc := c[0].SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("application-controller securityContext %+v", sc)
	}
	if len(c[0].VolumeMounts) != 1 || c[0].VolumeMounts[0].MountPath != "/tmp" || len(spec.Volumes) != 1 || spec.Volumes[0].EmptyDir == nil {
		t.Errorf("application-controller volumes %+v mounted %+v, want /tmp an emptyDir", spec.Volumes, c[0].VolumeMounts)
	}
}

// decodeNamed decodes each object of objs named in into (by "Kind/name")
// into its typed value.
func decodeNamed(t *testing.T, objs []*unstructured.Unstructured, into map[string]any) {
	t.Helper()
	for _, u := range objs {
		if v, ok := into[u.GetKind()+"/"+u.GetName()]; ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkNotificationController checks Flux's notification-controller shape:
// requests 100m/64Mi, limits 1000m/1Gi, ports http 9090 and http-webhook
// 9292, Services notification-controller (80 → 9090) and webhook-receiver
// (80 → 9292).
func checkNotificationController(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var dep appsv1.Deployment
	svcs := map[string]*corev1.Service{}
	for _, u := range objs {
		switch {
		case u.GetKind() == "Deployment" && u.GetName() == "notification-controller":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dep); err != nil {
				t.Fatal(err)
			}
		case u.GetKind() == "Service":
			svc := &corev1.Service{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
				t.Fatal(err)
			}
			svcs[u.GetName()] = svc
		}
	}
	c := dep.Spec.Template.Spec.Containers
	if len(c) != 1 || c[0].Name != "manager" ||
		c[0].Resources.Requests.Cpu().Cmp(resource.MustParse("100m")) != 0 || c[0].Resources.Requests.Memory().Cmp(resource.MustParse("64Mi")) != 0 ||
		c[0].Resources.Limits.Cpu().Cmp(resource.MustParse("1")) != 0 || c[0].Resources.Limits.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Fatalf("notification-controller container %+v, want manager with requests 100m/64Mi and limits 1000m/1Gi", c)
	}
	ports := map[string]int32{}
	for _, p := range c[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	for svc, want := range map[string]struct {
		port string
		num  int32
	}{"notification-controller": {"http", 9090}, "webhook-receiver": {"http-webhook", 9292}} {
		s := svcs[svc]
		if s == nil || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 80 || s.Spec.Ports[0].TargetPort.String() != want.port ||
			ports[want.port] != want.num || s.Spec.Selector["app"] != "notification-controller" {
			t.Errorf("Service %s %+v with container ports %v, want 80 → %s (%d)", svc, s, ports, want.port, want.num)
		}
	}
}

// checkHelmController checks Flux's helm-controller shape: requests
// 100m/64Mi, limits 1000m/1Gi, grace period 600s, the shared args with
// --events-addr first (flux install patches args by index), probes on port
// healthz, bound to cluster-admin (Flux's cluster-reconciler); and that
// Flux's crd-controller ClusterRole grants every verb on the toolkit groups.
func checkHelmController(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var dep appsv1.Deployment
	var crb rbacv1.ClusterRoleBinding
	var scRole rbacv1.ClusterRole
	decodeNamed(t, objs, map[string]any{"Deployment/helm-controller": &dep, "ClusterRoleBinding/cluster-reconciler": &crb,
		"ClusterRole/crd-controller": &scRole})
	spec := dep.Spec.Template.Spec
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g != 600 {
		t.Errorf("helm-controller terminationGracePeriodSeconds %v, want 600", g)
	}
	if spec.ServiceAccountName != "helm-controller" || dep.Spec.Template.Labels["app"] != "helm-controller" {
		t.Errorf("helm-controller serviceAccountName %q, pod label app %q; want helm-controller", spec.ServiceAccountName, dep.Spec.Template.Labels["app"])
	}
	c := spec.Containers
	if len(c) != 1 || c[0].Name != "manager" ||
		c[0].Resources.Requests.Cpu().Cmp(resource.MustParse("100m")) != 0 || c[0].Resources.Requests.Memory().Cmp(resource.MustParse("64Mi")) != 0 ||
		c[0].Resources.Limits.Cpu().Cmp(resource.MustParse("1")) != 0 || c[0].Resources.Limits.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Fatalf("helm-controller container %+v, want manager with requests 100m/64Mi and limits 1000m/1Gi", c)
	}
	wantArgs := []string{"--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc.cluster.local./",
		"--watch-all-namespaces", "--log-level=info", "--log-encoding=json", "--enable-leader-election"}
	if strings.Join(c[0].Args, " ") != strings.Join(wantArgs, " ") {
		t.Errorf("helm-controller args %q, want %q", c[0].Args, wantArgs)
	}
	if p := c[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "healthz" {
		t.Errorf("helm-controller readinessProbe %+v, want GET /readyz on healthz", p)
	}
	if p := c[0].LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "healthz" {
		t.Errorf("helm-controller livenessProbe %+v, want GET /healthz on healthz", p)
	}
	if crb.RoleRef.Name != "cluster-admin" || len(crb.Subjects) != 3 || crb.Subjects[1].Name != "helm-controller" || crb.Subjects[1].Namespace != "flux-system" ||
		crb.Subjects[2].Name != "application-controller" {
		t.Errorf("ClusterRoleBinding cluster-reconciler %+v, want cluster-admin for flux-system/kustomize-controller, helm-controller and application-controller", crb)
	}
	granted := map[string]bool{}
	for _, r := range scRole.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted[g+" "+res+" "+v] = true
				}
			}
		}
	}
	for _, group := range []string{"source.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io", "notification.toolkit.fluxcd.io", "argoproj.io"} {
		if !granted[group+" * *"] {
			t.Errorf("ClusterRole crd-controller does not grant every verb on %s", group)
		}
	}
}

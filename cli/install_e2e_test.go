package main

import (
	"context"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestInstallE2E drives the built bin/eddy's install and uninstall against
// one local cluster of the full profile (kwok's fake nodes run the
// controllers' pods, so their Deployments become Available): an
// unreachable cluster, --export, install, a second install that changes
// nothing, install at a pseudo-terminal, uninstall's confirmation and
// --dry-run, and an uninstall that leaves a Kustomization's workload in
// place and nothing of Eddy behind.
func TestInstallE2E(t *testing.T) {
	u := newUser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err := localcluster.Start(ctx, localcluster.Options{Profile: localcluster.ProfileFull})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	t.Logf("local cluster started in %s", cluster.StartupDuration.Round(time.Millisecond))
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	kc := "--kubeconfig=" + cluster.KubeconfigPath
	bundle, err := install.Objects(install.DefaultOptions(builtVersion(t)))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Unreachable", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"install"}, {"uninstall", "--silent"}} {
			cmd := args[0]
			out := u.fails(append([]string{"--kubeconfig=" + path}, args...)...)
			var failures []string
			for _, l := range lines(out) {
				if strings.HasPrefix(l, "✗") {
					failures = append(failures, l)
				}
			}
			if len(failures) != 1 || !strings.HasPrefix(failures[0], "✗ cannot reach the cluster at https://127.0.0.1:1: ") || strings.Contains(out, "panic") {
				t.Errorf("eddy %s against an unreachable cluster printed %q; want one line saying it cannot reach the cluster", cmd, out)
			}
		}
	})

	t.Run("Export", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		cmd := u.command("install", "--export", "--namespace=gitops", "--network-policy=false")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		o := install.DefaultOptions(builtVersion(t))
		o.Namespace, o.NetworkPolicy = "gitops", false
		want, err := install.Render(o)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != string(want) {
			t.Errorf("eddy install --export differs from install.Render; got %d bytes, want %d", len(out), len(want))
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "gitops"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("install --export touched the cluster: namespace gitops: %v", err)
		}
		// --registry: every controller image from that registry (docs/images.md's line,
		// whose apply is the plain install below).
		o.Registry = "ghcr.io/acme"
		if want, err = install.Render(o); err != nil {
			t.Fatal(err)
		}
		acme := u.must("install", "--export", "--namespace=gitops", "--network-policy=false", "--registry", "ghcr.io/acme")
		if acme != string(want) || !strings.Contains(acme, "image: ghcr.io/acme/source-controller:") || strings.Contains(acme, install.DefaultRegistry+"/") {
			t.Errorf("eddy install --export --registry ghcr.io/acme differs from install.Render or keeps %s images; got %d bytes, want %d", install.DefaultRegistry, len(acme), len(want))
		}
		o.Registry = install.DefaultRegistry
		// application-controller only when asked for, with its CRDs and RBAC.
		o.Namespace, o.NetworkPolicy, o.ComponentsExtra = "flux-system", true, []string{install.ApplicationController}
		if want, err = install.Render(o); err != nil {
			t.Fatal(err)
		}
		extra := u.must("install", "--export", "--components-extra=application-controller")
		if extra != string(want) {
			t.Errorf("eddy install --export --components-extra=application-controller differs from install.Render; got %d bytes, want %d", len(extra), len(want))
		}
		names := func(objs []*unstructured.Unstructured) string {
			var out []string
			for _, u := range objs {
				out = append(out, u.GetKind()+"/"+u.GetName())
			}
			return strings.Join(out, " ") + " "
		}
		extraNames, defaultNames := names(builtObjects(t, extra)), names(builtObjects(t, string(out)))
		for _, want := range []string{"Namespace/argocd", "CustomResourceDefinition/applications.argoproj.io", "CustomResourceDefinition/appprojects.argoproj.io",
			"ServiceAccount/application-controller", "Deployment/application-controller"} {
			if !strings.Contains(extraNames, want+" ") || strings.Contains(defaultNames, want+" ") {
				t.Errorf("%s: in the export with application-controller %v, in the default export %v", want,
					strings.Contains(extraNames, want+" "), strings.Contains(defaultNames, want+" "))
			}
		}
	})

	t.Run("Install", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		out := u.must(kc, "install")
		for _, want := range []string{"► installing components in flux-system namespace", "CustomResourceDefinition/kustomizations.kustomize.toolkit.fluxcd.io created",
			"✔ source-controller: deployment ready", "✔ notification-controller: deployment ready", "✔ install finished"} {
			if !strings.Contains(out, want) {
				t.Errorf("eddy install does not print %q", want)
			}
		}
		var crds apiextensionsv1.CustomResourceDefinitionList
		// Flux's default components' 11 kinds (Bucket and ExternalArtifact among them).
		if err := c.List(ctx, &crds, client.MatchingLabels{install.PartOfLabel: "flux"}); err != nil || len(crds.Items) != 11 {
			t.Fatalf("%d CRDs labelled part-of=flux, %v; want 11", len(crds.Items), err)
		}
		for _, crd := range crds.Items {
			established := false
			for _, cond := range crd.Status.Conditions {
				established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
			}
			if !established || crd.Labels[install.ComponentLabel] == "" || crd.Labels[install.InstanceLabel] != "flux-system" {
				t.Errorf("CRD %s: Established %v, labels %v", crd.Name, established, crd.Labels)
			}
		}
		for _, name := range install.DefaultComponents {
			var d appsv1.Deployment
			if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: name}, &d); err != nil {
				t.Fatal(err)
			}
			available := false
			for _, cond := range d.Status.Conditions {
				available = available || cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue
			}
			if !available || d.Labels[install.PartOfLabel] != "flux" {
				t.Errorf("Deployment %s: Available %v, labels %v", name, available, d.Labels)
			}
			if f := managers(&d); !strings.Contains(f, install.FieldManager+"/Apply") {
				t.Errorf("Deployment %s field managers %s, want %s applying", name, f, install.FieldManager)
			}
		}
	})

	t.Run("RBAC", func(t *testing.T) {
		// What each controller's ServiceAccount needs, granted by Flux's
		// crd-controller and cluster-reconciler roles.
		for _, tc := range []struct {
			sa string
			ra authorizationv1.ResourceAttributes
		}{
			{"source-controller", authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "apps"}},
			{"source-controller", authorizationv1.ResourceAttributes{Verb: "patch", Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories", Subresource: "status", Namespace: "apps"}},
			{"source-controller", authorizationv1.ResourceAttributes{Verb: "update", Group: "source.toolkit.fluxcd.io", Resource: "helmcharts", Subresource: "finalizers", Namespace: "apps"}},
			{"source-controller", authorizationv1.ResourceAttributes{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: "flux-system"}},
			{"source-controller", authorizationv1.ResourceAttributes{Verb: "create", Resource: "events", Namespace: "apps"}},
			{"kustomize-controller", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "apps"}},
			{"helm-controller", authorizationv1.ResourceAttributes{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}},
			{"notification-controller", authorizationv1.ResourceAttributes{Verb: "patch", Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations", Namespace: "apps"}},
			{"notification-controller", authorizationv1.ResourceAttributes{Verb: "watch", Resource: "secrets", Namespace: "apps"}},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:serviceaccount:flux-system:" + tc.sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:flux-system"},
				ResourceAttributes: &tc.ra}}
			if err := c.Create(ctx, sar); err != nil {
				t.Fatal(err)
			}
			if !sar.Status.Allowed {
				t.Errorf("%s may not %s %s.%s/%s in %q", tc.sa, tc.ra.Verb, tc.ra.Resource, tc.ra.Group, tc.ra.Subresource, tc.ra.Namespace)
			}
		}
		// And no more: source-controller may not write Deployments.
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:flux-system:source-controller", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "apps"}}}
		if err := c.Create(ctx, sar); err != nil || sar.Status.Allowed {
			t.Errorf("source-controller may create Deployments (%v)", err)
		}
	})

	t.Run("Again", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		before := resourceVersions(ctx, t, c, bundle)
		out := u.must(kc, "install")
		if !strings.Contains(out, "✔ installed objects unchanged") || !strings.Contains(out, "✔ install finished") {
			t.Errorf("a second eddy install does not say the objects are unchanged")
		}
		after := resourceVersions(ctx, t, c, bundle)
		for id, rv := range before {
			if after[id] != rv {
				t.Errorf("a second eddy install changed %s (resourceVersion %s → %s)", id, rv, after[id])
			}
		}
	})

	// What the issue asks after an install: eddy check and the real flux
	// check pass, the Deployments Available on the kwok nodes.
	t.Run("Check", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		out := u.must(kc, "check")
		for _, want := range []string{"✔ source-controller: deployment ready", "✔ notification-controller: deployment ready", "✔ all checks passed"} {
			if !strings.Contains(out, want) {
				t.Errorf("eddy check after install does not say %q", want)
			}
		}
		newFluxCLI(t, cluster.KubeconfigPath).must([]string{"check"},
			`^✔ distribution: flux-\S+$`,
			`^✔ bootstrapped: false$`,
			`^✔ kustomize-controller: deployment ready$`,
			`^✔ helmreleases\.helm\.toolkit\.fluxcd\.io/v2$`,
			`^✔ all checks passed$`,
		)
	})

	t.Run("Terminal", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		r := u.startTTY(80, false, kc, "install")
		screen := strings.Join(r.checkTerminal(2*time.Minute, false), "\n")
		if !strings.Contains(string(r.output()), "⠋") {
			t.Error("eddy install at a terminal drew no spinner")
		}
		for _, want := range []string{"✔ installed objects unchanged", "✔ kustomize-controller: deployment ready", "✔ install finished"} {
			if !strings.Contains(screen, want) {
				t.Errorf("eddy install at a terminal does not show %q", want)
			}
		}
	})

	// --shards: the bundle applies, every shard Deployment becomes
	// Available with its selector, the main ones skip labelled objects,
	// source-controller's shard Services select their pods. The uninstall
	// below then has to remove the shards too.
	t.Run("Shards", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		o := install.DefaultOptions(builtVersion(t))
		o.Shards = []string{"a", "b"}
		sharded, err := install.Objects(o)
		if err != nil {
			t.Fatal(err)
		}
		out := u.must(kc, "install", "--shards=a,b")
		for _, want := range []string{"Deployment/flux-system/kustomize-controller-a created", "Service/flux-system/source-controller-b created",
			"✔ helm-controller-b: deployment ready", "✔ install finished"} {
			if !strings.Contains(out, want) {
				t.Errorf("eddy install --shards=a,b does not print %q", want)
			}
		}
		bundle = sharded
		for _, comp := range install.ShardedComponents {
			for _, shard := range []string{"", "a", "b"} {
				name, want := comp, "--watch-label-selector=!sharding.fluxcd.io/key"
				if shard != "" {
					name, want = comp+"-"+shard, "--watch-label-selector=sharding.fluxcd.io/key in ("+shard+")"
				}
				var d appsv1.Deployment
				if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: name}, &d); err != nil {
					t.Fatal(err)
				}
				args := d.Spec.Template.Spec.Containers[0].Args
				available := false
				for _, cond := range d.Status.Conditions {
					available = available || cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue
				}
				if !available || args[len(args)-1] != want || d.Spec.Template.Labels["app"] != name {
					t.Errorf("Deployment %s: Available %v, last arg %q (want %q), pod labels %v", name, available, args[len(args)-1], want, d.Spec.Template.Labels)
				}
				if comp == "source-controller" && shard != "" && !strings.Contains(strings.Join(args, " "), "--storage-adv-addr=source-controller-"+shard+".$(RUNTIME_NAMESPACE).svc.cluster.local.") {
					t.Errorf("Deployment %s args %q: no storage address of its Service", name, args)
				}
			}
		}
		for _, shard := range []string{"a", "b"} {
			var pods corev1.PodList
			var svc corev1.Service
			if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "source-controller-" + shard}, &svc); err != nil {
				t.Fatal(err)
			}
			if err := c.List(ctx, &pods, client.InNamespace("flux-system"), client.MatchingLabels(svc.Spec.Selector)); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if p.Labels["app"] != "source-controller-"+shard {
					t.Errorf("Service source-controller-%s selects pod %s (labels %v)", shard, p.Name, p.Labels)
				}
			}
			if len(pods.Items) == 0 {
				t.Errorf("Service source-controller-%s selects no pod", shard)
			}
		}
	})

	// --components-extra=application-controller adds its Deployment, its
	// Argo CD CRDs and the argocd namespace to the sharded install; the
	// uninstall below has to remove them too.
	t.Run("ApplicationController", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		o := install.DefaultOptions(builtVersion(t))
		o.Shards, o.ComponentsExtra = []string{"a", "b"}, []string{install.ApplicationController}
		withApps, err := install.Objects(o)
		if err != nil {
			t.Fatal(err)
		}
		out := u.must(kc, "install", "--shards=a,b", "--components-extra=application-controller")
		for _, want := range []string{"Namespace/argocd created", "CustomResourceDefinition/applications.argoproj.io created",
			"CustomResourceDefinition/appprojects.argoproj.io created", "Deployment/flux-system/application-controller created",
			"✔ application-controller: deployment ready", "✔ install finished"} {
			if !strings.Contains(out, want) {
				t.Errorf("eddy install --components-extra=application-controller does not print %q", want)
			}
		}
		bundle = withApps
		for _, ra := range []authorizationv1.ResourceAttributes{
			{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "apps"},
			{Verb: "patch", Group: "argoproj.io", Resource: "applications", Namespace: "argocd"},
			{Verb: "create", Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories", Namespace: "argocd"},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:serviceaccount:flux-system:application-controller", ResourceAttributes: &ra}}
			if err := c.Create(ctx, sar); err != nil {
				t.Fatal(err)
			}
			if !sar.Status.Allowed {
				t.Errorf("application-controller may not %s %s.%s in %q", ra.Verb, ra.Resource, ra.Group, ra.Namespace)
			}
		}
	})

	t.Run("Uninstall", func(t *testing.T) {
		u := &user{t: t, eddy: u.eddy, state: u.state}
		// A workload a Kustomization applied, and the Kustomization with its
		// finalizer, as kustomize-controller leaves them.
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
			t.Fatal(err)
		}
		workload := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "workload", Namespace: "apps",
			Labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}}
		repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "flux-system", Namespace: "flux-system", Finalizers: []string{sourcev1.SourceFinalizer}},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/repo.git", Interval: metav1.Duration{Duration: time.Minute}}}
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system", Finalizers: []string{kustomizev1.KustomizationFinalizer}},
			Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Minute}, Prune: true,
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "flux-system"}}}
		// An Application with Argo CD's resources finalizer, as
		// application-controller leaves it: uninstall releases it, as it
		// does the Kustomization, so its CRD's deletion does not hang.
		app := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "guestbook", "namespace": install.ApplicationNamespace,
				"finalizers": []any{"resources-finalizer.argocd.argoproj.io"}},
			"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://example.com/repo.git", "path": "guestbook"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "apps"}}}}
		for _, obj := range []client.Object{workload, repo, ks, app} {
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}

		// No answer, or "n": nothing is deleted.
		cmd := u.command(kc, "uninstall")
		cmd.Stdin = strings.NewReader("n\n")
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Are you sure you want to delete Eddy") || !strings.Contains(string(out), "✗ aborting") {
			t.Errorf("eddy uninstall answered n: %v\n%s", err, out)
		}
		out := u.must(kc, "uninstall", "--dry-run")
		for _, want := range []string{"✔ Deployment/flux-system/source-controller deleted (dry run)", "✔ ClusterRole/crd-controller-flux-system deleted (dry run)",
			"✔ Kustomization/flux-system/apps finalizers deleted (dry run)", "✔ CustomResourceDefinition/kustomizations.kustomize.toolkit.fluxcd.io deleted (dry run)",
			"✔ Application/argocd/guestbook finalizers deleted (dry run)", "✔ Deployment/flux-system/application-controller deleted (dry run)",
			"✔ Namespace/flux-system deleted (dry run)", "✔ Namespace/argocd deleted (dry run)", "✔ uninstall finished"} {
			if !strings.Contains(out, want) {
				t.Errorf("eddy uninstall --dry-run does not print %q", want)
			}
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil || len(ks.Finalizers) != 1 {
			t.Fatalf("after a refused and a dry-run uninstall: Kustomization %v, finalizers %v", err, ks.Finalizers)
		}
		if after := resourceVersions(ctx, t, c, bundle); len(after) != len(bundle) {
			t.Fatalf("a refused or dry-run uninstall deleted objects: %d of %d left", len(after), len(bundle))
		}

		cmd = u.command(kc, "uninstall")
		cmd.Stdin = strings.NewReader("y\n")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "✔ uninstall finished") {
			t.Fatalf("eddy uninstall answered y: %v\n%s", err, out)
		}
		testenv.WaitGone(t, c, ks, "Kustomization deleted with its CRD, its finalizer removed")
		testenv.WaitGone(t, c, app, "Application deleted with its CRD, its finalizer removed")
		testenv.WaitGone(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}, "namespace deleted")
		testenv.WaitGone(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install.ApplicationNamespace}}, "namespace deleted")
		for _, obj := range bundle {
			if obj.GetKind() == "Namespace" {
				continue
			}
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(obj.GroupVersionKind())
			live.SetNamespace(obj.GetNamespace())
			live.SetName(obj.GetName())
			testenv.WaitGone(t, c, live, obj.GetKind()+" deleted")
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(workload), workload); err != nil {
			t.Errorf("the Kustomization's workload did not survive the uninstall: %v", err)
		}
		var crds apiextensionsv1.CustomResourceDefinitionList
		if err := c.List(ctx, &crds); err != nil {
			t.Fatal(err)
		}
		for _, crd := range crds.Items {
			if strings.HasSuffix(crd.Spec.Group, ".toolkit.fluxcd.io") || crd.Spec.Group == "argoproj.io" {
				t.Errorf("CRD %s left after uninstall", crd.Name)
			}
		}
	})
}

// resourceVersions maps each object of objs found in the cluster to its
// resourceVersion.
func resourceVersions(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, obj := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), live)
		switch {
		case err == nil:
			out[obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName()] = live.GetResourceVersion()
		case !apierrors.IsNotFound(err):
			t.Fatal(err)
		}
	}
	return out
}

// managers lists obj's field managers and operations, "manager/Operation ...".
func managers(obj client.Object) string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	return strings.Join(out, " ")
}

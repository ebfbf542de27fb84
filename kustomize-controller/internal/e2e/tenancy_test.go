package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The tenant of the recipe's tenants/base/dev-team, and the account its
// objects act as when they name none (the recipe's
// --default-service-account=default).
const (
	tenantNS      = "apps"
	tenantDefault = "system:serviceaccount:apps:default"
	tenancyShard  = "eddy.test/shard"
)

// startLockedDown runs the built kustomize- and helm-controller with the
// recipe's flags, on a shard of their own, until the test ends. They run
// as the cluster admin, a privileged identity that may impersonate.
func startLockedDown(t *testing.T) {
	t.Helper()
	flags := recipeFlags(t)
	extra := []string{"--watch-label-selector=" + tenancyShard + "=tenancy", "--min-retry-delay=200ms", "--max-retry-delay=2s"}
	startKustomizeController(t, append(flags["kustomize-controller"], extra...)...)
	testenv.RunBinary(t, env, builtController(t, "helm-controller"), append(flags["helm-controller"], extra...)...)
}

// applyTenant creates the recipe's tenant dev-team (tenants/base/dev-team:
// its Namespace, ServiceAccount and RoleBinding, then its GitRepository and
// Kustomization) with only the GitRepository's address and branch changed to
// url and main, and the Kustomization on the test's shard.
func applyTenant(t *testing.T, url string) {
	t.Helper()
	dir := filepath.Join(recipeDir(t), "tenants", "base", "dev-team")
	for _, file := range []string{"rbac.yaml", "sync.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := testenv.YAMLDocuments(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			switch u.GetKind() {
			case sourcev1.GitRepositoryKind:
				_ = unstructured.SetNestedField(u.Object, url, "spec", "url")
				_ = unstructured.SetNestedField(u.Object, "main", "spec", "ref", "branch")
			case kustomizev1.KustomizationKind:
				u.SetLabels(map[string]string{tenancyShard: "tenancy"})
			}
			if err := env.Client.Create(context.Background(), u); err != nil {
				t.Fatalf("%s %s: %v", file, u.GetName(), err)
			}
		}
	}
	// A cluster's ServiceAccount controller gives each namespace its
	// default account; the api profile runs none. The controllers skip
	// pruning on deletion when the account they act as is missing.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: tenantNS}}
	if err := env.Client.Create(context.Background(), sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// tenantChart is a chart whose release holds a ConfigMap in its own
// namespace and, with escape set, another one there, one in the namespace
// .Values.other and a ClusterRole.
var tenantChart = map[string]string{
	"charts/tenant/Chart.yaml": "apiVersion: v2\nname: tenant\nversion: 0.1.0\n",
	"charts/tenant/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: "{{ .Release.Name }}-own"}
data: {a: b}
{{- if .Values.escape }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: "{{ .Release.Name }}-extra"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: "{{ .Release.Name }}-away", namespace: "{{ .Values.other }}"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "{{ .Release.Name }}-{{ .Release.Namespace }}"}
rules: []
{{- end }}
`,
}

func cm(name, ns string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata: {a: b}\n---\n"
}

// TestMultiTenancyLockdown runs the recipe's lockdown with the built
// kustomize- and helm-controller, the flags read from the recipe file and
// the recipe's tenant: the recipe's own Kustomization applies as dev-team;
// a Kustomization and a HelmRelease naming no account act as the tenant's
// default ServiceAccount; their writes to another namespace and of
// cluster-scoped objects are refused naming that account, with nothing of
// the set written; a source in another namespace stalls AccessDenied; and
// deleting them removes only their own objects. It runs once per cluster:
// the recipe's namespace has a fixed name.
func TestMultiTenancyLockdown(t *testing.T) {
	ctx := context.Background()
	startLockedDown(t)
	other := testenv.NewNamespace(t, env.Client, "other-")
	files := map[string]string{
		"own/cms.yaml":               cm("own-a", tenantNS),
		"away/cms.yaml":              cm("away-a", tenantNS) + cm("away-b", other),
		"cluster/objects.yaml":       cm("cluster-a", tenantNS) + "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: tenant-escape}\nrules: []\n",
		"devteam/cms.yaml":           cm("dev-team-app", tenantNS),
		"devteam/kustomization.yaml": "resources: [cms.yaml]\n",
	}
	for k, v := range tenantChart {
		files[k] = v
	}
	repo := gitSrv.NewRepo(t, files)

	// The recipe's tenant, its Kustomization (serviceAccountName: dev-team,
	// bound to cluster-admin in apps) applying the repository's root: here
	// the devteam directory, through a root kustomization.yaml.
	repo.MustCommit(t, map[string]string{"kustomization.yaml": "resources: [devteam]\n"}, "tenant root")
	applyTenant(t, repo.URL())
	devTeam := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "dev-team", Namespace: tenantNS}}
	waitFor(t, devTeam, "the recipe's Kustomization Ready", func() bool { return ready(devTeam) })
	exists(t, "ConfigMap", tenantNS, "dev-team-app", true)

	src := tenantSource(t, repo.URL())
	own := tenantKustomization(t, "own", "./own", src, "")
	web := tenantRelease(t, "web", src, "", map[string]any{"other": other})

	t.Run("without serviceAccountName they act as the tenant's default account", func(t *testing.T) {
		// The recipe grants the default account nothing: refused, naming it.
		waitMessage(t, own, func() []metav1.Condition { return own.Status.Conditions }, tenantDefault)
		waitMessage(t, web, func() []metav1.Condition { return web.Status.Conditions }, tenantDefault)
		exists(t, "ConfigMap", tenantNS, "own-a", false)
		exists(t, "ConfigMap", tenantNS, "web-own", false)
		// The tenant's admin lets it edit its namespace.
		grantEdit(t)
		testenv.RequestReconcile(t, env.Client, own, func() string { return own.Status.LastHandledReconcileAt })
		waitFor(t, own, "Ready", func() bool { return ready(own) })
		setValues(t, web, map[string]any{"other": other, "round": 2})
		waitFor(t, web, "Ready", func() bool { return releaseReady(web) })
		exists(t, "ConfigMap", tenantNS, "own-a", true)
		exists(t, "ConfigMap", tenantNS, "web-own", true)
	})

	t.Run("writes to another namespace or of cluster objects are refused and nothing is written", func(t *testing.T) {
		away := tenantKustomization(t, "away", "./away", src, "")
		cluster := tenantKustomization(t, "cluster", "./cluster", src, "")
		waitMessage(t, away, func() []metav1.Condition { return away.Status.Conditions }, tenantDefault, "ConfigMap/"+other+"/away-b")
		waitMessage(t, cluster, func() []metav1.Condition { return cluster.Status.Conditions }, tenantDefault, "ClusterRole/tenant-escape")
		setValues(t, web, map[string]any{"other": other, "escape": true})
		waitMessage(t, web, func() []metav1.Condition { return web.Status.Conditions }, tenantDefault)
		// A release installed into another namespace (named
		// <namespace>-<name>, as Flux names it) acts there as the tenant's
		// account too.
		elsewhere := tenantRelease(t, "elsewhere", src, "", nil, func(hr *helmv2.HelmRelease) { hr.Spec.TargetNamespace = other })
		waitMessage(t, elsewhere, func() []metav1.Condition { return elsewhere.Status.Conditions }, tenantDefault)
		for _, o := range [][3]string{{"ConfigMap", tenantNS, "away-a"}, {"ConfigMap", other, "away-b"}, {"ConfigMap", tenantNS, "cluster-a"},
			{"ClusterRole", "", "tenant-escape"}, {"ConfigMap", tenantNS, "web-extra"}, {"ConfigMap", other, "web-away"}, {"ClusterRole", "", "web-apps"},
			{"ConfigMap", other, other + "-elsewhere-own"}} {
			exists(t, o[0], o[1], o[2], false)
		}
	})

	t.Run("a source in another namespace stalls AccessDenied", func(t *testing.T) {
		shared := tenantSourceIn(t, other, repo.URL())
		k := tenantKustomization(t, "cross", "./own", shared, other)
		hr := tenantRelease(t, "cross", shared, other, nil)
		ref := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Name: "cross-ref", Namespace: tenantNS, Labels: map[string]string{tenancyShard: "tenancy"}},
			Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
				ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "charts", Namespace: other}},
		}
		if err := env.Client.Create(ctx, ref); err != nil {
			t.Fatal(err)
		}
		waitStalled(t, k, func() []metav1.Condition { return k.Status.Conditions })
		waitStalled(t, hr, func() []metav1.Condition { return hr.Status.Conditions })
		waitStalled(t, ref, func() []metav1.Condition { return ref.Status.Conditions })
	})

	t.Run("deleting prunes only the tenant's own objects", func(t *testing.T) {
		// An object elsewhere carrying the Kustomization's owner labels.
		decoy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "own-a", Namespace: other, Labels: map[string]string{
			"kustomize.toolkit.fluxcd.io/name": "own", "kustomize.toolkit.fluxcd.io/namespace": tenantNS}}}
		if err := env.Client.Create(ctx, decoy); err != nil {
			t.Fatal(err)
		}
		for _, o := range []client.Object{own, web} {
			if err := env.Client.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
			testenv.WaitGone(t, env.Client, o, "deleted")
		}
		exists(t, "ConfigMap", tenantNS, "own-a", false)
		exists(t, "ConfigMap", tenantNS, "web-own", false)
		exists(t, "ConfigMap", other, "own-a", true)
		exists(t, "ConfigMap", tenantNS, "dev-team-app", true)
	})
}

func tenantSource(t *testing.T, url string) *sourcev1.GitRepository {
	return tenantSourceIn(t, tenantNS, url)
}

// tenantSourceIn creates the GitRepository "tenant" of url in ns.
func tenantSourceIn(t *testing.T, ns, url string) *sourcev1.GitRepository {
	t.Helper()
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	if err := env.Client.Create(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	return src
}

// tenantKustomization creates, in the tenant's namespace and on the test's
// shard, a pruning Kustomization of path in src (of srcNS, "" for its own)
// naming no service account.
func tenantKustomization(t *testing.T, name, path string, src *sourcev1.GitRepository, srcNS string) *kustomizev1.Kustomization {
	t.Helper()
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenantNS, Labels: map[string]string{tenancyShard: "tenancy"}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true, Path: path,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: src.Name, Namespace: srcNS}},
	}
	if err := env.Client.Create(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return k
}

// tenantRelease creates, in the tenant's namespace and on the test's shard,
// a HelmRelease of tenantChart in src (of srcNS, "" for its own) naming no
// service account, changed by mutate.
func tenantRelease(t *testing.T, name string, src *sourcev1.GitRepository, srcNS string, values map[string]any, mutate ...func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
	t.Helper()
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenantNS, Labels: map[string]string{tenancyShard: "tenancy"}},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "./charts/tenant",
				SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: src.Name, Namespace: srcNS}}}},
	}
	hr.Spec.Values = jsonValues(t, values)
	for _, m := range mutate {
		m(hr)
	}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	return hr
}

func jsonValues(t *testing.T, values map[string]any) *apiextensionsv1.JSON {
	t.Helper()
	if values == nil {
		return nil
	}
	b, err := yaml.Marshal(values)
	if err == nil {
		b, err = yaml.YAMLToJSON(b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: b}
}

// setValues replaces hr's values (a new generation, so a new attempt).
func setValues(t *testing.T, hr *helmv2.HelmRelease, values map[string]any) {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(hr), hr); err != nil {
		t.Fatal(err)
	}
	// A merge patch: the controller's status writes in between cannot
	// make it conflict.
	before := hr.DeepCopy()
	hr.Spec.Values = jsonValues(t, values)
	if err := env.Client.Patch(context.Background(), hr, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// grantEdit lets the tenant's default ServiceAccount manage ConfigMaps and
// Secrets (Helm's release records) in its namespace, with a Role: the
// built-in ClusterRole edit gets its rules from an aggregation controller
// the api profile does not run.
func grantEdit(t *testing.T) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "default-edit", Namespace: tenantNS},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{rbacv1.VerbAll}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "default-edit", Namespace: tenantNS},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: tenantNS}}}
	for _, o := range []client.Object{role, rb} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// waitMessage waits until obj is Ready=False for its generation with a
// message holding each of want.
func waitMessage(t *testing.T, obj client.Object, conds func() []metav1.Condition, want ...string) {
	t.Helper()
	waitFor(t, obj, "Ready=False naming "+strings.Join(want, ", "), func() bool {
		c := apimeta.FindStatusCondition(conds(), meta.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != obj.GetGeneration() {
			return false
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				return false
			}
		}
		t.Logf("%s/%s: %s", obj.GetNamespace(), obj.GetName(), c.Message)
		return true
	})
}

// waitStalled waits until obj is Stalled=True and Ready=False, both with
// Flux's reason AccessDenied.
func waitStalled(t *testing.T, obj client.Object, conds func() []metav1.Condition) {
	t.Helper()
	waitFor(t, obj, "Stalled AccessDenied", func() bool {
		s := apimeta.FindStatusCondition(conds(), meta.StalledCondition)
		r := apimeta.FindStatusCondition(conds(), meta.ReadyCondition)
		return s != nil && s.Status == metav1.ConditionTrue && s.Reason == kustomizev1.AccessDeniedReason &&
			r != nil && r.Status == metav1.ConditionFalse && r.Reason == kustomizev1.AccessDeniedReason
	})
}

func releaseReady(hr *helmv2.HelmRelease) bool {
	c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && hr.Status.ObservedGeneration == hr.Generation
}

// exists checks whether the object kind (ConfigMap or ClusterRole) ns/name
// exists, as want says.
func exists(t *testing.T, kind, ns, name string, want bool) {
	t.Helper()
	var obj client.Object = &corev1.ConfigMap{}
	if kind == "ClusterRole" {
		obj = &rbacv1.ClusterRole{}
	}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		t.Fatal(err)
	case (err == nil) != want:
		t.Errorf("%s %s/%s exists: %t, want %t", kind, ns, name, err == nil, want)
	}
}

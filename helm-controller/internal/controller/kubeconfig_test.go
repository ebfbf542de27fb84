package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startSpoke starts a second local cluster (API profile: no nodes, no
// controller-manager) and returns its client and its self-contained
// kubeconfig.
func startSpoke(t *testing.T) (client.Client, []byte) {
	t.Helper()
	c, err := localcluster.Start(context.Background(), localcluster.Options{Profile: localcluster.ProfileAPI})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	sc, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return sc, b
}

// TestBinaryKubeConfigRemoteRelease runs the built helm-controller on a hub
// (the suite's cluster) whose HelmReleases release to a spoke (a second
// API server) through spec.kubeConfig.secretRef: the release's objects, its
// Helm storage (also in spec.storageNamespace) and its waits are on the
// spoke, an upgrade and the uninstall on delete happen there, the
// ServiceAccount is impersonated on the spoke, a Secret without the key
// fails with Flux's message and configMapRef (workload identity) stalls.
func TestBinaryKubeConfigRemoteRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const shard = "remote"
	testenv.RunBinary(t, env, exe, append(binaryFlags, "--watch-label-selector="+shardKey+"="+shard,
		"--insecure-kubeconfig-tls=false", "--insecure-kubeconfig-exec=false")...)
	spoke, kubeconfig := startSpoke(t)
	ns, _, a := chartFixture(t)
	for _, name := range []string{ns, "helm-storage"} {
		if err := spoke.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spoke"},
		Data: map[string][]byte{"value": kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	remote := func(key string, more func(*helmv2.HelmRelease)) func(*helmv2.HelmRelease) {
		return func(hr *helmv2.HelmRelease) {
			hr.Labels = map[string]string{shardKey: shard}
			hr.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "spoke", Key: key}}
			hr.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
			// The spoke has no nodes: its Deployments are healthy by
			// expression, which only a wait on the spoke can read.
			hr.Spec.HealthCheckExprs = []kustomizev1.CustomHealthCheck{{APIVersion: "apps/v1", Kind: "Deployment", Current: "true"}}
			if more != nil {
				more(hr)
			}
		}
	}
	hr := newRelease(t, ns, "podinfo", "podinfo", remote("", nil))
	impersonated := newRelease(t, ns, "team", "podinfo", remote("value", func(hr *helmv2.HelmRelease) {
		hr.Spec.ServiceAccountName = "deployer"
		hr.Spec.StorageNamespace = "helm-storage"
	}))
	missingKey := newRelease(t, ns, "missing-key", "podinfo", remote("config", nil))
	identity := newRelease(t, ns, "identity", "podinfo", remote("", func(hr *helmv2.HelmRelease) {
		hr.Spec.KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "cluster"}}
	}))

	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/podinfo.v1 with chart podinfo@%s", ns, a.Revision))
	dep := &appsv1.Deployment{}
	if err := spoke.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep); err != nil {
		t.Fatalf("the release's Deployment on the spoke: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("the release's Deployment on the hub: %v", err)
	}
	if s := spokeSecrets(t, spoke, ns, "podinfo"); len(s) != 1 || s[0] != "sh.helm.release.v1.podinfo.v1" {
		t.Errorf("Helm storage on the spoke: %v", s)
	}
	if s := releaseSecrets(t, ns, "podinfo"); len(s) != 0 {
		t.Errorf("Helm storage on the hub: %d Secrets", len(s))
	}
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"replicaCount":2}`) })
	waitReady(t, hr, helmv2.UpgradeSucceededReason,
		fmt.Sprintf("Helm upgrade succeeded for release %s/podinfo.v2 with chart podinfo@%s", ns, a.Revision))
	if err := spoke.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil || *dep.Spec.Replicas != 2 {
		t.Errorf("spoke Deployment replicas after the upgrade: %v %v", err, dep.Spec.Replicas)
	}

	// The spoke knows no account deployer yet: the impersonated install is
	// refused there.
	user := fmt.Sprintf("system:serviceaccount:%s:deployer", ns)
	waitFor(t, impersonated, "refused as "+user, func() bool {
		c := cond(impersonated, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, `User "`+user+`" cannot`)
	})
	if err := spoke.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}); err != nil {
		t.Fatal(err)
	}
	patchSpec(t, impersonated, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"replicaCount":1}`) })
	waitFor(t, impersonated, "Ready once the spoke grants the account", func() bool {
		c := cond(impersonated, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && impersonated.Status.ObservedGeneration == impersonated.Generation
	})
	if s := spokeSecrets(t, spoke, "helm-storage", "team"); len(s) == 0 || impersonated.Status.StorageNamespace != "helm-storage" {
		t.Errorf("Helm storage in the spoke's helm-storage: %v (status %q)", s, impersonated.Status.StorageNamespace)
	}

	c := waitNotReady(t, missingKey, helmv2.RESTClientErrorReason)
	if want := fmt.Sprintf("KubeConfig secret '%s/spoke' does not contain a 'config' key with data", ns); c.Message != want {
		t.Errorf("missing key: %q, want %q", c.Message, want)
	}
	waitFor(t, identity, "Stalled", func() bool {
		c := cond(identity, meta.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Message == workloadIdentityRefusal
	})

	// Deleting the HelmRelease uninstalls the release from the spoke.
	if err := env.Client.Delete(ctx, hr); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, hr, "the HelmRelease finalized")
	if err := spoke.Get(ctx, client.ObjectKeyFromObject(dep), dep); !apierrors.IsNotFound(err) {
		t.Errorf("spoke Deployment after the uninstall: %v", err)
	}
	if s := spokeSecrets(t, spoke, ns, "podinfo"); len(s) != 0 {
		t.Errorf("Helm storage on the spoke after the uninstall: %v", s)
	}
}

// waitNotReady waits until hr is Ready=False with reason and returns it.
func waitNotReady(t *testing.T, hr *helmv2.HelmRelease, reason string) *metav1.Condition {
	t.Helper()
	waitFor(t, hr, "Ready=False "+reason, func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
	})
	return cond(hr, meta.ReadyCondition)
}

// spokeSecrets names the Helm storage Secrets of release name in the
// spoke's namespace ns.
func spokeSecrets(t *testing.T, spoke client.Client, ns, name string) []string {
	t.Helper()
	var l corev1.SecretList
	if err := spoke.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range l.Items {
		out = append(out, s.Name)
	}
	return out
}

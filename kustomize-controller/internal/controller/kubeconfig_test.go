package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// spokeCluster is a second local cluster (API profile) that the hub's
// Kustomizations reach through spec.kubeConfig.secretRef.
type spokeCluster struct {
	*localcluster.Cluster
	client     client.Client
	kubeconfig *clientcmdapi.Config // self-contained: inline CA, client certificate and key
}

func startSpoke(t *testing.T) *spokeCluster {
	t.Helper()
	c, err := localcluster.Start(context.Background(), localcluster.Options{Profile: localcluster.ProfileAPI})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	sc, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	// localcluster's kubeconfig is self-contained already; make sure.
	for name, cl := range kc.Clusters {
		if cl.CertificateAuthority != "" || len(cl.CertificateAuthorityData) == 0 {
			t.Fatalf("spoke kubeconfig cluster %s is not self-contained", name)
		}
		cl.LocationOfOrigin = ""
	}
	for _, u := range kc.AuthInfos {
		u.LocationOfOrigin = ""
	}
	for _, x := range kc.Contexts {
		x.LocationOfOrigin = ""
	}
	return &spokeCluster{Cluster: c, client: sc, kubeconfig: kc}
}

// kubeconfigBytes returns the spoke's kubeconfig after mutate changed its
// current cluster and user.
func (s *spokeCluster) kubeconfigBytes(t *testing.T, mutate func(cl *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	kc := s.kubeconfig.DeepCopy()
	x := kc.Contexts[kc.CurrentContext]
	if mutate != nil {
		mutate(kc.Clusters[x.Cluster], kc.AuthInfos[x.AuthInfo])
	}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func createKubeconfigSecret(t *testing.T, ns, name, key string, data []byte) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{key: data}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// remote sets spec.kubeConfig.secretRef and the binary's shard label.
func remote(secret, key string, more ...func(*kustomizev1.Kustomization)) func(*kustomizev1.Kustomization) {
	return func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: binaryShard}
		k.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: secret, Key: key}}
		k.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
		for _, m := range more {
			m(k)
		}
	}
}

func waitFailedWith(t *testing.T, k *kustomizev1.Kustomization, reason string, ok func(msg string) bool, what string) *metav1.Condition {
	t.Helper()
	waitFor(t, k, "Ready=False "+reason+" "+what, func() bool {
		c := readyCond(k)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.ObservedGeneration == k.Generation && ok(c.Message)
	})
	return readyCond(k)
}

// spokeGet reads an object of the spoke as unstructured.
func (s *spokeCluster) get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := s.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

// TestBinaryKubeConfigHubSpoke runs the built kustomize-controller on a hub
// (the suite's cluster) whose Kustomizations apply to a spoke (a second
// local cluster) through spec.kubeConfig.secretRef, with
// flux2-hub-spoke-example's staging Kustomizations: the spoke's objects
// equal the expected lists, prune, drift correction, health checks and
// prune on delete happen in the spoke, the spoke's REST mapping is used (a
// CRD only the spoke serves), impersonation runs on the spoke, the cached
// client follows a changed Secret, kubeconfigs that are not self-contained
// are refused, insecure-skip-tls-verify needs --insecure-kubeconfig-tls,
// and a stopped spoke fails its Kustomizations while the hub's own stay
// Ready.
func TestBinaryKubeConfigHubSpoke(t *testing.T) {
	ctx := context.Background()
	spoke := startSpoke(t)
	ns := newNamespace(t)
	good := spoke.kubeconfigBytes(t, nil)

	// The repository as the hub's flux-system GitRepository serves it,
	// plus a directory for the impersonation case.
	r := newRepo(t, nil)
	if err := os.CopyFS(r.Work, os.DirFS(filepath.Join(testdataDir(t), "repos", "flux2-hub-spoke-example"))); err != nil {
		t.Fatal(err)
	}
	r.MustCommit(t, map[string]string{
		"impersonation/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-config, namespace: team}\ndata: {a: \"1\"}\n",
		"local/cm.yaml":         fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hub-local, namespace: %s}\ndata: {a: \"1\"}\n", ns),
	}, "import flux2-hub-spoke-example")
	src := newSource(t, ns, "flux-system", r)
	rev := src.Status.Artifact.Revision

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name, key, message string
			data               []byte
		}{
			{"ca-file", "", "is not self-contained: cluster '%s' sets certificate-authority, a file path, which is not allowed; embed the content with certificate-authority-data instead",
				spoke.kubeconfigBytes(t, func(cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
					cl.CertificateAuthorityData, cl.CertificateAuthority = nil, "/etc/kubernetes/pki/ca.crt"
				})},
			{"cert-file", "", "is not self-contained: user '%s' sets client-certificate, a file path, which is not allowed; embed the content with client-certificate-data instead",
				spoke.kubeconfigBytes(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
					u.ClientCertificateData, u.ClientCertificate = nil, "/etc/kubernetes/pki/admin.crt"
				})},
			{"key-file", "", "is not self-contained: user '%s' sets client-key, a file path, which is not allowed; embed the content with client-key-data instead",
				spoke.kubeconfigBytes(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
					u.ClientKeyData, u.ClientKey = nil, "/etc/kubernetes/pki/admin.key"
				})},
			{"token-file", "", "is not self-contained: user '%s' sets tokenFile, a file path, which is not allowed; embed the content with token instead",
				spoke.kubeconfigBytes(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
					u.ClientCertificateData, u.ClientKeyData, u.TokenFile = nil, nil, "/var/run/secrets/kubernetes.io/serviceaccount/token"
				})},
			{"exec", "", "user '%s' uses an exec credential plugin, which is not allowed without the controller flag --insecure-kubeconfig-exec",
				spoke.kubeconfigBytes(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
					u.ClientCertificateData, u.ClientKeyData = nil, nil
					u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "echo token"},
						InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
				})},
			{"auth-provider", "", "user '%s' uses the auth-provider plugin 'oidc', which is not allowed; use a token or a client certificate",
				spoke.kubeconfigBytes(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
					u.ClientCertificateData, u.ClientKeyData = nil, nil
					u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://example.com"}}
				})},
			{"missing-key", "config", "does not contain a 'config' key with a kubeconfig", good},
		} {
			t.Run(tc.name, func(t *testing.T) {
				key := tc.key
				if key == "" {
					key = "value"
				}
				secretKey := key
				if tc.name == "missing-key" {
					secretKey = "value"
				}
				createKubeconfigSecret(t, ns, tc.name, secretKey, tc.data)
				k := newKustomization(t, ns, tc.name, src.Name, remote(tc.name, tc.key, func(k *kustomizev1.Kustomization) {
					k.Spec.Path = "./impersonation"
				}))
				ctxName := spoke.kubeconfig.CurrentContext
				msg := fmt.Sprintf("KubeConfig secret '%s/%s' ", ns, tc.name)
				if strings.Contains(tc.message, "%s") {
					msg += fmt.Sprintf(tc.message, ctxName)
				} else {
					msg += tc.message
				}
				if strings.HasPrefix(tc.message, "user") {
					msg = fmt.Sprintf("KubeConfig secret '%s/%s': ", ns, tc.name) + fmt.Sprintf(tc.message, ctxName)
				}
				c := waitFailedWith(t, k, meta.ReconciliationFailedReason, func(string) bool { return true }, "")
				if c.Message != msg {
					t.Errorf("message\n got %q\nwant %q", c.Message, msg)
				}
				if k.Status.Inventory != nil && len(k.Status.Inventory.Entries) > 0 {
					t.Errorf("a refused kubeconfig applied %v", k.Status.Inventory.Entries)
				}
			})
		}
		if _, err := spoke.get(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "team"); !apierrors.IsNotFound(err) {
			t.Errorf("a refused kubeconfig reached the spoke (namespace team: %v)", err)
		}
	})

	t.Run("insecure TLS", func(t *testing.T) {
		insecure := spoke.kubeconfigBytes(t, func(cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cl.CertificateAuthorityData, cl.InsecureSkipTLSVerify = nil, true
		})
		// value.yaml: the second default key.
		createKubeconfigSecret(t, ns, "insecure", "value.yaml", insecure)
		k := newKustomization(t, ns, "insecure", src.Name, remote("insecure", "", func(k *kustomizev1.Kustomization) {
			k.Spec.Path = "./clusters/staging/tenants"
			k.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"CLUSTER_NAME": "insecure"}}
		}))
		c := waitFailedWith(t, k, meta.ReconciliationFailedReason, func(m string) bool { return strings.Contains(m, "is unreachable") }, "unreachable")
		if !strings.Contains(c.Message, "x509") || !strings.HasSuffix(c.Message, "(insecure-skip-tls-verify is ignored without the controller flag --insecure-kubeconfig-tls)") {
			t.Errorf("message %q: want a certificate verification error and the flag's hint", c.Message)
		}
		t.Logf("without --insecure-kubeconfig-tls: %s", c.Message)
		// The same Secret with a controller started with the flag.
		testenv.RunController(t, env, "kustomize-controller", "--watch-label-selector="+shardKey+"=insecure-tls",
			"--insecure-kubeconfig-tls", "--min-retry-delay=200ms", "--max-retry-delay=2s")
		k2 := newKustomization(t, ns, "insecure-allowed", src.Name, remote("insecure", "", func(k *kustomizev1.Kustomization) {
			k.Labels = map[string]string{shardKey: "insecure-tls"}
			k.Spec.Path = "./impersonation"
		}))
		ensureSpokeNamespace(t, spoke, "team")
		waitApplied(t, k2, rev)
		if _, err := spoke.get(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "team", "team-config"); err != nil {
			t.Errorf("not applied in the spoke with --insecure-kubeconfig-tls: %v", err)
		}
		// Deleted while the controller with the flag still runs: pruned.
		for _, obj := range []client.Object{k, k2} {
			if err := env.Client.Delete(ctx, obj); err != nil {
				t.Fatal(err)
			}
			testenv.WaitGone(t, env.Client, obj, "deleted")
		}
		waitSpokeGone(t, spoke, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "team", "team-config")
	})

	t.Run("impersonation on the spoke", func(t *testing.T) {
		// secretRef.key names the key.
		createKubeconfigSecret(t, ns, "custom-key", "custom", good)
		ensureSpokeNamespace(t, spoke, "team")
		user := fmt.Sprintf("system:serviceaccount:%s:deployer", ns)
		// The account exists on the hub (Flux checks it there before pruning
		// on delete); its rights are the spoke's.
		if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}}); err != nil {
			t.Fatal(err)
		}
		k := newKustomization(t, ns, "impersonated", src.Name, remote("custom-key", "custom", func(k *kustomizev1.Kustomization) {
			k.Spec.Path = "./impersonation"
			k.Spec.ServiceAccountName = "deployer"
			k.Spec.Wait = true
		}))
		c := waitFailedWith(t, k, meta.ReconciliationFailedReason, func(m string) bool { return strings.Contains(m, "forbidden") }, "forbidden")
		if !strings.Contains(c.Message, `User "`+user+`"`) {
			t.Errorf("message %q does not name the impersonated account", c.Message)
		}
		t.Logf("not granted on the spoke: %s", c.Message)
		// Granted on the spoke: applied and health-checked as the account.
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "deployer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "deployer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
		for _, o := range []client.Object{role, binding} {
			if err := spoke.client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		requestReconcile(t, k, func() string { return k.Status.LastHandledReconcileAt })
		waitApplied(t, k, rev)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team", Name: "team-config"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("applied to the hub: %v", err)
		}
		// Deleted: pruned in the spoke as the account.
		if err := env.Client.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		waitSpokeGone(t, spoke, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "team", "team-config")
		testenv.WaitGone(t, env.Client, k, "deleted")
	})

	t.Run("changed Secret", func(t *testing.T) {
		s := createKubeconfigSecret(t, ns, "rotating", "value", good)
		k := newKustomization(t, ns, "rotating", src.Name, remote("rotating", "", func(k *kustomizev1.Kustomization) {
			k.Spec.Path = "./impersonation"
		}))
		waitApplied(t, k, rev)
		// The Secret now names a server that is not there: the cached
		// client must not be used any more.
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		s.Data["value"] = spoke.kubeconfigBytes(t, func(cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cl.Server = fmt.Sprintf("https://127.0.0.1:%d", port)
		})
		if err := env.Client.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		requestReconcile(t, k, func() string { return k.Status.LastHandledReconcileAt })
		waitFailedWith(t, k, meta.ReconciliationFailedReason, func(m string) bool {
			return strings.HasPrefix(m, fmt.Sprintf("remote cluster 'https://127.0.0.1:%d' of KubeConfig secret '%s/rotating' is unreachable: ", port, ns))
		}, "unreachable")
		// Back: applied again.
		s.Data["value"] = good
		if err := env.Client.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		requestReconcile(t, k, func() string { return k.Status.LastHandledReconcileAt })
		waitApplied(t, k, rev)
		k.Spec.DeletionPolicy = kustomizev1.DeletionPolicyOrphan
		if err := env.Client.Update(ctx, k); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	})

	// The hub's staging Kustomizations of flux2-hub-spoke-example, as
	// hub/staging.yaml declares them, in the test's namespace; the spoke
	// serves cert-manager's ClusterIssuer, the hub need not.
	createKubeconfigSecret(t, ns, "cluster-kubeconfig", "value", good)
	installSpokeCRD(t, spoke, "cert-manager.io", "ClusterIssuer", "clusterissuers", "v1")
	tenants := newKustomization(t, ns, "tenants", src.Name, remote("cluster-kubeconfig", "", func(k *kustomizev1.Kustomization) {
		k.Spec.RetryInterval = &metav1.Duration{Duration: 3 * time.Minute}
		k.Spec.Wait = true
		k.Spec.Path = "./clusters/staging/tenants"
		k.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"CLUSTER_NAME": "staging"}}
	}))
	infraConfigs := newKustomization(t, ns, "infra-configs", src.Name, remote("cluster-kubeconfig", "", func(k *kustomizev1.Kustomization) {
		k.Spec.RetryInterval = &metav1.Duration{Duration: 3 * time.Minute}
		k.Spec.Wait = true
		k.Spec.TargetNamespace = "staging"
		k.Spec.Path = "./clusters/staging/infra-configs"
		// Kept when the test's namespace goes (the spoke is stopped by then).
		k.Spec.DeletionPolicy = kustomizev1.DeletionPolicyOrphan
	}))
	local := newKustomization(t, ns, "hub-local", src.Name, func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: binaryShard}
		k.Spec.Path = "./local"
		k.Spec.Wait = true
	})
	waitApplied(t, tenants, rev)
	waitApplied(t, infraConfigs, rev)
	waitApplied(t, local, rev)

	expectedDir := filepath.Join(testdataDir(t), "expected", "flux2-hub-spoke-example", "flux", "hub")
	for _, tc := range []struct {
		k    *kustomizev1.Kustomization
		file string
	}{{tenants, "staging.tenants"}, {infraConfigs, "staging.infra-configs"}} {
		expected := readExpected(t, filepath.Join(expectedDir, tc.file, "expected-objects.txt"))
		var want, got []string
		for _, o := range expected {
			// Applied objects of a cluster-scoped kind have no namespace
			// (the spoke's mapping says which: ClusterIssuer is).
			m, err := spoke.client.RESTMapper().RESTMapping(o.GVK.GroupKind(), o.GVK.Version)
			if err != nil {
				t.Fatalf("spoke mapping of %s: %v", o.GVK, err)
			}
			if m.Scope.Name() == "root" {
				o.Namespace = ""
			}
			want = append(want, o.ID())
			u, err := spoke.get(o.GVK, o.Namespace, o.Name)
			if err != nil {
				t.Errorf("%s %s/%s not in the spoke: %v", o.GVK.Kind, o.Namespace, o.Name, err)
				continue
			}
			if l := u.GetLabels(); l[NameLabel] != tc.k.Name || l[NamespaceLabel] != ns {
				t.Errorf("%s %s/%s owner labels %v", o.GVK.Kind, o.Namespace, o.Name, l)
			}
		}
		for _, e := range tc.k.Status.Inventory.Entries {
			got = append(got, e.ID)
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s inventory\n got %v\nwant %v", tc.file, got, want)
		}
	}
	// Not in the hub.
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "staging", Name: "flux-restricted"}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceAccount staging/flux-restricted in the hub: %v", err)
	}

	// Drift in the spoke is corrected.
	sa := &corev1.ServiceAccount{}
	if err := spoke.client.Get(ctx, client.ObjectKey{Namespace: "staging", Name: "flux-restricted"}, sa); err != nil {
		t.Fatal(err)
	}
	sa.Labels["toolkit.fluxcd.io/tenant"] = "drifted"
	if err := spoke.client.Update(ctx, sa, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	requestReconcile(t, tenants, func() string { return tenants.Status.LastHandledReconcileAt })
	waitApplied(t, tenants, rev)
	if err := spoke.client.Get(ctx, client.ObjectKeyFromObject(sa), sa); err != nil || sa.Labels["toolkit.fluxcd.io/tenant"] != "sre-team" {
		t.Errorf("drift in the spoke not corrected: %v %v", sa.Labels, err)
	}

	// A file left out of a new revision is pruned in the spoke.
	rev2 := push(t, r, src, map[string]string{
		"deploy/tenants/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flux.yaml\n  - cert-manager.yaml\n  - ingress-nginx.yaml\n",
	}, "tenants without podinfo")
	waitApplied(t, tenants, rev2)
	waitSpokeGone(t, spoke, schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}, "podinfo", "flux")
	waitSpokeGone(t, spoke, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "podinfo")

	// Deleting the hub Kustomization prunes the spoke.
	if err := env.Client.Delete(ctx, tenants); err != nil {
		t.Fatal(err)
	}
	waitSpokeGone(t, spoke, schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, "staging", "flux-restricted")
	waitSpokeGone(t, spoke, schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, "", "flux-cluster-admin")
	waitSpokeGone(t, spoke, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "cert-manager")
	testenv.WaitGone(t, env.Client, tenants, "tenants deleted")

	// The spoke stopped: its Kustomization fails with a clear message, the
	// hub's own stays Ready.
	spoke.Stop()
	requestReconcile(t, infraConfigs, func() string { return infraConfigs.Status.LastHandledReconcileAt })
	c := waitFailedWith(t, infraConfigs, meta.ReconciliationFailedReason, func(m string) bool { return strings.Contains(m, "is unreachable") }, "unreachable")
	want := fmt.Sprintf("remote cluster '%s' of KubeConfig secret '%s/cluster-kubeconfig' is unreachable: ", spoke.Config.Host, ns)
	if !strings.HasPrefix(c.Message, want) || !strings.Contains(c.Message, "connection refused") {
		t.Errorf("message %q, want %q… connection refused", c.Message, want)
	}
	t.Logf("spoke stopped: %s", c.Message)
	requestReconcile(t, local, func() string { return local.Status.LastHandledReconcileAt })
	waitApplied(t, local, rev2)
}

func ensureSpokeNamespace(t *testing.T, s *spokeCluster, name string) {
	t.Helper()
	err := s.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// waitSpokeGone waits until the spoke's object is gone, or terminating (a
// Namespace: the API-only spoke has no namespace controller to finish it).
func waitSpokeGone(t *testing.T, s *spokeCluster, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		u, err := s.get(gvk, ns, name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		last = err
		return err == nil && u.GetDeletionTimestamp() != nil, nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s still in the spoke (%v)", gvk.Kind, ns, name, last)
	}
}

// installSpokeCRD installs a schemaless cluster-scoped CRD in the spoke
// only and waits until the spoke serves it.
func installSpokeCRD(t *testing.T, s *spokeCluster, group, kind, plural, version string) {
	t.Helper()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	if err := s.client.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := s.client.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind}, version)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the spoke does not serve %s.%s", plural, group)
	}
}

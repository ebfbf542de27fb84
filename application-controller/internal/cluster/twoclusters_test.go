package cluster

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/localcluster"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startCluster starts an API-only local cluster, stopped when t ends.
func startCluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	c, err := localcluster.Start(t.Context(), localcluster.Options{Profile: localcluster.ProfileAPI})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// secretFor is a cluster Secret for c with config.
func secretFor(t *testing.T, name string, c *localcluster.Cluster, config Config) *corev1.Secret {
	t.Helper()
	b, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	s := clusterSecret(name, map[string]string{"name": name, "server": c.Config.Host, "config": string(b)})
	s.ResourceVersion = ""
	return s
}

func TestRegistryAgainstTwoClusters(t *testing.T) {
	hub, spoke := startCluster(t), startCluster(t)
	ctx := t.Context()
	hubClient, err := client.New(hub.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}); err != nil {
		t.Fatal(err)
	}
	local, err := NewTarget(ctx, hub.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	local.Server, local.Name = argov1.InClusterServer, argov1.InClusterName
	r := &Registry{Client: hubClient, Namespace: "argocd", Local: local}
	admin := Config{TLSClientConfig: TLSClientConfig{CAData: spoke.Config.CAData, CertData: spoke.Config.CertData, KeyData: spoke.Config.KeyData}}
	secret := secretFor(t, "spoke", spoke, admin)
	if err := hubClient.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}

	t.Run("each destination gets a client of its own cluster", func(t *testing.T) {
		for _, tc := range []struct {
			dest      argov1.ApplicationDestination
			name, cfg string
		}{
			{argov1.ApplicationDestination{Name: "spoke"}, "spoke", spoke.Config.Host},
			{argov1.ApplicationDestination{Server: spoke.Config.Host + "/"}, "spoke", spoke.Config.Host},
			{argov1.ApplicationDestination{Server: argov1.InClusterServer}, argov1.InClusterName, hub.Config.Host},
		} {
			tgt, err := r.For(ctx, tc.dest)
			if err != nil {
				t.Fatal(err)
			}
			if tgt.Name != tc.name || tgt.Config.Host != tc.cfg || tgt.KubeVersion == "" || !slices.Contains(tgt.APIVersions, "apps/v1") {
				t.Fatalf("%v: target %s %s %s %v", tc.dest, tgt.Name, tgt.Config.Host, tgt.KubeVersion, len(tgt.APIVersions))
			}
		}
		tgt, _ := r.For(ctx, argov1.ApplicationDestination{Name: "spoke"})
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		cm.SetNamespace("default")
		cm.SetName("deployed-to-spoke")
		if err := tgt.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := tgt.Reader.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatal(err)
		}
		err := hubClient.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("the ConfigMap reached the hub: %v", err)
		}
		if again, _ := r.For(ctx, argov1.ApplicationDestination{Name: "spoke"}); again != tgt {
			t.Error("an unchanged Secret's target was rebuilt")
		}
	})

	t.Run("a service account's bearer token works", func(t *testing.T) {
		token := serviceAccountToken(t, spoke)
		cfg := Config{BearerToken: token, TLSClientConfig: TLSClientConfig{CAData: spoke.Config.CAData}}
		if err := hubClient.Create(ctx, secretFor(t, "by-token", spoke, cfg)); err != nil {
			t.Fatal(err)
		}
		tgt, err := r.For(ctx, argov1.ApplicationDestination{Name: "by-token"})
		if err != nil {
			t.Fatal(err)
		}
		if err := tgt.Reader.Get(ctx, client.ObjectKey{Namespace: "default", Name: "deployed-to-spoke"}, &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("wrong credentials give the server's answer and no secret", func(t *testing.T) {
		wrong := Config{BearerToken: secretValue, TLSClientConfig: TLSClientConfig{CAData: spoke.Config.CAData}}
		if err := hubClient.Create(ctx, secretFor(t, "wrong", spoke, wrong)); err != nil {
			t.Fatal(err)
		}
		_, err := r.For(ctx, argov1.ApplicationDestination{Name: "wrong"})
		want := `failed to get cluster info for "` + spoke.Config.Host + `": the server has asked for the client to provide credentials`
		if err == nil || err.Error() != want || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("error %v, want %q", err, want)
		}
		if strings.Contains(err.Error(), secretValue) {
			t.Error("the error holds the token")
		}
	})

	t.Run("a changed Secret is rebuilt, a deleted one forgotten", func(t *testing.T) {
		before, err := r.For(ctx, argov1.ApplicationDestination{Name: "spoke"})
		if err != nil {
			t.Fatal(err)
		}
		secret.Data["project"] = []byte("team")
		if err := hubClient.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		after, err := r.For(ctx, argov1.ApplicationDestination{Name: "spoke"})
		if err != nil {
			t.Fatal(err)
		}
		if after == before || after.Project != "team" {
			t.Errorf("not rebuilt: project %q", after.Project)
		}
		if err := hubClient.Delete(ctx, secret); err != nil {
			t.Fatal(err)
		}
		_, err = r.For(ctx, argov1.ApplicationDestination{Name: "spoke"})
		if err == nil || err.Error() != "there are no clusters with this name: spoke" {
			t.Fatalf("after delete: %v", err)
		}
		if _, ok := r.targets["argocd/spoke"]; ok {
			t.Error("the deleted Secret's target is still cached")
		}
	})
}

// serviceAccountToken is a token of a cluster-admin service account of c.
func serviceAccountToken(t *testing.T, c *localcluster.Cluster) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "argocd-manager", Namespace: "kube-system"}}
	if _, err := cs.CoreV1().ServiceAccounts("kube-system").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "argocd-manager"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

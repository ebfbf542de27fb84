package controller

import (
	"context"
	"errors"
	"testing"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/remotecluster"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestClusterConfigReadsTheKubeConfigSecret(t *testing.T) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["spoke"] = &clientcmdapi.Cluster{Server: "https://spoke.example:6443"}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "t0ken"}
	kc.Contexts["spoke"] = &clientcmdapi.Context{Cluster: "spoke", AuthInfo: "admin"}
	kc.CurrentContext = "spoke"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	secret := func(name string, d map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}, Data: d}
	}
	r := &HelmReleaseReconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		secret("yaml", map[string][]byte{"value.yaml": data}),
		secret("custom", map[string][]byte{"config": data}),
		secret("empty", map[string][]byte{"other": data}),
	).Build()}
	hr := func(ref meta.KubeConfigReference) *helmv2.HelmRelease {
		return &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
			Spec: helmv2.HelmReleaseSpec{KubeConfig: &ref}}
	}
	secretRef := func(name, key string) meta.KubeConfigReference {
		return meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: name, Key: key}}
	}
	for _, name := range []string{"yaml", "custom"} {
		key := map[string]string{"custom": "config"}[name]
		cfg, err := r.clusterConfig(context.Background(), hr(secretRef(name, key)))
		if err != nil || cfg.Host != "https://spoke.example:6443" || cfg.BearerToken != "t0ken" || cfg.UserAgent != ControllerName {
			t.Errorf("%s: %v %+v", name, err, cfg)
		}
	}
	for _, tc := range []struct {
		ref      meta.KubeConfigReference
		msg      string
		terminal bool // ErrKubeConfig: uninstall skipped at once
	}{
		{secretRef("empty", ""), "KubeConfig secret 'apps/empty' does not contain a 'value' or 'value.yaml' key with data", true},
		{secretRef("empty", "config"), "KubeConfig secret 'apps/empty' does not contain a 'config' key with data", true},
		{secretRef("gone", ""), `could not get KubeConfig secret 'apps/gone': secrets "gone" not found`, true},
		{meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "c"}}, workloadIdentityRefusal, true},
		{meta.KubeConfigReference{}, "exactly one of .spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be set", false},
	} {
		_, err := r.clusterConfig(context.Background(), hr(tc.ref))
		if err == nil || err.Error() != tc.msg || errors.Is(err, remotecluster.ErrKubeConfig) != tc.terminal {
			t.Errorf("%+v: %v, want %q (terminal %t)", tc.ref, err, tc.msg, tc.terminal)
		}
	}
	if f := kubeConfigRefusal(hr(meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "c"}})); f == nil || !f.Stalled ||
		f.Reason != meta.ReconciliationFailedReason || f.Message != workloadIdentityRefusal {
		t.Errorf("configMapRef: %+v", f)
	}
}

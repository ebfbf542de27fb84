package controller

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// TestKubeConfigUnreachableHidesServerCredentials: a kubeconfig whose server
// URL carries credentials (user:password@, a token in the query) must not
// have them echoed in the "remote cluster ... is unreachable" message, which
// ends up in the Ready condition and events.
func TestKubeConfigUnreachableHidesServerCredentials(t *testing.T) {
	kc := []byte(`apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: "https://admin:s3cretpw@127.0.0.1:1/?access_token=querytok"}
users:
- name: u
  user: {token: bearertok}
`)
	cfg, _, err := restConfigFromKubeConfig(kc, "apps/spoke", KubeConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc := &remoteClient{http: hc, host: cfg.Host}
	err = rc.probe(context.Background(), "apps/spoke")
	if err == nil {
		t.Fatal("probe of 127.0.0.1:1 succeeded")
	}
	t.Log(err)
	for _, secret := range []string{"s3cretpw", "querytok", "bearertok"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("message holds %q: %v", secret, err)
		}
	}
	if !strings.Contains(err.Error(), "remote cluster 'https://127.0.0.1:1/' of KubeConfig secret 'apps/spoke' is unreachable: ") {
		t.Errorf("message: %v", err)
	}
}

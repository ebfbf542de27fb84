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

// TestKubeConfigRefusalBypasses: what a careless or hostile kubeconfig
// tries, and that no message quotes a path, a token or a key.
func TestKubeConfigRefusalBypasses(t *testing.T) {
	const head = `apiVersion: v1
kind: Config
contexts:
- name: c
  context: {cluster: c, user: u}
- name: other
  context: {cluster: c, user: plugin}
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", CLUSTER}
users:
- name: plugin
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/evil-plugin}}
- name: u
  user: {USER}
`
	mk := func(current, cluster, user string) []byte {
		s := strings.Replace(head, "CLUSTER", cluster, 1)
		s = strings.Replace(s, "USER", user, 1)
		if current != "" {
			s += "current-context: " + current + "\n"
		}
		return []byte(s)
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		wantErr string // "" ⇒ accepted
	}{
		{"tokenFile beside token", mk("c", "x: y", "token: tok-secret-1, tokenFile: /var/run/secrets/tok-path-1"), "sets tokenFile, a file path"},
		{"no current-context", mk("", "x: y", "token: tok-secret-2"), "current-context '' is not defined"},
		{"exec in the current context", mk("other", "x: y", "token: tok-secret-3"), "uses an exec credential plugin"},
		{"exec in another context only", mk("c", "x: y", "token: tok-secret-4"), ""},
		{"client-key path", mk("c", "x: y", "client-key: /etc/ssh/key-path-5, client-certificate-data: Zm9v"), "sets client-key, a file path"},
		{"auth-provider", mk("c", "x: y", "auth-provider: {name: oidc, config: {id-token: idtok-secret-6}}"), "auth-provider plugin 'oidc'"},
		{"CA path", mk("c", "certificate-authority: /etc/ca-path-7", "token: tok-secret-7"), "sets certificate-authority, a file path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := restConfigFromKubeConfig(tc.data, "apps/spoke", KubeConfigOptions{})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			for _, s := range []string{"secret-", "path-", "evil-plugin"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("message quotes %q: %v", s, err)
				}
			}
		})
	}

	// A proxy-url with credentials: the unreachable message holds neither
	// them nor the token.
	cfg, _, err := restConfigFromKubeConfig(mk("c", `proxy-url: "http://puser:proxy-secret-8@127.0.0.1:1"`, "token: tok-secret-8"), "apps/spoke", KubeConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = (&remoteClient{http: hc, host: cfg.Host}).probe(context.Background(), "apps/spoke")
	if err == nil || strings.Contains(err.Error(), "secret-8") {
		t.Errorf("probe: %v", err)
	}
	t.Log(err)
}

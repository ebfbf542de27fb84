package cluster

import (
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

const secretValue = "s3cr3t-value"

func clusterSecret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd", ResourceVersion: "1",
		Labels: map[string]string{argov1.LabelSecretType: SecretTypeCluster}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestParseSecretReadsArgoCDKeys(t *testing.T) {
	s := clusterSecret("prod", map[string]string{
		"name": "prod", "server": "https://prod.example.com:6443/", "namespaces": " a, b ,,c",
		"clusterResources": "true", "project": "team",
		"config": `{"bearerToken":"tok","tlsClientConfig":{"insecure":true,"serverName":"api","caData":"Y2E="},"proxyUrl":"http://proxy:3128","disableCompression":true}`,
	})
	s.Annotations = map[string]string{argov1.AnnotationSkipReconcile: "true"}
	got := ParseSecret(s)
	if got.ConfigErr != nil {
		t.Fatal(got.ConfigErr)
	}
	if got.Server != "https://prod.example.com:6443" || got.Name != "prod" || got.SecretName != "argocd/prod" {
		t.Errorf("name/server: %+v", got)
	}
	if strings.Join(got.Namespaces, "|") != "a|b|c" || !got.ClusterResources || got.Project != "team" || !got.SkipReconcile {
		t.Errorf("scope: %+v", got)
	}
	c := got.Config
	if c.BearerToken != "tok" || !c.TLSClientConfig.Insecure || c.TLSClientConfig.ServerName != "api" ||
		string(c.TLSClientConfig.CAData) != "ca" || c.ProxyURL != "http://proxy:3128" || !c.DisableCompression {
		t.Errorf("config: %+v", c)
	}
}

func TestRESTConfigFollowsArgoCDRules(t *testing.T) {
	local := &rest.Config{Host: "https://10.0.0.1:443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("local-ca"),
		CertData: []byte("local-cert"), KeyData: []byte("local-key")}}
	tests := []struct {
		name, server, config string
		check                func(t *testing.T, c *rest.Config)
	}{
		{"remote with token and TLS", "https://remote:6443", `{"bearerToken":"tok","tlsClientConfig":{"caData":"Y2E=","certData":"Y2VydA==","keyData":"a2V5","serverName":"sni"}}`,
			func(t *testing.T, c *rest.Config) {
				if c.Host != "https://remote:6443" || c.BearerToken != "tok" || string(c.CAData) != "ca" || string(c.CertData) != "cert" ||
					string(c.KeyData) != "key" || c.ServerName != "sni" || c.Insecure {
					t.Errorf("%+v", c)
				}
			}},
		{"remote with basic auth, insecure, proxy", "https://remote", `{"username":"u","password":"p","tlsClientConfig":{"insecure":true},"proxyUrl":"http://proxy:3128","disableCompression":true}`,
			func(t *testing.T, c *rest.Config) {
				if c.Username != "u" || c.Password != "p" || !c.Insecure || c.Proxy == nil || !c.DisableCompression {
					t.Errorf("%+v", c)
				}
			}},
		{"in-cluster without credentials is the controller's account", argov1.InClusterServer, ``,
			func(t *testing.T, c *rest.Config) {
				if c.Host != local.Host || string(c.CertData) != "local-cert" || c.BearerToken != "" {
					t.Errorf("%+v", c)
				}
			}},
		{"in-cluster with a token keeps the local server and CA", argov1.InClusterServer, `{"bearerToken":"tok"}`,
			func(t *testing.T, c *rest.Config) {
				if c.Host != local.Host || string(c.CAData) != "local-ca" || c.CertData != nil || c.KeyData != nil || c.BearerToken != "tok" {
					t.Errorf("%+v", c)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := ParseSecret(clusterSecret("c", map[string]string{"server": tc.server, "config": tc.config}))
			c, err := s.RESTConfig(local)
			if err != nil {
				t.Fatal(err)
			}
			if c.Timeout != requestTimeout || c.QPS != clientQPS || c.Burst != clientBurst {
				t.Errorf("client limits: %v %v %v", c.Timeout, c.QPS, c.Burst)
			}
			tc.check(t, c)
		})
	}
	if string(local.CertData) != "local-cert" {
		t.Error("the local configuration was changed")
	}
}

func TestRESTConfigRefusesWithoutSecretValues(t *testing.T) {
	tests := []struct{ name, server, config, want string }{
		{"exec plugin", "https://r", `{"execProviderConfig":{"command":"` + secretValue + `"}}`,
			"cluster secret 'argocd/c': execProviderConfig is not supported: Eddy does not run credential plugins"},
		{"aws auth", "https://r", `{"awsAuthConfig":{"clusterName":"` + secretValue + `"}}`,
			"cluster secret 'argocd/c': awsAuthConfig is not supported: Eddy does not run argocd-k8s-auth"},
		{"no server", "", `{}`, "cluster secret 'argocd/c' has no server"},
		{"bad JSON", "https://r", `{"bearerToken":` + secretValue + `}`, "cluster secret 'argocd/c': config is not valid: invalid JSON at byte 16"},
		{"wrong type", "https://r", `{"bearerToken":42}`, "config is not valid: field bearerToken must be a string, not a number"},
		{"bad base64", "https://r", `{"tlsClientConfig":{"caData":"` + secretValue + `!"}}`, "a TLS data field (caData, certData, keyData) is not valid base64"},
		{"bad proxy", "https://r", `{"proxyUrl":"http://` + secretValue + `:x:y/%zz"}`, "cluster secret 'argocd/c': proxyUrl is not a valid URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := ParseSecret(clusterSecret("c", map[string]string{"server": tc.server, "config": tc.config}))
			_, err := s.RESTConfig(&rest.Config{Host: "https://local"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secretValue) {
				t.Errorf("error holds a secret value: %v", err)
			}
		})
	}
}

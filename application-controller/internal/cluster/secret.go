package cluster

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// SecretTypeCluster is the value of the argocd.argoproj.io/secret-type
// label that makes a Secret a cluster Secret (argocd-contract §8.2).
const SecretTypeCluster = "cluster"

// requestTimeout bounds each request to a destination cluster, and QPS and
// burst its client's rate: Argo CD's client defaults (50 QPS, burst 100)
// with the timeout Eddy's other remote clients use.
const (
	requestTimeout = 30 * time.Second
	clientQPS      = 50
	clientBurst    = 100
)

// Secret is one cluster Secret as Argo CD reads it (argocd-contract §8.2):
// data keys name, server, config (JSON), namespaces (comma list),
// clusterResources ("true"), project; the skip-reconcile annotation.
type Secret struct {
	// SecretName is namespace/name, for messages.
	SecretName string
	// ResourceVersion keys the cached Target built from it.
	ResourceVersion string
	// Name and Server are the cluster's; Server without trailing slashes.
	Name, Server string
	// Namespaces, when set, are the only namespaces managed on the
	// cluster; ClusterResources then says whether cluster-scoped objects
	// are too.
	Namespaces       []string
	ClusterResources bool
	// Project, when set, scopes the cluster to that AppProject.
	Project string
	// SkipReconcile: the Secret's argocd.argoproj.io/skip-reconcile is
	// "true"; Argo CD then reconciles none of the cluster's Applications.
	SkipReconcile bool
	// Config is the parsed config key; ConfigErr why it could not be.
	Config    Config
	ConfigErr error
}

// Config is the JSON of a cluster Secret's config key, Argo CD's
// ClusterConfig: basic auth, a bearer token, TLS settings (PEM data
// base64-encoded in JSON), a proxy and compression. awsAuthConfig and
// execProviderConfig are only noted: Eddy runs no credential plugins.
type Config struct {
	Username           string           `json:"username,omitempty"`
	Password           string           `json:"password,omitempty"`
	BearerToken        string           `json:"bearerToken,omitempty"`
	TLSClientConfig    TLSClientConfig  `json:"tlsClientConfig"`
	AWSAuthConfig      *json.RawMessage `json:"awsAuthConfig,omitempty"`
	ExecProviderConfig *json.RawMessage `json:"execProviderConfig,omitempty"`
	ProxyURL           string           `json:"proxyUrl,omitempty"`
	DisableCompression bool             `json:"disableCompression,omitempty"`
}

// TLSClientConfig is the TLS part of Config. Insecure skips verifying the
// server's certificate, as Argo CD does when it is set.
type TLSClientConfig struct {
	Insecure   bool   `json:"insecure"`
	ServerName string `json:"serverName,omitempty"`
	CertData   []byte `json:"certData,omitempty"`
	KeyData    []byte `json:"keyData,omitempty"`
	CAData     []byte `json:"caData,omitempty"`
}

// hasCredentials: the config authenticates by basic auth or a token.
func (c Config) hasCredentials() bool {
	return c.Username != "" || c.Password != "" || c.BearerToken != ""
}

// ParseSecret reads a cluster Secret. It never fails: a config that is not
// valid JSON is kept in ConfigErr (with a message holding no value of the
// Secret), so the Secret still resolves by name and server and the
// Application reports why it cannot be used.
func ParseSecret(s *corev1.Secret) *Secret {
	out := &Secret{
		SecretName:       s.Namespace + "/" + s.Name,
		ResourceVersion:  s.ResourceVersion,
		Name:             string(s.Data["name"]),
		Server:           strings.TrimRight(string(s.Data["server"]), "/"),
		ClusterResources: string(s.Data["clusterResources"]) == "true",
		Project:          string(s.Data["project"]),
		SkipReconcile:    s.Annotations[argov1.AnnotationSkipReconcile] == "true",
	}
	for _, ns := range strings.Split(string(s.Data["namespaces"]), ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out.Namespaces = append(out.Namespaces, ns)
		}
	}
	if raw := s.Data["config"]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.Config); err != nil {
			out.Config = Config{}
			out.ConfigErr = fmt.Errorf("cluster secret '%s': config is not valid: %s", out.SecretName, jsonReason(err))
		}
	}
	return out
}

// jsonReason describes a JSON decoding error by position, field and type,
// never by the text at fault, which may be part of a credential.
func jsonReason(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var b64 base64.CorruptInputError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %s must be a %s, not a %s", typ.Field, typ.Type, typ.Value)
	case errors.As(err, &b64):
		return "a TLS data field (caData, certData, keyData) is not valid base64"
	}
	return "not a JSON object"
}

// RESTConfig is the client configuration of s, Argo CD's rules
// (argocd-contract §8.2): for the in-cluster server, local's configuration
// (the controller's own account) with the Secret's basic auth or token in
// place of local's credentials when it has any; for any other server, the
// Secret's server, credentials and TLS data. An execProviderConfig or
// awsAuthConfig is refused: Eddy runs no credential plugin. Errors name
// the Secret and the field, never a value.
func (s *Secret) RESTConfig(local *rest.Config) (*rest.Config, error) {
	if s.ConfigErr != nil {
		return nil, s.ConfigErr
	}
	c := s.Config
	switch {
	case s.Server == "":
		return nil, fmt.Errorf("cluster secret '%s' has no server", s.SecretName)
	case c.ExecProviderConfig != nil:
		return nil, fmt.Errorf("cluster secret '%s': execProviderConfig is not supported: Eddy does not run credential plugins; use a bearerToken or a client certificate (tlsClientConfig.certData and keyData)", s.SecretName)
	case c.AWSAuthConfig != nil:
		return nil, fmt.Errorf("cluster secret '%s': awsAuthConfig is not supported: Eddy does not run argocd-k8s-auth; use a bearerToken or a client certificate (tlsClientConfig.certData and keyData)", s.SecretName)
	}
	var cfg *rest.Config
	if s.Server == argov1.InClusterServer {
		cfg = rest.CopyConfig(local)
		if c.hasCredentials() {
			cfg.Username, cfg.Password, cfg.BearerToken, cfg.BearerTokenFile = c.Username, c.Password, c.BearerToken, ""
			cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
		}
	} else {
		t := c.TLSClientConfig
		cfg = &rest.Config{
			Host:     s.Server,
			Username: c.Username, Password: c.Password, BearerToken: c.BearerToken,
			TLSClientConfig: rest.TLSClientConfig{Insecure: t.Insecure, ServerName: t.ServerName,
				CertData: t.CertData, KeyData: t.KeyData, CAData: t.CAData},
		}
	}
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("cluster secret '%s': proxyUrl is not a valid URL", s.SecretName)
		}
		cfg.Proxy = http.ProxyURL(u)
	}
	cfg.DisableCompression = c.DisableCompression
	cfg.Timeout, cfg.QPS, cfg.Burst = requestTimeout, clientQPS, clientBurst
	cfg.UserAgent = "application-controller"
	return cfg, nil
}

// Package remotecluster builds the uncached client of another cluster from
// its rest.Config: the client a controller uses to act on a cluster it
// does not run in (kustomize-controller's spec.kubeConfig, Argo CD's
// cluster Secrets in application-controller).
package remotecluster

import (
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Client is an uncached client of one cluster. Its REST mapper discovers
// that cluster's kinds (lazily, again on a miss), never the local one's.
type Client struct {
	client.Client
	// HTTP carries every request; CloseIdleConnections on it when the
	// client is replaced, so that no connection to an old server or with
	// old credentials stays open.
	HTTP   *http.Client
	Mapper meta.RESTMapper
}

// New builds the Client of cfg with scheme's typed kinds (other kinds are
// read and written as unstructured). The error is client-go's: a TLS
// configuration that does not load, typically bad PEM data; it holds no
// credential.
func New(cfg *rest.Config, scheme *runtime.Scheme) (*Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{HTTPClient: hc, Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	return &Client{Client: c, HTTP: hc, Mapper: mapper}, nil
}

// DisplayHost is a server URL for messages: without user information,
// query or fragment, which may hold credentials.
func DisplayHost(host string) string {
	u, err := url.Parse(host)
	if err != nil {
		return "<unparsable server URL>"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

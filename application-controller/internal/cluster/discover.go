package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/pkg/remotecluster"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// ErrUnavailable is matched (errors.Is) by the errors of a cluster that
// does not answer discovery: unreachable, or refusing the credentials.
var ErrUnavailable = errors.New("destination cluster unavailable")

type unavailable struct{ msg string }

func (e *unavailable) Error() string        { return e.msg }
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }

// NewTarget builds the Target of cfg: an uncached client (scheme's typed
// kinds, nil for client-go's; any other kind unstructured) and the
// cluster's version and group/versions read by discovery, which also
// proves the cluster answers and accepts the credentials. Server and Name
// are left to the caller. The error is "failed to get cluster info for
// <server>: <reason>", Argo CD's words, the server shown without user
// information or query and the reason without the request URL; it matches
// ErrUnavailable.
func NewTarget(ctx context.Context, cfg *rest.Config, s *runtime.Scheme) (*Target, error) {
	if s == nil {
		s = scheme.Scheme
	}
	fail := func(err error) error {
		return &unavailable{msg: fmt.Sprintf("failed to get cluster info for %q: %s", remotecluster.DisplayHost(cfg.Host), redact.URLError(err))}
	}
	c, err := remotecluster.New(cfg, s)
	if err != nil {
		return nil, fail(err)
	}
	kv, apis, err := Discover(ctx, cfg)
	if err != nil {
		c.HTTP.CloseIdleConnections()
		return nil, fail(err)
	}
	return &Target{Client: c.Client, Reader: c.Client, Mapper: c.Mapper, Config: cfg,
		KubeVersion: kv, APIVersions: apis, http: c.HTTP}, nil
}

// Discover reads the version ("v1.33.1") and the group/versions
// ("apps/v1", "v1") of cfg's cluster, for Helm's .Capabilities; ctx
// bounds the first request, cfg.Timeout each. The error is client-go's
// (for rejected credentials, the 401: "the server has asked for the client
// to provide credentials").
func Discover(ctx context.Context, cfg *rest.Config) (string, []string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", nil, err
	}
	var v version.Info
	raw, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", nil, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", nil, fmt.Errorf("reading /version: %w", err)
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return "", nil, err
	}
	var gvs []string
	for _, g := range groups.Groups {
		for _, gv := range g.Versions {
			gvs = append(gvs, gv.GroupVersion)
		}
	}
	return v.GitVersion, gvs, nil
}

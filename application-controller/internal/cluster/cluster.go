// Package cluster resolves an Application's destination to the cluster it
// deploys to: the controller's own (in-cluster) or one declared by an Argo
// CD cluster Secret (argocd-contract §1.8, §8.2), with an uncached client,
// REST mapper and Helm capabilities for each.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Target is everything the reconciler needs to act on one destination
// cluster.
type Target struct {
	// Server is the resolved server URL (https://kubernetes.default.svc
	// for in-cluster), Name the cluster's name ("in-cluster" for the local
	// one unless a cluster Secret names it).
	Server string
	Name   string
	// Client writes (and, for a remote cluster, reads uncached); Reader
	// reads uncached. Both handle unstructured objects through Mapper,
	// which discovers this cluster's kinds.
	Client client.Client
	Reader client.Reader
	Mapper meta.RESTMapper
	Config *rest.Config
	// KubeVersion (e.g. "v1.33.1") and APIVersions ("group/version") are
	// the cluster's, for Helm's .Capabilities.
	KubeVersion string
	APIVersions []string

	// Namespaces, when set, are the only namespaces Argo CD manages on
	// the cluster, and ClusterResources whether it manages cluster-scoped
	// objects then. Project, when set, scopes the cluster to that
	// AppProject. SkipReconcile: the cluster Secret asks that none of its
	// Applications be reconciled. All from the cluster Secret (§8.2).
	Namespaces       []string
	ClusterResources bool
	Project          string
	SkipReconcile    bool

	http *http.Client // closed when the Secret changes or goes
}

// Registry resolves destinations to Targets, caching a Target per cluster
// Secret (by its resourceVersion) and the in-cluster one.
type Registry struct {
	// Client reads the cluster Secrets in Namespace (the controller's);
	// Secrets are listed on every For, so it should not cache them.
	Client    client.Client
	Namespace string
	// Local is the controller's own cluster.
	Local *Target
	// Scheme gives remote clients their typed kinds; nil: client-go's.
	Scheme *runtime.Scheme

	mu      sync.Mutex
	targets map[string]*Target // by Secret namespace/name
	version map[string]string  // resourceVersion each target was built from
}

// ErrNoCluster is matched (errors.Is) by For's errors that say the
// destination names no cluster: both or neither of server and name, or no
// cluster with them. Argo CD then deletes nothing when the Application is
// deleted: it drops the resource finalizers (argocd-contract §1.12).
var ErrNoCluster = errors.New("no such destination cluster")

// noCluster is a resolution failure, in Argo CD's words.
type noCluster struct{ msg string }

func (e *noCluster) Error() string        { return e.msg }
func (e *noCluster) Is(target error) bool { return target == ErrNoCluster }

func noClusterf(format string, args ...any) error {
	return &noCluster{msg: fmt.Sprintf(format, args...)}
}

// For resolves dest as Argo CD does (argocd-contract §1.8): exactly one
// of server (trailing slashes ignored) or name; a cluster Secret with that
// server or name, else in-cluster for https://kubernetes.default.svc or
// the name "in-cluster". A Secret for the in-cluster server gives the
// local cluster its name. Errors are Argo CD's words for resolution
// ("application destination can't have both name and server defined: …",
// "there are no clusters with this name: …", "error getting cluster by
// server …", all matching ErrNoCluster), the Secret's fault (unsupported
// auth, bad config), or the cluster's answer to discovery (unreachable,
// 401); none holds a secret value.
func (r *Registry) For(ctx context.Context, dest argov1.ApplicationDestination) (*Target, error) {
	server := strings.TrimRight(dest.Server, "/")
	switch {
	case dest.Name != "" && dest.Server != "":
		return nil, noClusterf("application destination can't have both name and server defined: %s %s", dest.Name, dest.Server)
	case dest.Name == "" && server == "":
		return nil, noClusterf("Destination server missing from app spec")
	}
	secrets, err := r.secrets(ctx)
	if err != nil {
		return nil, err
	}
	s, err := match(secrets, dest.Name, server)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return r.Local, nil
	}
	return r.target(ctx, s)
}

// match picks the Secret of name or server: nil for the local cluster
// when no Secret declares it.
func match(secrets []*Secret, name, server string) (*Secret, error) {
	var found []*Secret
	for _, s := range secrets {
		if (name != "" && s.Name == name) || (name == "" && s.Server == server) {
			found = append(found, s)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1 && name != "":
		servers := make([]string, len(found))
		for i, s := range found {
			servers[i] = s.Server
		}
		return nil, noClusterf("there are %d clusters with the same name: [%s]", len(found), strings.Join(servers, " "))
	case len(found) > 1:
		return found[0], nil // secrets are sorted by name: a stable pick
	case name == argov1.InClusterName || (name == "" && server == argov1.InClusterServer):
		return nil, nil
	case name != "":
		return nil, noClusterf("there are no clusters with this name: %s", name)
	}
	return nil, noClusterf("error getting cluster by server %q: cluster %q not found", server, server)
}

// secrets lists the cluster Secrets, sorted by name, and forgets the
// Targets of Secrets that are gone.
func (r *Registry) secrets(ctx context.Context) ([]*Secret, error) {
	var list corev1.SecretList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace),
		client.MatchingLabels{argov1.LabelSecretType: SecretTypeCluster}); err != nil {
		return nil, fmt.Errorf("listing cluster Secrets: %w", err)
	}
	out := make([]*Secret, 0, len(list.Items))
	seen := map[string]bool{}
	for i := range list.Items {
		s := ParseSecret(&list.Items[i])
		out = append(out, s)
		seen[s.SecretName] = true
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SecretName < out[j].SecretName })
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, t := range r.targets {
		if !seen[k] {
			t.close()
			delete(r.targets, k)
			delete(r.version, k)
		}
	}
	return out, nil
}

// target returns the cached Target of s, building it when s is new or
// changed. The build (discovery, up to the request timeout) runs without
// the lock so that one unreachable cluster does not hold up the others.
func (r *Registry) target(ctx context.Context, s *Secret) (*Target, error) {
	r.mu.Lock()
	t, ok := r.targets[s.SecretName]
	if ok && r.version[s.SecretName] == s.ResourceVersion {
		r.mu.Unlock()
		return t, nil
	}
	r.mu.Unlock()
	t, err := r.build(ctx, s)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.targets == nil {
		r.targets, r.version = map[string]*Target{}, map[string]string{}
	}
	if old := r.targets[s.SecretName]; old != nil && old != t {
		old.close()
	}
	r.targets[s.SecretName], r.version[s.SecretName] = t, s.ResourceVersion
	return t, nil
}

// build makes s's Target: for the in-cluster server without credentials
// of its own, Local under the Secret's name; otherwise a new client
// checked by discovery.
func (r *Registry) build(ctx context.Context, s *Secret) (*Target, error) {
	var t *Target
	if s.Server == argov1.InClusterServer && s.ConfigErr == nil && !s.Config.hasCredentials() &&
		s.Config.ExecProviderConfig == nil && s.Config.AWSAuthConfig == nil && r.Local != nil {
		local := *r.Local
		t = &local
		t.http = nil // Local's connections are not the Secret's to close
	} else {
		var localCfg *rest.Config
		if r.Local != nil {
			localCfg = r.Local.Config
		}
		if s.Server == argov1.InClusterServer && localCfg == nil {
			return nil, fmt.Errorf("cluster secret '%s': the in-cluster configuration is not available", s.SecretName)
		}
		cfg, err := s.RESTConfig(localCfg)
		if err != nil {
			return nil, err
		}
		if t, err = NewTarget(ctx, cfg, r.Scheme); err != nil {
			return nil, err
		}
	}
	t.Server, t.Name = s.Server, s.Name
	if t.Name == "" && s.Server == argov1.InClusterServer {
		t.Name = argov1.InClusterName
	}
	t.Namespaces, t.ClusterResources, t.Project, t.SkipReconcile = s.Namespaces, s.ClusterResources, s.Project, s.SkipReconcile
	return t, nil
}

func (t *Target) close() {
	if t.http != nil {
		t.http.CloseIdleConnections()
	}
}

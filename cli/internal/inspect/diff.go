package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The actions of an ObjectDiff.
const (
	ActionCreated    = "created"
	ActionConfigured = "configured"
	ActionUnchanged  = "unchanged"
	ActionSkipped    = "skipped" // ssa's skip annotation: never applied
	ActionDeleted    = "deleted"
)

// FieldManager is kustomize-controller's field manager, under which the
// dry-runs apply.
const FieldManager = "kustomize-controller"

// artifactLimits bound an artifact read into memory: kustomize-controller's
// (100 MiB of file content).
var artifactLimits = artifact.Limits{MaxBytes: 100 << 20, MaxFiles: artifact.DefaultLimits.MaxFiles}

// ObjectDiff is what applying one object of a Kustomization would do.
type ObjectDiff struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Action is one of the Action constants. An object whose dry-run changes
	// only managed fields is unchanged.
	Action string `json:"action"`
	// Fields of a configured object: Desired is the built value, Live the
	// cluster's (JSON, "<absent>" when absent, Secret values masked).
	Fields []ssa.FieldDrift `json:"fields,omitempty"`
}

// String is `Kind/namespace/name`, or `Kind/name` for a cluster-scoped object.
func (d ObjectDiff) String() string {
	return (&Node{APIVersion: d.APIVersion, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}).String()
}

// Build builds the tree t (an artifact's, or a local directory's) as
// kustomize-controller builds ks: its spec's overlays, postBuild
// substitution with variables read through c (substituteFrom; with a nil c
// only spec.postBuild.substitute), strict only when strict, at path (the
// directory in t standing for spec.path; "" for spec.path itself). The
// objects carry the owner labels the controller sets before it applies;
// SOPS-encrypted values are SOPSMask (Flux compatible). Errors: reading
// substituteFrom, or kustomize's build error.
func Build(ctx context.Context, c client.Reader, ks *kustomizev1.Kustomization, t *kustomize.Tree, path string, strict bool) ([]*unstructured.Unstructured, error) {
	vars := map[string]string{}
	if c != nil {
		var err error
		if vars, err = kustomize.Variables(ctx, c, ks); err != nil {
			return nil, err
		}
	} else if ks.Spec.PostBuild != nil {
		for key, v := range ks.Spec.PostBuild.Substitute {
			vars[key] = v
		}
	}
	opts := kustomize.SpecOptions(ks, vars, !strict)
	if path != "" {
		opts.Path = path
	}
	res, err := kustomize.Build(t, opts)
	if err != nil {
		return nil, err
	}
	kustomize.SetOwnerLabels(res.Objects, ks.Name, ks.Namespace)
	for _, u := range res.Objects {
		maskSOPS(u)
	}
	return res.Objects, nil
}

// Diff dry-runs each of objs (as built for ks) with server-side apply as
// kustomize-controller (spec.force, spec.ignore) through c, in apply
// order, and lists what applying would do; when spec.prune, the objects of
// ks's inventory no longer built follow as deleted (sorted by
// Kind/namespace/name). A SOPSMask value is compared as the live value
// (what only the controller can decrypt is not diffed). objs are not
// modified. The error is the first dry-run's ("<Kind>/<ns>/<name> dry-run
// failed: <reason>"), reading a masked object's live state, or
// spec.ignore's.
func Diff(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, objs []*unstructured.Unstructured) ([]ObjectDiff, error) {
	ignore, err := kustomize.IgnoreRules(ks.Spec.Ignore)
	if err != nil {
		return nil, err
	}
	objs = append([]*unstructured.Unstructured(nil), objs...)
	ssa.SortObjects(objs)
	mgr := &ssa.Manager{Client: c, Owner: FieldManager}
	var out []ObjectDiff
	var built []ssa.ObjMeta
	for _, u := range objs {
		if hasMask(u) { // Build masked it
			if u, err = unmaskFromLive(ctx, c, u); err != nil {
				return nil, err
			}
		}
		action, fields, err := mgr.DryRun(ctx, u, ssa.ApplyOptions{Force: ks.Spec.Force, Ignore: ignore})
		if err != nil {
			return nil, err
		}
		built = append(built, ssa.MetaOf(u))
		d := ObjectDiff{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		switch action {
		case ssa.Created:
			d.Action = ActionCreated
		case ssa.Configured, ssa.Replaced:
			d.Action, d.Fields = ActionConfigured, fields
			if len(fields) == 0 {
				d.Action = ActionUnchanged // only managed fields would change
			}
		case ssa.Skipped:
			d.Action = ActionSkipped
		default:
			d.Action = ActionUnchanged
		}
		out = append(out, d)
	}
	if ks.Status.Inventory == nil || !ks.Spec.Prune {
		return out, nil
	}
	var ids []string
	version := map[string]string{}
	for _, e := range ks.Status.Inventory.Entries {
		ids = append(ids, e.ID)
		version[e.ID] = e.Version
	}
	stale, _ := ssa.Stale(ids, built) // ids that do not parse are never pruned
	var deleted []ObjectDiff
	for id, m := range stale {
		gv := m.GroupKind.WithVersion(version[id]).GroupVersion()
		deleted = append(deleted, ObjectDiff{APIVersion: gv.String(), Kind: m.GroupKind.Kind,
			Namespace: m.Namespace, Name: m.Name, Action: ActionDeleted})
	}
	sort.Slice(deleted, func(i, j int) bool { return deleted[i].String() < deleted[j].String() })
	return append(out, deleted...), nil
}

// DiffKustomization builds ks from its source's artifact (status.artifact
// of spec.sourceRef, a GitRepository or OCIRepository: FetchArtifact) as
// the controller does (Build, non-strict substitution) and diffs the
// objects against the cluster (Diff), as the user of c. It returns the
// artifact's revision. Errors (stable text, no local paths): a Kustomization
// of a remote cluster (spec.kubeConfig); the source's Get error, or one
// without an artifact; one not signed by source-controller when the key is
// readable (checkPublished); FetchArtifact's, Build's and Diff's errors.
func DiffKustomization(ctx context.Context, cfg *rest.Config, c client.Client, ks *kustomizev1.Kustomization) (string, []ObjectDiff, error) {
	id := fmt.Sprintf("Kustomization/%s/%s", ks.Namespace, ks.Name)
	if ks.Spec.KubeConfig != nil {
		return "", nil, fmt.Errorf("%s applies to a remote cluster (spec.kubeConfig): no diff against this one", id)
	}
	art, src, err := sourceArtifact(ctx, c, ks)
	if err != nil {
		return "", nil, err
	}
	if err := checkPublished(ctx, c, ks, art); err != nil {
		return "", nil, fmt.Errorf("%s artifact %s: %w", src, art.Revision, err)
	}
	t, err := FetchArtifact(ctx, cfg, art)
	if err != nil {
		return "", nil, fmt.Errorf("%s artifact %s: %w", src, art.Revision, err)
	}
	objs, err := Build(ctx, c, ks, t, "", false)
	if err != nil {
		return "", nil, fmt.Errorf("%s build failed: %w", id, err)
	}
	diff, err := Diff(ctx, c, ks, objs)
	if err != nil {
		return "", nil, err
	}
	return art.Revision, diff, nil
}

// sourceArtifact reads the artifact of ks's source, and names the source
// `Kind/namespace/name`.
func sourceArtifact(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization) (*meta.Artifact, string, error) {
	src, key, id, ok := kustomize.SourceOf(ks)
	if !ok {
		return nil, id, fmt.Errorf("source kind %q is not supported", ks.Spec.SourceRef.Kind)
	}
	if err := c.Get(ctx, key, src); err != nil {
		return nil, id, fmt.Errorf("source %s: %w", id, err)
	}
	a := controllerkit.ArtifactOf(src)
	if a == nil || a.URL == "" {
		return nil, id, fmt.Errorf("source %s has no artifact yet", id)
	}
	return a, id, nil
}

// FetchArtifact downloads art (art.URL), verifies its bytes against
// art.Digest and reads its files. The URL is tried directly when its host
// resolves from here; when it does not, or the download fails, and the host
// is an in-cluster Service name (<svc>.<ns>[.svc[.<domain>]]), through the
// API server's service proxy with cfg's credentials
// (/api/v1/namespaces/<ns>/services/<svc>:<port>/proxy/<path>). Errors
// name the artifact URL (without query), never a local path: a digest
// mismatch is artifact.ErrDigestMismatch, a 404 artifact.ErrNotFound; an
// archive of more than 100 MiB of files is refused, as the controller does.
func FetchArtifact(ctx context.Context, cfg *rest.Config, art *meta.Artifact) (*kustomize.Tree, error) {
	u, err := url.Parse(art.URL)
	if err != nil {
		return nil, fmt.Errorf("artifact URL: %w", err)
	}
	var t *kustomize.Tree
	read := func(used *bool) func(r io.Reader, lim artifact.Limits) error {
		return func(r io.Reader, lim artifact.Limits) error {
			*used = true
			var err error
			t, err = kustomize.ReadTree(r, lim)
			return err
		}
	}
	svc, svcNS, isSvc := serviceOf(u.Hostname())
	var direct error
	if resolves(ctx, u.Hostname()) {
		used := false
		f := &artifact.Fetcher{Client: &http.Client{Timeout: 30 * time.Second}, RetryWait: time.Second, Limits: artifactLimits}
		direct = f.FetchWith(ctx, art.URL, art.Digest, read(&used))
		// Verified bytes (used), a wrong digest or a 404 are the answer.
		if direct == nil || used || !isSvc || errors.Is(direct, artifact.ErrDigestMismatch) || errors.Is(direct, artifact.ErrNotFound) {
			return t, direct
		}
	} else if !isSvc {
		return nil, fmt.Errorf("artifact URL host %q does not resolve and is no in-cluster Service name", u.Hostname())
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	api, err := url.Parse(cfg.Host)
	if err != nil || api.Host == "" {
		if api, err = url.Parse("https://" + cfg.Host); err != nil {
			return nil, fmt.Errorf("API server address %q: %w", cfg.Host, err)
		}
	}
	api.Path = strings.TrimSuffix(api.Path, "/") + fmt.Sprintf("/api/v1/namespaces/%s/services/%s:%s/proxy", svcNS, serviceScheme(u.Scheme)+svc, port)
	f := &artifact.Fetcher{Client: &http.Client{Timeout: 30 * time.Second, Transport: &proxyTransport{base: rt, prefix: api}},
		RetryWait: time.Second, Limits: artifactLimits}
	used := false
	if err := f.FetchWith(ctx, art.URL, art.Digest, read(&used)); err != nil {
		if direct != nil && !used && !errors.Is(err, artifact.ErrDigestMismatch) && !errors.Is(err, artifact.ErrNotFound) {
			return nil, fmt.Errorf("%w (and through the API server's service proxy: %v)", direct, err)
		}
		return nil, err
	}
	return t, nil
}

// serviceScheme is the scheme prefix of a service proxy path: "https:" for
// an https URL, none for http.
func serviceScheme(scheme string) string {
	if scheme == "https" {
		return "https:"
	}
	return ""
}

// serviceOf reads an in-cluster Service name: <svc>.<ns>, <svc>.<ns>.svc or
// <svc>.<ns>.svc.<cluster domain>, with or without a final dot.
func serviceOf(host string) (svc, ns string, ok bool) {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) < 2 || net.ParseIP(host) != nil || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	if len(parts) > 2 && parts[2] != "svc" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// resolves reports whether host is an IP address or resolves within a
// few seconds.
func resolves(ctx context.Context, host string) bool {
	if net.ParseIP(host) != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	return err == nil && len(addrs) > 0
}

// proxyTransport sends each request to the same path under prefix (the API
// server's service proxy), with the API server's credentials (base).
type proxyTransport struct {
	base   http.RoundTripper
	prefix *url.URL
}

func (p *proxyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	u := *p.prefix
	u.Path = p.prefix.Path + req.URL.Path
	u.RawPath = ""
	u.RawQuery = req.URL.RawQuery
	r.URL, r.Host = &u, ""
	return p.base.RoundTrip(r)
}

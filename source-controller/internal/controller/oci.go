package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/oci"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/pkg/secretopts"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/registry"
	corev1 "k8s.io/api/core/v1"
)

// This file holds the OCI artifact fetching of source-controller: the
// reference resolution, the registry credentials and the layer pull.
// OCIRepositoryReconciler uses it; it knows nothing of Kubernetes objects
// beyond the Secrets it reads credentials from.

// errInvalidOCIURL is wrapped by parseOCIRepository's errors: only a spec
// change helps.
var errInvalidOCIURL = errors.New("invalid OCI URL")

// parseOCIRepository returns the repository of an OCIRepository's
// spec.url, `oci://<host>[:port]/<path>` without tag or digest. insecure
// allows plain HTTP. Flux compatible (its messages), except that
// credentials written in the URL are masked (redact.URL).
func parseOCIRepository(rawURL string, insecure bool) (name.Repository, error) {
	if !strings.HasPrefix(rawURL, sourcev1.OCIRepositoryPrefix) {
		return name.Repository{}, fmt.Errorf("%w: URL must be in format 'oci://<domain>/<org>/<repo>'", errInvalidOCIURL)
	}
	s := strings.TrimPrefix(rawURL, sourcev1.OCIRepositoryPrefix)
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(s, opts...)
	if err != nil {
		// go-containerregistry quotes the registry, userinfo included.
		return name.Repository{}, fmt.Errorf("%w: %s", errInvalidOCIURL, redact.Quoted(err.Error(), rawURL))
	}
	if parts := strings.Split(strings.TrimPrefix(s, repo.RegistryStr()), ":"); len(parts) > 1 {
		return name.Repository{}, fmt.Errorf("%w: URL must not contain a tag; remove ':%s'", errInvalidOCIURL, parts[1])
	}
	return repo, nil
}

// ociClient talks to one OCI repository for one reconcile: its remote
// options carry the context (timeout), credentials and transport, and a
// shared puller so the reconcile pings the registry once.
type ociClient struct {
	repo name.Repository
	opts []remote.Option
}

// ociTransport is what authenticates and carries an OCIRepository's
// requests: a keychain (anonymous when nil), TLS settings and a proxy.
type ociTransport struct {
	Keychain authn.Keychain
	TLS      *tls.Config
	Proxy    *url.URL
}

// newOCIClient returns a client of repo; ctx bounds every request.
func newOCIClient(ctx context.Context, repo name.Repository, t ociTransport) (*ociClient, error) {
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	if t.TLS != nil {
		tr.TLSClientConfig = t.TLS
	}
	if t.Proxy != nil {
		tr.Proxy = http.ProxyURL(t.Proxy)
	}
	kc := t.Keychain
	if kc == nil {
		kc = authn.NewMultiKeychain() // anonymous
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuthFromKeychain(kc),
		remote.WithUserAgent("eddy/source-controller")}
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	return &ociClient{repo: repo, opts: append(opts, remote.Reuse(p))}, nil
}

// ref returns the reference to pull: spec.ref.digest, else the highest tag
// that satisfies spec.ref.semver (among those spec.ref.semverFilter
// matches), else spec.ref.tag, else `latest`. Only semver asks the
// registry (a tag listing). Flux compatible.
func (c *ociClient) ref(ref *sourcev1.OCIRepositoryRef, mediaType string) (name.Reference, error) {
	switch {
	case ref != nil && ref.Digest != "":
		return c.repo.Digest(ref.Digest), nil // checked by revision, as in Flux
	case ref != nil && ref.SemVer != "":
		return c.tagBySemver(ref.SemVer, ref.SemverFilter, mediaType)
	case ref != nil && ref.Tag != "":
		return c.repo.Tag(ref.Tag), nil
	}
	return c.repo.Tag(name.DefaultTag), nil
}

// tagBySemver lists the repository's tags and returns the one
// pickSemverTag picks for spec.ref.semver exp, spec.ref.semverFilter
// filter and the layer media type mediaType.
func (c *ociClient) tagBySemver(exp, filter, mediaType string) (name.Reference, error) {
	tags, err := remote.List(c.repo, c.opts...)
	if err != nil {
		return nil, err
	}
	tag, err := pickSemverTag(tags, exp, filter, mediaType)
	if err != nil {
		return nil, err
	}
	return c.repo.Tag(tag), nil
}

// pickSemverTag returns the tag, among those filter (a regular
// expression, "" for all) matches, of the highest version satisfying the
// constraint exp. Flux compatible (source-controller's getTagBySemver and
// oci.ParseVersion): a tag is a version only with three dot-separated
// parts (a floating `8` or `7.1` is not), a `v` prefix is allowed, and for
// the Helm chart layer a `_` in a tag stands for the `+` Helm's OCI tags
// cannot hold; its messages ("semver '<exp>' parse error:
// …", "no match found for semver: <exp>").
func pickSemverTag(tags []string, exp, filter, mediaType string) (string, error) {
	if filter != "" {
		re, err := regexp.Compile(filter)
		if err != nil {
			return "", err
		}
		kept := make([]string, 0, len(tags))
		for _, t := range tags {
			if re.MatchString(t) {
				kept = append(kept, t)
			}
		}
		tags = kept
	}
	constraint, err := semver.NewConstraint(exp)
	if err != nil {
		return "", fmt.Errorf("semver '%s' parse error: %w", exp, err)
	}
	helmTags := mediaType == registry.ChartLayerMediaType
	var matching []*semver.Version
	for _, t := range tags {
		if helmTags {
			t = strings.ReplaceAll(t, "_", "+")
		}
		v, err := oci.ParseVersion(t)
		if err == nil && constraint.Check(v) {
			matching = append(matching, v)
		}
	}
	if len(matching) == 0 {
		return "", fmt.Errorf("no match found for semver: %s", exp)
	}
	sort.Sort(sort.Reverse(semver.Collection(matching)))
	tag := matching[0].Original()
	if helmTags {
		tag = strings.ReplaceAll(tag, "+", "_")
	}
	return tag, nil
}

// revision returns the revision ref names now: `sha256:<hex>` for a digest
// (no request), `<tag>@sha256:<hex>` for a tag, read with one HEAD of the
// manifest, or a GET when the registry refuses HEAD. Flux compatible.
func (c *ociClient) revision(ref name.Reference) (string, error) {
	switch r := ref.(type) {
	case name.Digest:
		h, err := gcrv1.NewHash(r.DigestStr())
		if err != nil {
			return "", err
		}
		return h.String(), nil
	case name.Tag:
		desc, err := remote.Head(r, c.opts...)
		if err != nil {
			d, gerr := remote.Get(r, c.opts...)
			if gerr != nil {
				return "", gerr
			}
			desc = &d.Descriptor
		}
		return r.TagStr() + "@" + desc.Digest.String(), nil
	}
	return "", fmt.Errorf("unsupported reference type: %T", ref)
}

// digestOfRevision is the `sha256:<hex>` of a revision.
func digestOfRevision(rev string) string {
	return rev[strings.LastIndex(rev, "@")+1:]
}

// ociLayer is the selected layer of a pulled manifest.
type ociLayer struct {
	// Annotations are the manifest's annotations (Flux puts them in
	// status.artifact.metadata).
	Annotations map[string]string
	// Size is the layer's compressed size from the manifest, in bytes.
	Size int64
	// Content reads the compressed bytes, verified against the layer
	// digest at EOF and cut at the size limit; the caller closes it.
	Content io.ReadCloser
}

// image returns the artifact at the digest of rev; its manifest is fetched
// now, its blobs only when read.
func (c *ociClient) image(rev string) (gcrv1.Image, error) {
	img, err := remote.Image(c.repo.Digest(digestOfRevision(rev)), c.opts...)
	if err != nil {
		return nil, err
	}
	return img, nil
}

// selectLayer opens img's layer of mediaType (the first layer when "")
// without reading more than maxSize compressed bytes: a layer that the
// manifest says is larger is refused before any blob request. Flux
// compatible (its messages for a missing layer).
func selectLayer(img gcrv1.Image, mediaType string, maxSize int64) (*ociLayer, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("failed to parse artifact manifest: %w", err)
	}
	if len(m.Layers) == 0 {
		return nil, errors.New("no layers found in artifact")
	}
	desc := m.Layers[0]
	if mediaType != "" {
		found := false
		for _, l := range m.Layers {
			if string(l.MediaType) == mediaType {
				desc, found = l, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("failed to find layer with media type '%s' in artifact", mediaType)
		}
	}
	if desc.Size > maxSize {
		return nil, fmt.Errorf("layer '%s' has %d bytes, over the limit of %d bytes", desc.Digest, desc.Size, maxSize)
	}
	layer, err := img.LayerByDigest(desc.Digest)
	if err != nil {
		return nil, fmt.Errorf("failed to extract the first layer from artifact: %w", err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, fmt.Errorf("failed to extract the first layer from artifact: %w", err)
	}
	return &ociLayer{Annotations: m.Annotations, Size: desc.Size, Content: &limitedReadCloser{rc: rc, left: maxSize, limit: maxSize}}, nil
}

// insecureTLS is the TLS configuration of spec.insecure without
// certSecretRef: certificates are not verified. Flux allows this for
// OCIRepository only, for registries tools like crane reach the same way.
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // spec.insecure asks for it
}

// limitedReadCloser fails a read past its limit (the registry sent more
// than the manifest said).
type limitedReadCloser struct {
	rc          io.ReadCloser
	left, limit int64
}

func (l *limitedReadCloser) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		n, err := l.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("the registry sent more than the limit of %d bytes", l.limit)
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedReadCloser) Close() error { return l.rc.Close() }

// newDockerConfigKeychain parses the Secrets' Docker configs
// (`.dockerconfigjson` of kubernetes.io/dockerconfigjson, or the legacy
// `.dockercfg`), the first Secret with an entry for the registry winning,
// as the kubelet reads image pull secrets; an entry's `auth` is read only
// when it has neither username nor password. Errors name the Secret and
// key, never a value.
func newDockerConfigKeychain(secrets []corev1.Secret) (secretopts.Keychain, error) {
	var kc secretopts.Keychain
	for _, s := range secrets {
		var c secretopts.Credentials
		var err error
		key := corev1.DockerConfigJsonKey
		switch {
		case len(s.Data[corev1.DockerConfigJsonKey]) > 0:
			c, err = secretopts.ParseDockerConfigJSON(s.Data[key], secretopts.AuthIfNoUsernamePassword)
		case len(s.Data[corev1.DockerConfigKey]) > 0:
			key = corev1.DockerConfigKey
			c, err = secretopts.ParseDockerCfg(s.Data[key], secretopts.AuthIfNoUsernamePassword)
		default:
			return nil, fmt.Errorf("secret '%s/%s' has neither '%s' nor '%s'", s.Namespace, s.Name, corev1.DockerConfigJsonKey, corev1.DockerConfigKey)
		}
		var ae *secretopts.AuthError
		switch {
		case errors.As(err, &ae):
			return nil, fmt.Errorf("secret '%s/%s': the 'auth' of registry '%s' is not base64 of user:password", s.Namespace, s.Name, ae.Registry)
		case err != nil:
			return nil, fmt.Errorf("secret '%s/%s': '%s' is not a Docker config", s.Namespace, s.Name, key)
		}
		kc = append(kc, c)
	}
	return kc, nil
}

// proxyURL reads a proxy Secret's data (proxyOptions: `address`,
// `username`, `password`) as the proxy URL of an HTTP transport.
func proxyURL(data map[string][]byte) (*url.URL, error) {
	u, err := secretopts.ProxyURL(data)
	switch {
	case errors.Is(err, secretopts.ErrNoProxyAddress):
		return nil, errors.New("invalid proxy secret: 'address' is required")
	case err != nil:
		return nil, errors.New("invalid proxy secret: 'address' is not a URL")
	}
	return u, nil
}

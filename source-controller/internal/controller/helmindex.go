package controller

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/pkg/secretopts"
	"helm.sh/helm/v3/pkg/chart"
	helmrepo "helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// DefaultHelmIndexMaxSize is the default of --helm-index-max-size: the
// largest index.yaml a HelmRepository may serve, 50 MiB. Flux compatible.
const DefaultHelmIndexMaxSize int64 = 50 << 20

// indexClient is how one HelmRepository's index is fetched: its basic
// auth, TLS and timeout.
type indexClient struct {
	username, password string
	tls                *tls.Config
	timeout            time.Duration
}

// newIndexClient reads the Secrets obj names: spec.secretRef for
// `username`/`password` (and TLS keys when there is no certSecretRef) and
// spec.certSecretRef for `ca.crt`, `tls.crt` and `tls.key`. Its errors are
// Flux's texts (source-controller's getter client options and fluxcd/pkg
// runtime/secrets); they name Secrets and keys, never their values.
func newIndexClient(ctx context.Context, c client.Reader, obj *sourcev1.HelmRepository) (*indexClient, error) {
	ic := &indexClient{timeout: repositoryTimeout(obj)}
	if ref := obj.Spec.CertSecretRef; ref != nil {
		secret := &corev1.Secret{}
		key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
		if err := c.Get(ctx, key, secret); err != nil {
			return nil, fmt.Errorf("failed to get TLS authentication secret '%s': %w", key, err)
		}
		cfg, err := tlsConfigFromSecret(secret, true)
		if err != nil {
			return nil, fmt.Errorf("failed to construct Helm client's TLS config: %w", err)
		}
		ic.tls = cfg
	}
	if ref := obj.Spec.SecretRef; ref != nil {
		secret := &corev1.Secret{}
		key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
		if err := c.Get(ctx, key, secret); err != nil {
			return nil, fmt.Errorf("failed to get authentication secret '%s': %w", key, err)
		}
		user, hasUser := secret.Data["username"]
		pass, hasPass := secret.Data["password"]
		switch {
		case hasUser && !hasPass:
			return nil, fmt.Errorf("failed to detect authentication methods: secret '%s': malformed basic auth - has 'username' but missing 'password'", key)
		case hasPass && !hasUser:
			return nil, fmt.Errorf("failed to detect authentication methods: secret '%s': malformed basic auth - has 'password' but missing 'username'", key)
		}
		ic.username, ic.password = string(user), string(pass)
		if ic.tls == nil {
			cfg, err := tlsConfigFromSecret(secret, false)
			if err != nil {
				return nil, fmt.Errorf("failed to detect authentication methods: %w", err)
			}
			ic.tls = cfg
		}
	}
	return ic, nil
}

// repositoryTimeout is a HelmRepository's spec.timeout, 1m when unset: the
// bound of its index fetch and chart downloads. Flux compatible.
func repositoryTimeout(obj *sourcev1.HelmRepository) time.Duration {
	if obj.Spec.Timeout != nil && obj.Spec.Timeout.Duration > 0 {
		return obj.Spec.Timeout.Duration
	}
	return time.Minute
}

// tlsConfigFromSecret builds a TLS configuration from a Secret's `ca.crt`
// (added to the system pool) and `tls.crt`/`tls.key` pair
// (secretopts.TLSConfig, without the deprecated key names). With required,
// a Secret with neither is an error; otherwise it yields nil. Errors are
// Flux's texts and name the Secret and keys.
func tlsConfigFromSecret(secret *corev1.Secret, required bool) (*tls.Config, error) {
	ref := client.ObjectKeyFromObject(secret)
	cfg, err := secretopts.TLSConfig(secret.Data, false)
	var missing *secretopts.MissingKeyError
	var pair *secretopts.KeyPairError
	switch {
	case err == nil:
		return cfg, nil
	case errors.Is(err, secretopts.ErrNoTLSKeys) && !required:
		return nil, nil
	case errors.Is(err, secretopts.ErrNoTLSKeys):
		return nil, fmt.Errorf("secret '%s' must contain either 'ca.crt' or both 'tls.crt' and 'tls.key'", ref)
	case errors.As(err, &missing):
		return nil, fmt.Errorf("secret '%s' contains '%s' but missing '%s'", ref, missing.Present, missing.Missing)
	case errors.As(err, &pair):
		return nil, fmt.Errorf("failed to parse TLS certificate and key: %w", pair.Err)
	case errors.Is(err, secretopts.ErrInvalidCA):
		return nil, errors.New("failed to parse CA certificate")
	}
	return nil, err
}

// indexURL is `<repository URL>/index.yaml`, path-joined (a trailing slash
// of the repository URL does not double). Flux compatible.
func indexURL(u *url.URL) string {
	v := *u
	v.RawPath = path.Join(v.RawPath, "index.yaml")
	v.Path = path.Join(v.Path, "index.yaml")
	return v.String()
}

// fetch downloads the index at href: one GET with basic auth and TLS,
// bounded by the timeout and by maxSize bytes. Errors carry Flux's texts
// (Helm's HTTP getter, source-controller's chart repository) with
// credentials of the URL masked.
func (ic *indexClient) fetch(ctx context.Context, href string, maxSize int64) ([]byte, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if ic.tls != nil {
		tr.TLSClientConfig = ic.tls
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: ic.timeout}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, href, nil)
	if err != nil {
		return nil, errors.New(redact.Message(err.Error()))
	}
	req.Header.Set("User-Agent", ControllerName)
	if ic.username != "" && ic.password != "" {
		req.SetBasicAuth(ic.username, ic.password)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, errors.New(redact.Message(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to fetch %s : %s", redact.URL(href), resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSize+1))
	if err != nil {
		return nil, errors.New(redact.Message(err.Error()))
	}
	if int64(len(data)) > maxSize {
		return nil, fmt.Errorf("index exceeds the maximum index file size of %d bytes", maxSize)
	}
	return data, nil
}

// indexRevision is the revision of downloaded index bytes:
// `sha256:<hex>`. Flux compatible.
func indexRevision(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// loadIndex parses index bytes (JSON, else strict YAML) as Helm does when
// it loads a repository index: entries that are empty or fail chart
// metadata validation are dropped, the rest sorted by version (newest
// first), and an index without apiVersion is an error.
func loadIndex(data []byte) (*helmrepo.IndexFile, error) {
	if len(data) == 0 {
		return nil, helmrepo.ErrEmptyIndexYaml
	}
	idx := &helmrepo.IndexFile{}
	var err error
	if json.Valid(data) {
		err = json.Unmarshal(data, idx)
	} else {
		err = yaml.UnmarshalStrict(data, idx)
	}
	if err != nil {
		return nil, err
	}
	if idx.APIVersion == "" {
		return nil, helmrepo.ErrNoAPIVersion
	}
	for name, versions := range idx.Entries {
		kept := versions[:0]
		for _, v := range versions {
			if v == nil {
				continue
			}
			if v.Metadata == nil {
				v.Metadata = &chart.Metadata{}
			}
			if v.APIVersion == "" {
				v.APIVersion = chart.APIVersionV1
			}
			if err := v.Validate(); err != nil && !skippableValidation(err) {
				continue
			}
			kept = append(kept, v)
		}
		idx.Entries[name] = kept
	}
	idx.SortEntries()
	return idx, nil
}

// skippableValidation: Helm keeps index entries failing only checks that
// do not matter to an index (a repeated dependency alias, as JFrog
// repositories write).
func skippableValidation(err error) bool {
	var verr chart.ValidationError
	return errors.As(err, &verr) && strings.HasPrefix(verr.Error(), "validation: more than one dependency with name or alias")
}

// humanSize formats a byte count as Docker's go-units HumanSize does
// (decimal units, four significant digits: "512B", "1.234kB"), the size
// in Flux's NewArtifact message of a HelmRepository.
func humanSize(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"}
	size, i := float64(n), 0
	for size >= 1000 && i < len(units)-1 {
		size /= 1000
		i++
	}
	return fmt.Sprintf("%.4g%s", size, units[i])
}

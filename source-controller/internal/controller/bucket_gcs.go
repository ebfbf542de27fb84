package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/eddyops/eddy/pkg/cloudauth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"
	corev1 "k8s.io/api/core/v1"
)

// This file holds the client of the gcp provider: a small client of
// Google Cloud Storage's JSON API (bucket metadata, object listing, object
// metadata and media download) rather than cloud.google.com/go/storage,
// whose gRPC and telemetry packages cost every source-controller several
// MiB at start-up whether or not it serves a gcp Bucket.

// gcsScope is the OAuth2 scope asked for: read-only, as Flux asks.
const gcsScope = "https://www.googleapis.com/auth/devstorage.read_only"

// gcsDefaultEndpoint is GCS's JSON API. spec.endpoint is not read, as
// Flux does not: the controller's STORAGE_EMULATOR_HOST (which Google's
// libraries honour) names another server, so that no Bucket can send the
// controller's own token elsewhere.
const gcsDefaultEndpoint = "https://storage.googleapis.com"

// validateGCPSecret checks spec.secretRef's keys. Flux compatible.
func validateGCPSecret(s *corev1.Secret) error {
	if s == nil {
		return nil
	}
	if _, ok := s.Data["serviceaccount"]; !ok {
		return fmt.Errorf("invalid '%s' secret data: required fields 'serviceaccount'", s.Name)
	}
	return nil
}

// gcsBucket is the bucketClient of the gcp provider.
type gcsBucket struct {
	base string
	hc   *http.Client
}

// newGCSBucket returns the client of a gcp Bucket: the access token of the
// service account key in spec.secretRef's `serviceaccount`, else of the
// controller's identity (the GCE/GKE metadata server); through the proxy
// of spec.proxySecretRef.
func newGCSBucket(ctx context.Context, creds *bucketCredentials) (*gcsBucket, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if creds.proxy != nil {
		t.Proxy = http.ProxyURL(creds.proxy)
	}
	base := &http.Client{Transport: t}
	var src oauth2.TokenSource
	if creds.secret != nil {
		var err error
		if src, err = gcsKeySource(ctx, base, creds.secret.Data["serviceaccount"]); err != nil {
			return nil, err
		}
	} else {
		src = gcsMetadataSource{ctx: ctx, hc: base}
	}
	endpoint := gcsDefaultEndpoint
	if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
		endpoint = strings.TrimSuffix(h, "/")
		if !strings.Contains(endpoint, "://") {
			endpoint = "http://" + endpoint
		}
	}
	return &gcsBucket{base: endpoint, hc: &http.Client{Transport: &oauth2.Transport{Source: oauth2.ReuseTokenSource(nil, src), Base: t}}}, nil
}

// gcsKeySource is the token source of a service account key (JSON): a JWT
// signed with its private key, exchanged at its token_uri.
func gcsKeySource(ctx context.Context, hc *http.Client, key []byte) (oauth2.TokenSource, error) {
	var k struct {
		Type         string `json:"type"`
		ClientEmail  string `json:"client_email"`
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
		TokenURI     string `json:"token_uri"`
	}
	if err := json.Unmarshal(key, &k); err != nil {
		return nil, errors.New("failed to read the service account key: not JSON")
	}
	if k.Type != "service_account" || k.ClientEmail == "" || k.PrivateKey == "" {
		return nil, errors.New("failed to read the service account key: want a 'service_account' key with 'client_email' and 'private_key'")
	}
	if k.TokenURI == "" {
		k.TokenURI = "https://oauth2.googleapis.com/token"
	}
	cfg := &jwt.Config{Email: k.ClientEmail, PrivateKey: []byte(k.PrivateKey), PrivateKeyID: k.PrivateKeyID,
		Scopes: []string{gcsScope}, TokenURL: k.TokenURI}
	return cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc)), nil
}

// gcsMetadataSource is the token source of the controller's identity.
type gcsMetadataSource struct {
	ctx context.Context
	hc  *http.Client
}

func (s gcsMetadataSource) Token() (*oauth2.Token, error) {
	tok, exp, err := cloudauth.GCPToken(s.ctx, s.hc)
	if err != nil {
		return nil, fmt.Errorf("failed to get an access token from the metadata server: %w", err)
	}
	return &oauth2.Token{AccessToken: tok, TokenType: "Bearer", Expiry: exp}, nil
}

// gcsError is an error answer of the JSON API; its message has the form
// of Google's Go client's ("googleapi: Error 403: ..., forbidden").
type gcsError struct {
	Code    int
	Message string
	Reason  string
}

func (e *gcsError) Error() string {
	msg := fmt.Sprintf("googleapi: Error %d: %s", e.Code, e.Message)
	if e.Reason != "" {
		msg += ", " + e.Reason
	}
	return msg
}

// do GETs base+path?query and returns the response of a 2xx answer;
// another answer is a *gcsError.
func (g *gcsBucket) do(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := g.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	e := &gcsError{Code: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body) == nil && body.Error.Message != "" {
		e.Message = body.Error.Message
		if len(body.Error.Errors) > 0 {
			e.Reason = body.Error.Errors[0].Reason
		}
	}
	return nil, e
}

// getJSON GETs path and decodes the answer into v.
func (g *gcsBucket) getJSON(ctx context.Context, path string, query url.Values, v any) error {
	resp, err := g.do(ctx, path, query)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

func gcsObjectPath(bucket, key string) string {
	return "/storage/v1/b/" + url.PathEscape(bucket) + "/o/" + url.PathEscape(key)
}

func (g *gcsBucket) exists(ctx context.Context, bucket string) (bool, error) {
	var b struct{}
	err := g.getJSON(ctx, "/storage/v1/b/"+url.PathEscape(bucket), url.Values{"fields": {"name"}}, &b)
	if e := (*gcsError)(nil); errors.As(err, &e) && e.Code == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// visit lists the live objects under prefix, a page at a time.
func (g *gcsBucket) visit(ctx context.Context, bucket, prefix string, fn func(key, etag string) error) error {
	q := url.Values{"fields": {"items(name,etag),nextPageToken"}, "maxResults": {"1000"}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	for {
		var page struct {
			Items []struct {
				Name string `json:"name"`
				Etag string `json:"etag"`
			} `json:"items"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := g.getJSON(ctx, "/storage/v1/b/"+url.PathEscape(bucket)+"/o", q, &page); err != nil {
			return err
		}
		for _, o := range page.Items {
			if err := fn(o.Name, o.Etag); err != nil {
				return err
			}
		}
		if page.NextPageToken == "" {
			return nil
		}
		q.Set("pageToken", page.NextPageToken)
	}
}

// get reads the object's metadata, then the content of that generation,
// so that the etag returned is the content's. Flux compatible: the
// listing's etag (the JSON API's).
func (g *gcsBucket) get(ctx context.Context, bucket, key string, w io.Writer) (string, error) {
	var meta struct {
		Etag       string `json:"etag"`
		Generation string `json:"generation"`
	}
	if err := g.getJSON(ctx, gcsObjectPath(bucket, key), url.Values{"fields": {"etag,generation"}}, &meta); err != nil {
		return "", err
	}
	q := url.Values{"alt": {"media"}}
	if _, err := strconv.ParseInt(meta.Generation, 10, 64); err == nil {
		q.Set("generation", meta.Generation)
	}
	resp, err := g.do(ctx, gcsObjectPath(bucket, key), q)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return "", err
	}
	return meta.Etag, nil
}

func (g *gcsBucket) notFound(err error) bool {
	e := (*gcsError)(nil)
	return errors.As(err, &e) && e.Code == http.StatusNotFound
}

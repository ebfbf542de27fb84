package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/cloudauth"
	"github.com/eddyops/eddy/pkg/redact"
	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
)

// This file holds the client of the azure provider: a small client of
// Azure Blob Storage's REST API (List Blobs and Get Blob, signed with a
// Shared Key, a SAS token or an Entra ID token) rather than the azblob and
// azidentity SDKs, which cost every source-controller start-up memory
// whether or not it serves an azure Bucket.

// azureAPIVersion is the x-ms-version of the requests (one that takes
// Entra ID tokens).
const azureAPIVersion = "2021-08-06"

// azureStorageScope is the scope of an Entra ID token for Blob Storage.
const azureStorageScope = "https://storage.azure.com/.default"

// azureAuthority is Entra ID's public cloud, the default authorityHost.
const azureAuthority = "https://login.microsoftonline.com/"

// validateAzureSecret checks spec.secretRef's keys. Flux compatible: its
// rules and message (one of its sets of keys).
func validateAzureSecret(s *corev1.Secret) error {
	if s == nil {
		return nil
	}
	for _, k := range []string{"clientId", "accountKey", "sasKey", "authorityHost"} {
		if _, ok := s.Data[k]; ok {
			return nil
		}
	}
	return fmt.Errorf("invalid '%s' secret data: requires a 'clientId' or 'accountKey' field, a combination of 'tenantId', 'clientId' and 'clientSecret', or 'tenantId', 'clientId' and 'clientCertificate'", s.Name)
}

// azureBucket is the bucketClient of the azure provider.
type azureBucket struct {
	// account is the account URL (spec.endpoint without its query); sas
	// the query every request carries (the endpoint's and sasKey's).
	account *url.URL
	sas     url.Values
	hc      *http.Client
	// sign signs a request, for Shared Key.
	sign func(*http.Request)
}

// newAzureBucket returns the client of an azure Bucket at spec.endpoint,
// the account URL, authenticated with spec.secretRef's: tenantId, clientId
// and clientSecret (a service principal, Entra ID at authorityHost),
// accountKey (Shared Key) or sasKey (a SAS token, merged with the
// endpoint's query as Flux does); without a Secret, anonymous (a public
// container). Flux's other ways (client certificate, managed and workload
// identity) are refused.
func newAzureBucket(ctx context.Context, endpoint string, creds *bucketCredentials) (*azureBucket, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("invalid Azure endpoint '%s': want the account URL, https://<account>.blob.core.windows.net", redact.URL(strings.SplitN(endpoint, "?", 2)[0]))
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	if creds.proxy != nil {
		t.Proxy = http.ProxyURL(creds.proxy)
	}
	a := &azureBucket{sas: u.Query(), hc: &http.Client{Transport: t}}
	u.RawQuery, u.Path = "", strings.TrimSuffix(u.Path, "/")
	a.account = u
	s := creds.secret
	if s == nil {
		return a, nil
	}
	d := func(k string) string { return string(s.Data[k]) }
	switch {
	case d("tenantId") != "" && d("clientId") != "" && d("clientSecret") != "":
		authority := azureAuthority
		if h := d("authorityHost"); h != "" {
			authority = strings.TrimSuffix(h, "/") + "/"
		}
		src := &azureClientSecretSource{ctx: ctx, hc: a.hc, authority: authority, tenantID: d("tenantId"),
			clientID: d("clientId"), secret: d("clientSecret")}
		a.hc = &http.Client{Transport: &oauth2.Transport{Source: oauth2.ReuseTokenSource(nil, src), Base: t}}
	case s.Data["accountKey"] != nil:
		key, err := base64.StdEncoding.DecodeString(d("accountKey"))
		if err != nil {
			return nil, fmt.Errorf("invalid '%s' secret data: 'accountKey' is not base64", s.Name)
		}
		name, err := azureAccountName(u)
		if err != nil {
			return nil, fmt.Errorf("failed to create shared credential from '%s' Secret data: %w", s.Name, err)
		}
		a.sign = func(r *http.Request) { signSharedKey(r, name, key) }
	case s.Data["sasKey"] != nil:
		q, err := url.ParseQuery(strings.TrimPrefix(d("sasKey"), "?"))
		if err != nil {
			return nil, errors.New("unable to parse SAS token")
		}
		for k, v := range a.sas { // sasKey's values win
			if !q.Has(k) {
				q[k] = v
			}
		}
		a.sas = q
	case s.Data["clientCertificate"] != nil || s.Data["clientId"] != nil:
		return nil, fmt.Errorf("'%s' secret: client certificate and managed identity authentication are not supported by Eddy yet: use clientSecret, accountKey or sasKey", s.Name)
	}
	return a, nil
}

// azureAccountName is the storage account of the account URL: the first
// label of its host, or for an IP address or localhost host (Azurite's
// path-style URLs) the first segment of its path.
func azureAccountName(u *url.URL) (string, error) {
	host := u.Hostname()
	if net.ParseIP(host) != nil || host == "localhost" {
		if name, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/"); name != "" {
			return name, nil
		}
		return "", fmt.Errorf("failed to extract account name from endpoint: expected an account in the path of '%s'", host)
	}
	parts := strings.Split(host, ".")
	if len(parts) <= 2 {
		return "", fmt.Errorf("failed to extract account name from endpoint: expected '%s' to be a subdomain", host)
	}
	return parts[0], nil
}

// signSharedKey adds the Shared Key Authorization of account to r: the
// HMAC-SHA256 of the request's canonical form, as Azure Storage defines it.
func signSharedKey(r *http.Request, account string, key []byte) {
	h := r.Header
	var xms []string
	for k := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			xms = append(xms, lk)
		}
	}
	sort.Strings(xms)
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	for _, k := range []string{"Content-Encoding", "Content-Language", "Content-Length", "Content-MD5", "Content-Type", "Date",
		"If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"} {
		v := h.Get(k)
		if k == "Content-Length" && v == "0" {
			v = ""
		}
		b.WriteString(v + "\n")
	}
	for _, k := range xms {
		b.WriteString(k + ":" + strings.TrimSpace(h.Get(k)) + "\n")
	}
	b.WriteString("/" + account + r.URL.EscapedPath())
	q := r.URL.Query()
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		b.WriteString("\n" + strings.ToLower(k) + ":" + strings.Join(vs, ","))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(b.String()))
	h.Set("Authorization", "SharedKey "+account+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

// azureClientSecretSource is the token source of a service principal with
// a client secret (OAuth2 client credentials at Entra ID).
type azureClientSecretSource struct {
	ctx                                   context.Context
	hc                                    *http.Client
	authority, tenantID, clientID, secret string
}

func (s *azureClientSecretSource) Token() (*oauth2.Token, error) {
	c, err := cloudauth.AzureClientSecretToken(s.ctx, s.authority, s.tenantID, s.clientID, s.secret, azureStorageScope, s.hc)
	if err != nil {
		return nil, err
	}
	return &oauth2.Token{AccessToken: c.Password, TokenType: "Bearer", Expiry: c.ExpiresAt}, nil
}

// azureError is an error answer of Blob Storage: its status and error code
// (x-ms-error-code), and the first line of its message.
type azureError struct {
	Status int
	Code   string
	Msg    string
}

func (e *azureError) Error() string {
	msg := fmt.Sprintf("%d %s", e.Status, e.Code)
	if e.Msg != "" {
		msg += ": " + e.Msg
	}
	return msg
}

// do GETs path (under the account URL) with query, signed.
func (a *azureBucket) do(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	q := url.Values{}
	for k, v := range a.sas {
		q[k] = v
	}
	for k, v := range query {
		q[k] = v
	}
	u := a.account.String() + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-ms-version", azureAPIVersion)
	req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	if a.sign != nil {
		a.sign(req)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		// The URL may carry the SAS token: the error says the path only.
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("GET %s: %w", path, ue.Err)
		}
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	e := &azureError{Status: resp.StatusCode, Code: resp.Header.Get("x-ms-error-code")}
	var body struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body) == nil {
		if e.Code == "" {
			e.Code = body.Code
		}
		e.Msg, _, _ = strings.Cut(strings.TrimSpace(body.Message), "\n")
	}
	if e.Code == "" {
		e.Code = http.StatusText(resp.StatusCode)
	}
	return nil, e
}

func azureCode(err error, code string) bool {
	e := (*azureError)(nil)
	return errors.As(err, &e) && e.Code == code
}

// exists lists at most one blob. Flux compatible: its message of a failed
// authentication.
func (a *azureBucket) exists(ctx context.Context, bucket string) (bool, error) {
	resp, err := a.do(ctx, "/"+url.PathEscape(bucket), url.Values{"restype": {"container"}, "comp": {"list"}, "maxresults": {"1"}})
	switch {
	case azureCode(err, "ContainerNotFound"):
		return false, nil
	case azureCode(err, "AuthenticationFailed"):
		return false, fmt.Errorf("the specified bucket name may be incorrect, nonexistent, or the caller might lack sufficient permissions to access it: %w", err)
	case err != nil:
		return false, err
	}
	resp.Body.Close()
	return true, nil
}

// visit lists the blobs under prefix, a page at a time.
func (a *azureBucket) visit(ctx context.Context, bucket, prefix string, fn func(key, etag string) error) error {
	q := url.Values{"restype": {"container"}, "comp": {"list"}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	for {
		resp, err := a.do(ctx, "/"+url.PathEscape(bucket), q)
		if err != nil {
			return err
		}
		var page struct {
			Blobs []struct {
				Name string `xml:"Name"`
				Etag string `xml:"Properties>Etag"`
			} `xml:"Blobs>Blob"`
			NextMarker string `xml:"NextMarker"`
		}
		err = xml.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("failed to read the blob list: %w", err)
		}
		for _, b := range page.Blobs {
			if err := fn(b.Name, azureEtag(b.Etag)); err != nil {
				return err
			}
		}
		if page.NextMarker == "" {
			return nil
		}
		q.Set("marker", page.NextMarker)
	}
}

// azureEtag is an etag in the form Get Blob's ETag header has (quoted),
// the form of the etags of Flux's revision of an azure Bucket (Flux
// indexes the listing's etags, then the downloads').
func azureEtag(s string) string {
	return `"` + strings.Trim(s, `"`) + `"`
}

// get reads the blob with one Get Blob: its etag is the response's.
func (a *azureBucket) get(ctx context.Context, bucket, key string, w io.Writer) (string, error) {
	resp, err := a.do(ctx, "/"+url.PathEscape(bucket)+"/"+escapeBlobName(key), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return "", err
	}
	return azureEtag(resp.Header.Get("ETag")), nil
}

// escapeBlobName escapes each segment of a blob name, keeping its slashes.
func escapeBlobName(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

func (a *azureBucket) notFound(err error) bool { return azureCode(err, "BlobNotFound") }

package registry

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

func TestListTagsAndDigestFromInProcessRegistry(t *testing.T) {
	r := newRegistry(t, nil)
	r.push(t, "app", "1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0")
	first := r.push(t, "app", "latest")
	c := NewClient()
	res, err := c.ListTags(ctx, r.host+"/app", Options{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Tags)
	if want := []string{"1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0", "latest"}; !slices.Equal(res.Tags, want) {
		t.Errorf("tags %v, want %v", res.Tags, want)
	}
	d, err := c.Digest(ctx, r.host+"/app", "latest", Options{})
	if err != nil || d != first.String() {
		t.Fatalf("digest %q, %v; want %s", d, err, first)
	}
	second := r.push(t, "app", "latest")
	if d, _ := c.Digest(ctx, r.host+"/app", "latest", Options{}); d != second.String() || d == first.String() {
		t.Errorf("digest after re-push %q, want %s", d, second)
	}
	_, err = c.Digest(ctx, r.host+"/app", "9.9.9", Options{})
	if want := fmt.Sprintf("get the digest of %s/app:9.9.9: 404 Not Found", r.host); err == nil || err.Error() != want || KindOf(err) != KindNotFound {
		t.Errorf("missing tag: %v, want %q", err, want)
	}
}

func TestParseImageRefusesSchemeTagAndDigest(t *testing.T) {
	for image, want := range map[string]string{
		"https://ghcr.io/org/app": `image "https://ghcr.io/org/app" must not start with a URL scheme: remove "https://"`,
		"ghcr.io/org/app:1.0":     `image "ghcr.io/org/app:1.0" must not include a tag: remove ":1.0"`,
		"ghcr.io/org/App":         `image "ghcr.io/org/App" is not a valid repository name`,
	} {
		_, err := ParseImage(image, false)
		if err == nil || err.Error() != want || KindOf(err) != KindInvalidImage {
			t.Errorf("%s: %v, want %q", image, err, want)
		}
	}
	if n, _ := CanonicalName("stefanprodan/podinfo", false); n != "index.docker.io/stefanprodan/podinfo" {
		t.Errorf("canonical %q", n)
	}
	if n, _ := CanonicalName("localhost:5000/app", false); n != "localhost:5000/app" {
		t.Errorf("canonical %q", n)
	}
}

func TestTLSRegistryNeedsItsCAAndClientCertificate(t *testing.T) {
	authority := newCA(t)
	pool := x509.NewCertPool()
	pool.AddCert(authority.cert)
	r, c := tlsRegistry(t, authority, pool)
	r.push(t, "app", "1.0.0")
	image := r.host + "/app"

	_, err := c.ListTags(ctx, image, Options{Timeout: 10 * time.Second})
	want := fmt.Sprintf("list tags of %s: registry unreachable: tls: failed to verify certificate: x509: certificate signed by unknown authority", image)
	if err == nil || err.Error() != want || KindOf(err) != KindUnreachable {
		t.Errorf("no CA: %v\nwant %q", err, want)
	}

	caOnly, err := TLSFromSecretData(map[string][]byte{"ca.crt": authority.pem})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListTags(ctx, image, Options{TLS: caOnly})
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("list tags of %s: registry unreachable: ", image)) {
		t.Errorf("no client certificate: %v", err)
	}

	cert, key := authority.issue(t, "eddy client", x509.ExtKeyUsageClientAuth)
	mtls, err := TLSFromSecretData(map[string][]byte{"ca.crt": authority.pem, "tls.crt": cert, "tls.key": key})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ListTags(ctx, image, Options{TLS: mtls})
	if err != nil || !slices.Equal(res.Tags, []string{"1.0.0"}) {
		t.Errorf("mTLS: %v, %v", res.Tags, err)
	}
}

func TestCertSecretDataErrorsNameKeysOnly(t *testing.T) {
	for data, want := range map[*map[string][]byte]string{
		{}:                                     "certSecretRef: none of ca.crt, tls.crt, tls.key found",
		{"ca.crt": []byte("junk")}:             "certSecretRef: ca.crt holds no PEM certificate",
		{"tls.crt": []byte("c")}:               "certSecretRef: tls.crt and tls.key must be given together",
		{"tls.crt": {1}, "tls.key": []byte{2}}: "certSecretRef: tls.crt and tls.key are not a PEM certificate and its key",
	} {
		if _, err := TLSFromSecretData(*data); err == nil || err.Error() != want {
			t.Errorf("%v: %v, want %q", *data, err, want)
		}
	}
}

// basicAuth demands user:pass as HTTP basic auth on every /v2/ request, as
// a registry without a token service does.
func basicAuth(user, pass string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="eddy"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func dockerConfigFor(host, user, pass string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return fmt.Appendf(nil, `{"auths":{"http://%s":{"auth":%q}}}`, host, auth)
}

func TestBasicAuthFromDockerConfigAndSecretFree401(t *testing.T) {
	r := newRegistry(t, basicAuth("robot", "s3cret-pass"))
	r.push(t, "app", "1.0.0")
	image := r.host + "/app"
	c := NewClient()

	_, err := c.ListTags(ctx, image, Options{})
	want := fmt.Sprintf("list tags of %s: 401 Unauthorized (UNAUTHORIZED: authentication required)", image)
	if err == nil || err.Error() != want || KindOf(err) != KindUnauthorized {
		t.Errorf("anonymous: %v\nwant %q", err, want)
	}

	wrong, _ := NewKeychain(dockerConfigFor(r.host, "robot", "wrong-pass"))
	if _, err = c.ListTags(ctx, image, Options{Keychain: wrong}); err == nil || err.Error() != want || strings.Contains(err.Error(), "wrong-pass") {
		t.Errorf("wrong password: %v", err)
	}

	// The ServiceAccount's pull secret comes after spec.secretRef; a
	// document without the host is skipped.
	kc, err := NewKeychain(dockerConfigFor("other.example", "x", "y"), dockerConfigFor(r.host, "robot", "s3cret-pass"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ListTags(ctx, image, Options{Keychain: kc})
	if err != nil || !slices.Equal(res.Tags, []string{"1.0.0"}) {
		t.Errorf("with credentials: %v, %v", res.Tags, err)
	}
	if _, err := NewKeychain([]byte("not json")); err == nil || err.Error() != "docker config 0: not a valid .dockerconfigjson document" {
		t.Errorf("bad config: %v", err)
	}
}

// tooMany answers 429 to every tags/list request, with Retry-After.
func tooMany(retryAfter string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/tags/list") {
				w.Header().Set("Retry-After", retryAfter)
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestRateLimitedRegistryBacksOffForEveryRepositoryOnIt(t *testing.T) {
	var hits int
	r := newRegistry(t, func(next http.Handler) http.Handler {
		limited := tooMany("120")(next)
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if strings.HasSuffix(req.URL.Path, "/tags/list") {
				hits++
			}
			limited.ServeHTTP(w, req)
		})
	})
	r.push(t, "app", "1.0.0")
	r.push(t, "other", "1.0.0")
	c := NewClient()
	now := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }

	_, err := c.ListTags(ctx, r.host+"/app", Options{})
	want := fmt.Sprintf("list tags of %s/app: registry %s answered 429 Too Many Requests: no request to it for 2m0s", r.host, r.host)
	if err == nil || err.Error() != want || KindOf(err) != KindRateLimited {
		t.Fatalf("first: %v\nwant %q", err, want)
	}
	if hits != 1 {
		t.Errorf("%d tags/list requests, want 1 (a 429 is not retried)", hits)
	}
	_, err = c.ListTags(ctx, r.host+"/other", Options{})
	want = fmt.Sprintf("list tags of %s/other: registry %s answered 429 Too Many Requests: no request to it for 2m0s", r.host, r.host)
	if err == nil || err.Error() != want || hits != 1 {
		t.Errorf("other repository during the back-off: %v (%d requests)\nwant %q", err, hits, want)
	}
	if got := c.BackoffUntil(r.host); !got.Equal(now.Add(2 * time.Minute)) {
		t.Errorf("back-off until %s", got)
	}
	now = now.Add(2*time.Minute + time.Second)
	if _, err = c.ListTags(ctx, r.host+"/other", Options{}); err == nil || hits != 2 {
		t.Errorf("after the back-off: %v (%d requests, want 2)", err, hits)
	}
	if s := c.Stats(r.host); s.RateLimited != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestTagListThatIsNotJSON(t *testing.T) {
	r := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if strings.HasSuffix(req.URL.Path, "/tags/list") {
				fmt.Fprint(w, "<html>maintenance</html>")
				return
			}
			next.ServeHTTP(w, req)
		})
	})
	_, err := NewClient().ListTags(ctx, r.host+"/app", Options{})
	want := fmt.Sprintf("list tags of %s/app: the registry's tag list is not JSON: invalid character '<' looking for beginning of value", r.host)
	if err == nil || err.Error() != want || KindOf(err) != KindInvalidResponse {
		t.Errorf("%v\nwant %q", err, want)
	}
}

// TestTagListNamesThatAreNotTagsAreLeftOut: a registry listing names no
// client could pull (200,000 characters, a space, a slash, a leading dot)
// among tags: the scan keeps the tags only (twelve such names made the
// ImageRepository's status too large to write).
func TestTagListNamesThatAreNotTagsAreLeftOut(t *testing.T) {
	long := strings.Repeat("a", 200000)
	r := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if strings.HasSuffix(req.URL.Path, "/tags/list") {
				fmt.Fprintf(w, `{"name":"app","tags":["1.0.0",%q,"a b","x/y",".hidden","_ok",%q]}`, long, strings.Repeat("b", 128))
				return
			}
			next.ServeHTTP(w, req)
		})
	})
	res, err := NewClient().ListTags(ctx, r.host+"/app", Options{})
	if want := []string{"1.0.0", "_ok", strings.Repeat("b", 128)}; err != nil || !slices.Equal(res.Tags, want) {
		t.Errorf("tags %.200q, %v", res.Tags, err)
	}
}

// TestErrorWithAHugeBodySaysItsStatus: a 502 page of a megabyte fails the
// scan with the status, not with the size of the page.
func TestErrorWithAHugeBodySaysItsStatus(t *testing.T) {
	r := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if strings.HasSuffix(req.URL.Path, "/tags/list") {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusBadGateway)
				fmt.Fprintf(w, "<html><body>%s</body></html>", strings.Repeat("y", 1<<20))
				return
			}
			next.ServeHTTP(w, req)
		})
	})
	_, err := NewClient().ListTags(ctx, r.host+"/app", Options{})
	want := fmt.Sprintf("list tags of %s/app: 502 Bad Gateway", r.host)
	if err == nil || err.Error() != want {
		t.Errorf("%.300v\nwant %q", err, want)
	}
}

func TestUnreachableRegistry(t *testing.T) {
	_, err := NewClient().ListTags(ctx, "127.0.0.1:1/app", Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "list tags of 127.0.0.1:1/app: registry unreachable: ") || KindOf(err) != KindUnreachable {
		t.Errorf("%v", err)
	}
}

func TestTagListOverTheBoundIsRefused(t *testing.T) {
	r := newRegistry(t, nil)
	r.push(t, "app", "1", "2", "3", "4")
	c := NewClient()
	c.MaxTags = 3
	_, err := c.ListTags(ctx, r.host+"/app", Options{})
	want := fmt.Sprintf("list tags of %s/app: more than 3 tags, the most a scan keeps; exclude tags at the registry or use a repository with fewer", r.host)
	if err == nil || err.Error() != want || KindOf(err) != KindTooManyTags {
		t.Errorf("%v\nwant %q", err, want)
	}
}

// etagPaged serves tags/list two tags a page, whatever n is asked, (Link rel="next") with a
// strong ETag over each page's body, answering 304 to a matching
// If-None-Match.
func etagPaged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.HasSuffix(req.URL.Path, "/tags/list") {
			next.ServeHTTP(w, req)
			return
		}
		q := req.URL.Query()
		q.Set("n", "2") // whatever the client asks (ggcr: 1000)
		req.URL.RawQuery = q.Encode()
		rec := &recorder{header: http.Header{}}
		next.ServeHTTP(rec, req)
		etag := fmt.Sprintf(`"%x"`, sha256.Sum256(rec.body))
		if req.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		var page struct{ Tags []string }
		_ = jsonUnmarshal(rec.body, &page)
		if last := q.Get("last"); last != "" && len(page.Tags) > 0 && page.Tags[0] <= last {
			// ggcr's registry restarts past the last tag; the spec says empty.
			page.Tags, rec.body = nil, []byte(`{"name":"app","tags":[]}`)
			etag = fmt.Sprintf(`"%x"`, sha256.Sum256(rec.body))
		}
		if len(page.Tags) == 2 {
			w.Header().Set("Link", fmt.Sprintf(`<%s?n=2&last=%s>; rel="next"`, req.URL.Path, page.Tags[1]))
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(rec.body)
	})
}

func TestUnchangedTagListIsReusedOnNotModified(t *testing.T) {
	r := newRegistry(t, etagPaged)
	r.push(t, "app", "1.0.0", "1.1.0", "2.0.0")
	c := NewClient()
	first, err := c.ListTags(ctx, r.host+"/app", Options{})
	if err != nil || first.NotModified || len(first.Tags) != 3 {
		t.Fatalf("first: %+v, %v", first, err)
	}
	second, err := c.ListTags(ctx, r.host+"/app", Options{})
	if err != nil || !second.NotModified || !slices.Equal(first.Tags, second.Tags) {
		t.Fatalf("second: %+v, %v", second, err)
	}
	if s := c.Stats(r.host); s.TagListRequests != 4 || s.NotModified != 2 {
		t.Errorf("stats %+v, want 4 tags/list pages, 2 answered 304", s)
	}
	r.push(t, "app", "3.0.0")
	third, err := c.ListTags(ctx, r.host+"/app", Options{})
	if err != nil || third.NotModified || len(third.Tags) != 4 {
		t.Errorf("after a push: %+v, %v", third, err)
	}
}

func TestTagListPagesThatLoopAreRefused(t *testing.T) {
	r := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if strings.HasSuffix(req.URL.Path, "/tags/list") {
				w.Header().Set("Link", fmt.Sprintf(`<%s?n=1&last=a>; rel="next"`, req.URL.Path))
				fmt.Fprint(w, `{"name":"app","tags":["a"]}`)
				return
			}
			next.ServeHTTP(w, req)
		})
	})
	_, err := NewClient().ListTags(ctx, r.host+"/app", Options{})
	want := fmt.Sprintf("list tags of %s/app: the registry's tag list pages loop (a Link header names a page already read)", r.host)
	if err == nil || err.Error() != want || KindOf(err) != KindInvalidResponse {
		t.Errorf("%v\nwant %q", err, want)
	}
}

// TestProxyFromSecretCarriesCredentials: requests go through the
// proxySecretRef's proxy with its credentials, which no error quotes.
func TestProxyFromSecretCarriesCredentials(t *testing.T) {
	r := newRegistry(t, nil)
	r.push(t, "app", "1.0.0")
	var proxied int
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("px:px-secret")) {
			w.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		proxied++
		req.RequestURI = ""
		req.Header.Del("Proxy-Authorization")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	u, err := ProxyFromSecretData(map[string][]byte{"address": []byte(proxy.URL), "username": []byte("px"), "password": []byte("px-secret")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewClient().ListTags(ctx, r.host+"/app", Options{Proxy: u})
	if err != nil || len(res.Tags) != 1 || proxied == 0 {
		t.Fatalf("through the proxy: %+v, %v (%d proxied)", res, err, proxied)
	}
	bad, _ := ProxyFromSecretData(map[string][]byte{"address": []byte(proxy.URL), "username": []byte("px"), "password": []byte("wrong-secret")})
	_, err = NewClient().ListTags(ctx, r.host+"/app", Options{Proxy: bad})
	if want := fmt.Sprintf("list tags of %s/app: 407 Proxy Authentication Required", r.host); err == nil || err.Error() != want {
		t.Errorf("wrong proxy password: %v", err)
	}
	if _, err := ProxyFromSecretData(map[string][]byte{"address": []byte("http://u:leak@")}); err == nil || err.Error() != "proxySecretRef: address is not an http(s) URL with a host" {
		t.Errorf("bad address: %v", err)
	}
}

// TestRefusedPageSizeIsAskedAgainSmaller: a registry that allows at most
// 100 tags a page (distribution's tags.maxtags, Quay) refuses ggcr's 1000;
// the scan asks again for 100.
func TestRefusedPageSizeIsAskedAgainSmaller(t *testing.T) {
	var refused int
	r := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if n := req.URL.Query().Get("n"); strings.HasSuffix(req.URL.Path, "/tags/list") && n != "" && n != "100" {
				refused++
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"errors":[{"code":"PAGINATION_NUMBER_INVALID","message":"invalid number of results requested"}]}`)
				return
			}
			next.ServeHTTP(w, req)
		})
	})
	r.push(t, "app", "1.0.0")
	res, err := NewClient().ListTags(ctx, r.host+"/app", Options{})
	if err != nil || len(res.Tags) != 1 || refused != 1 {
		t.Errorf("%+v, %v (%d refused)", res, err, refused)
	}
}

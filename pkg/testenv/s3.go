package testenv

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// S3 is an S3-compatible object store in the test process (gofakes3,
// in memory) that refuses, with S3's 403 AccessDenied, a request not signed
// with one of its access keys. gofakes3 checks no signature: the access key
// named in a request's SigV4 Authorization header is what is checked (a
// wrong secret key with a right access key passes).
type S3 struct {
	srv     *httptest.Server
	backend *s3mem.Backend
	// AccessKey and SecretKey are the static credentials the store takes.
	AccessKey, SecretKey string

	mu   sync.Mutex
	keys map[string]bool // the access keys taken
}

// NewS3 starts an empty store and closes it by t.Cleanup.
func NewS3(t testing.TB) *S3 {
	t.Helper()
	s := &S3{backend: s3mem.New(), AccessKey: "eddy-access", SecretKey: "eddy-secret-key"}
	s.keys = map[string]bool{s.AccessKey: true}
	fake := gofakes3.New(s.backend, gofakes3.WithAutoBucket(false))
	s.srv = httptest.NewServer(s.authorize(fake.Server()))
	t.Cleanup(s.srv.Close)
	return s
}

// Endpoint is the store's host:port (a Bucket's spec.endpoint, with
// spec.insecure).
func (s *S3) Endpoint() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// CreateBucket makes the bucket name.
func (s *S3) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if err := s.backend.CreateBucket(name); err != nil {
		t.Fatal(err)
	}
}

// Put writes the object key of bucket and returns its etag (the hex MD5 of
// content, as S3 gives for a single-part upload).
func (s *S3) Put(t testing.TB, bucket, key, content string) string {
	t.Helper()
	// The metadata an upload through the API gets (S3 clients parse it).
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}
	if _, err := s.backend.PutObject(bucket, key, meta, bytes.NewReader([]byte(content)), int64(len(content)), nil); err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte(content))
	return hex.EncodeToString(sum[:])
}

// Delete removes the object key of bucket.
func (s *S3) Delete(t testing.TB, bucket, key string) {
	t.Helper()
	if _, err := s.backend.DeleteObject(bucket, key); err != nil {
		t.Fatal(err)
	}
}

// authorize answers 403 AccessDenied to a request whose SigV4 credential
// names no access key of the store (an anonymous request included).
func (s *S3) authorize(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, cred, _ := strings.Cut(r.Header.Get("Authorization"), "Credential=")
		ak, _, _ := strings.Cut(cred, "/")
		s.mu.Lock()
		ok := s.keys[ak]
		s.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied.</Message></Error>`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// LDAPSTS starts a Security Token Service that answers MinIO's
// AssumeRoleWithLDAPIdentity for user and password with temporary
// credentials the store takes, and returns its URL; it is closed by
// t.Cleanup.
func (s *S3) LDAPSTS(t testing.TB, user, password string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "AssumeRoleWithLDAPIdentity" ||
			r.Form.Get("LDAPUsername") != user || r.Form.Get("LDAPPassword") != password {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<ErrorResponse><Error><Code>AccessDenied</Code><Message>LDAP authentication failed</Message></Error></ErrorResponse>`)
			return
		}
		ak := fmt.Sprintf("sts-%s-%d", user, time.Now().UnixNano())
		s.mu.Lock()
		s.keys[ak] = true
		s.mu.Unlock()
		type creds struct {
			AccessKeyID     string `xml:"AccessKeyId"`
			SecretAccessKey string
			SessionToken    string
			Expiration      time.Time
		}
		type result struct {
			Credentials creds
		}
		type response struct {
			XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ AssumeRoleWithLDAPIdentityResponse"`
			Result  result   `xml:"AssumeRoleWithLDAPIdentityResult"`
		}
		w.Header().Set("Content-Type", "application/xml")
		_ = xml.NewEncoder(w).Encode(response{Result: result{Credentials: creds{AccessKeyID: ak, SecretAccessKey: "temporary",
			SessionToken: "token", Expiration: time.Now().Add(time.Hour).UTC()}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// AllowKey makes the store take the access key ak (temporary credentials
// another service issued).
func (s *S3) AllowKey(ak string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[ak] = true
}

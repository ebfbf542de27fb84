package webui

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var env *testenv.Environment

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// serve starts a server for cfg on a free loopback port and returns its URL.
func serve(t *testing.T, opts Options) string {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	srv, err := Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// Serve lists before it answers; wait for the first answer.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(srv.URL() + "api/session")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return srv.URL()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not answer in 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func getJSON(t *testing.T, u string, v any) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
	}
	return resp.StatusCode
}

func post(t *testing.T, u, token string, body any) (int, map[string]string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(string(b)))
	if token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// fixture creates a namespace with a GitRepository and a Kustomization that
// uses it, the Kustomization's Ready False with message msg.
func fixture(t *testing.T, msg string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ui-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "repo"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/repo.git", Interval: metav1.Duration{Duration: time.Minute}}}
	if err := env.Client.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "apps"},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Minute}, Path: "./apps", Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"}}}
	if err := env.Client.Create(ctx, ks); err != nil {
		t.Fatal(err)
	}
	apimeta.SetStatusCondition(&ks.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "BuildFailed", Message: msg, ObservedGeneration: ks.Generation})
	if err := env.Client.Status().Update(ctx, ks); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func TestListenNeedsAuthOffLoopback(t *testing.T) {
	_, err := Listen(Options{Config: env.Config, Listen: "0.0.0.0:0"})
	if err == nil || err != errNeedsAuth {
		t.Fatalf("non-loopback without token: %v", err)
	}
	srv, err := Listen(Options{Config: env.Config, Listen: "0.0.0.0:0", AuthToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.ln.Close()
	// Every address: the URL names the machine, not [::] or 0.0.0.0.
	if u := srv.URL(); strings.Contains(u, "[::]") || strings.Contains(u, "0.0.0.0") {
		t.Errorf("URL of a 0.0.0.0 listener: %s", u)
	}
	_, err = Listen(Options{Config: env.Config, Listen: "0.0.0.0:" + portOf(srv.URL()), AuthToken: "s3cret"})
	if err == nil || !strings.Contains(err.Error(), "the port is taken") || !strings.Contains(err.Error(), "127.0.0.1:0") {
		t.Errorf("a taken port: %v", err)
	}
}

// TestTLSWithoutTokenOffLoopback: TLS encrypts but tells nothing of who
// connects, so a non-loopback listener with TLS and no --auth-token still
// requires a token: a generated one, carried by URL.
func TestTLSWithoutTokenOffLoopback(t *testing.T) {
	cert, key := selfSignedCert(t)
	srv, err := Listen(Options{Config: env.Config, Listen: "0.0.0.0:0", TLSCertFile: cert, TLSKeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	token := u.Query().Get("token")
	if token == "" {
		t.Fatalf("URL %s carries no token", srv.URL())
	}
	_, port, _ := net.SplitHostPort(u.Host)
	base := "https://127.0.0.1:" + port + "/"
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(u string) int {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := c.Get(u)
			if err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s: %v", u, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if code := get(base + "api/session"); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	if code := get(base + "api/session?token=" + token); code != http.StatusOK {
		t.Fatalf("with the URL's token: %d", code)
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key (PEM).
func selfSignedCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "eddy-ui-test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestServer(t *testing.T) {
	ns := fixture(t, `kustomization path not found: "./<script>alert(1)</script>"`)
	base := serve(t, Options{Config: env.Config, Context: "test"})

	var sess Session
	getJSON(t, base+"api/session", &sess)
	if sess.CSRFToken == "" || sess.ReadOnly || sess.Context != "test" {
		t.Fatalf("session: %+v", sess)
	}
	if sess.User == "" {
		t.Errorf("session names no user (SelfSubjectReview)")
	}

	t.Run("overview", func(t *testing.T) {
		var objs Objects
		getJSON(t, base+"api/objects", &objs)
		states := map[string]string{}
		for _, o := range objs.Objects {
			if o.Namespace == ns {
				states[o.Kind+"/"+o.Name] = o.State
			}
		}
		if states["Kustomization/apps"] != "failed" || states["GitRepository/repo"] != "unknown" || !objs.Connected {
			t.Fatalf("states %v, connected %v", states, objs.Connected)
		}
	})

	t.Run("detail", func(t *testing.T) {
		var d Detail
		if code := getJSON(t, base+"api/object/Kustomization/"+ns+"/apps", &d); code != 200 {
			t.Fatalf("GET detail: %d", code)
		}
		if d.Summary.SourceRef == nil || d.Summary.SourceRef.Name != "repo" || d.Source == nil || len(d.Conditions) != 1 ||
			d.Conditions[0].Message != `kustomization path not found: "./<script>alert(1)</script>"` {
			t.Fatalf("detail: %+v", d)
		}
		if !d.CanPatch {
			t.Error("the admin's Detail says not canPatch")
		}
		if code := getJSON(t, base+"api/object/Kustomization/"+ns+"/nope", nil); code != http.StatusNotFound {
			t.Fatalf("missing object: %d", code)
		}
	})

	t.Run("headers and host", func(t *testing.T) {
		resp, err := http.Get(base + "object/Kustomization/" + ns + "/apps")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("page route: %d %v", resp.StatusCode, resp.Header)
		}
		// DNS rebinding: another site's name resolving to loopback.
		req, _ := http.NewRequest(http.MethodGet, base+"api/objects", nil)
		req.Host = "evil.example.com:" + portOf(base)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("foreign Host: %d", resp.StatusCode)
		}
	})

	t.Run("actions", func(t *testing.T) {
		act := Action{Ref: Ref{Kind: "Kustomization", Namespace: ns, Name: "apps"}, WithSource: true}
		if code, _ := post(t, base+"api/action/reconcile", "", act); code != http.StatusForbidden {
			t.Fatalf("reconcile without CSRF token: %d", code)
		}
		if code, _ := post(t, base+"api/action/reconcile", "wrong", act); code != http.StatusForbidden {
			t.Fatalf("reconcile with a wrong CSRF token: %d", code)
		}
		code, res := post(t, base+"api/action/reconcile", sess.CSRFToken, act)
		if code != 200 || res["message"] != "reconcile with source requested by "+sess.User+" in eddy ui" {
			t.Fatalf("reconcile: %d %v", code, res)
		}
		ctx := context.Background()
		var ks kustomizev1.Kustomization
		var repo sourcev1.GitRepository
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, &ks)
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "repo"}, &repo)
		if ks.Annotations[meta.ReconcileRequestAnnotation] == "" || repo.Annotations[meta.ReconcileRequestAnnotation] == "" {
			t.Fatalf("requestedAt: ks %v, repo %v", ks.Annotations, repo.Annotations)
		}
		var evs corev1.EventList
		_ = env.Client.List(ctx, &evs, client.InNamespace(ns))
		found := false
		for _, e := range evs.Items {
			found = found || (e.InvolvedObject.Name == "apps" && e.Reason == "ReconcileRequested" && strings.Contains(e.Message, sess.User))
		}
		if !found {
			t.Fatalf("no ReconcileRequested event naming %s: %v", sess.User, evs.Items)
		}
		if code, res := post(t, base+"api/action/suspend", sess.CSRFToken, act); code != 200 {
			t.Fatalf("suspend: %d %v", code, res)
		}
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, &ks)
		if !ks.Spec.Suspend {
			t.Fatal("suspend did not set spec.suspend")
		}
		if code, res := post(t, base+"api/action/resume", sess.CSRFToken, act); code != 200 {
			t.Fatalf("resume: %d %v", code, res)
		}
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, &ks)
		if ks.Spec.Suspend {
			t.Fatal("resume did not clear spec.suspend")
		}
	})

	t.Run("cross-site", func(t *testing.T) {
		// Another site's <img src> or form reaches loopback too; browsers
		// say so in Sec-Fetch-Site.
		for site, want := range map[string]int{"cross-site": 403, "same-site": 403, "same-origin": 200, "none": 200} {
			req, _ := http.NewRequest(http.MethodGet, base+"api/diff/"+ns+"/apps", nil)
			if want == 200 {
				req.URL.Path = "/api/objects"
			}
			req.Header.Set("Sec-Fetch-Site", site)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("Sec-Fetch-Site %s: %d, want %d", site, resp.StatusCode, want)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, base+"object/Kustomization/"+ns+"/apps", nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("a link from another site to a page: %d", resp.StatusCode)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		ro := serve(t, Options{Config: env.Config, ReadOnly: true})
		var s Session
		getJSON(t, ro+"api/session", &s)
		code, _ := post(t, ro+"api/action/suspend", s.CSRFToken, Action{Ref: Ref{Kind: "Kustomization", Namespace: ns, Name: "apps"}})
		if !s.ReadOnly || code != http.StatusNotFound {
			t.Fatalf("read-only: session %v, suspend %d", s.ReadOnly, code)
		}
	})

	t.Run("stream", func(t *testing.T) {
		events := openStream(t, base)
		if ev := <-events; ev.name != "status" || !strings.Contains(ev.data, `"connected":true`) {
			t.Fatalf("first event: %+v", ev)
		}
		var ks kustomizev1.Kustomization
		_ = env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "apps"}, &ks)
		ks.Labels = map[string]string{"touched": "yes"}
		if err := env.Client.Update(context.Background(), &ks); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, events, "change", `"name":"apps"`, 10*time.Second)
	})
}

func portOf(u string) string {
	p, _ := url.Parse(u)
	return p.Port()
}

type sse struct{ name, data string }

func openStream(t *testing.T, base string) <-chan sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream Content-Type %q", ct)
	}
	out := make(chan sse, 1024)
	go func() {
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		var ev sse
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(out)
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			case line == "" && ev.name != "":
				out <- ev
				ev = sse{}
			}
		}
	}()
	return out
}

func waitEvent(t *testing.T, events <-chan sse, name, contains string, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream closed before an event %s with %s", name, contains)
			}
			if ev.name == name && strings.Contains(ev.data, contains) {
				return
			}
		case <-timeout:
			t.Fatalf("no event %s with %s within %s", name, contains, within)
		}
	}
}

// TestRBAC: a user who may list Kustomizations only sees them; other kinds
// are absent (hidden), not errors, and their objects are 404.
func TestRBAC(t *testing.T) {
	ns := fixture(t, "ok")
	ctx := context.Background()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "ui-viewer-"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}}}}
	if err := env.Client.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "ui-viewer-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "ui-viewer"}}}
	if err := env.Client.Create(ctx, crb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, crb); _ = env.Client.Delete(ctx, cr) })
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "ui-viewer"}
	var log lockedBuffer
	base := serve(t, Options{Config: cfg, Log: &log})
	var objs Objects
	getJSON(t, base+"api/objects", &objs)
	for _, o := range objs.Objects {
		if o.Kind != "Kustomization" {
			t.Fatalf("ui-viewer sees a %s", o.Kind)
		}
	}
	if !strings.Contains(fmt.Sprint(objs.Hidden), "GitRepository") {
		t.Fatalf("hidden kinds: %v", objs.Hidden)
	}
	if code := getJSON(t, base+"api/object/GitRepository/"+ns+"/repo", nil); code != http.StatusNotFound {
		t.Fatalf("a GitRepository for ui-viewer: %d", code)
	}
	var d Detail
	if code := getJSON(t, base+"api/object/Kustomization/"+ns+"/apps", &d); code != 200 || d.Source != nil {
		t.Fatalf("Kustomization for ui-viewer: %d, source %v", code, d.Source)
	}
	var sess Session
	getJSON(t, base+"api/session", &sess)
	if code, _ := post(t, base+"api/action/suspend", sess.CSRFToken, Action{Ref: Ref{Kind: "Kustomization", Namespace: ns, Name: "apps"}}); code != http.StatusForbidden {
		t.Fatalf("suspend by a viewer: %d", code)
	}
	if l := log.String(); !strings.Contains(l, "POST /api/action/suspend: 403") || !strings.Contains(l, "cannot patch") {
		t.Errorf("the refused action is not in the log: %q", l)
	}
	if d.CanPatch {
		t.Error("a viewer's Detail says canPatch")
	}
	if code := getJSON(t, base+"api/yaml?apiVersion=v1&kind=Namespace&name="+ns, nil); code != http.StatusNotFound {
		t.Fatalf("a Namespace's YAML for ui-viewer: %d", code)
	}
}

// TestClusterGoesAway: the page is told when the API server cannot be
// reached and when it can again (through a proxy the test cuts).
func TestClusterGoesAway(t *testing.T) {
	target, _ := url.Parse(env.Config.Host)
	p := startProxy(t, "127.0.0.1:0", target.Host)
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + p.addr
	var log lockedBuffer
	base := serve(t, Options{Config: cfg, Log: &log})
	events := openStream(t, base)
	waitEvent(t, events, "status", `"connected":true`, 10*time.Second)
	p.stop()
	waitEvent(t, events, "status", `"connected":false`, 15*time.Second)
	startProxy(t, p.addr, target.Host)
	waitEvent(t, events, "status", `"connected":true`, 15*time.Second)
	if l := log.String(); !strings.Contains(l, "the API server is not reachable") || !strings.Contains(l, "connected to the API server again") {
		t.Errorf("the log does not tell the connection's changes: %q", l)
	}
}

type proxy struct {
	addr  string
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, addr, target string) *proxy {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port of a proxy just closed may linger
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(p.stop)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestAuthToken: with --auth-token every request needs it, once in the URL
// (then as a cookie) or as a bearer token.
func TestAuthToken(t *testing.T) {
	base := serve(t, Options{Config: env.Config, AuthToken: "s3cret"})
	if code := getJSON(t, base+"api/objects", nil); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	if code := getJSON(t, base+"?token=wrong", nil); code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", code)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(base + "object/Kustomization/ns/apps?token=s3cret&x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "eddy-ui-token-"+portOf(base) {
			cookie = c
		}
	}
	// The page is sent to its address without the token.
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/object/Kustomization/ns/apps?x=1" ||
		cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("with ?token: %d %q, cookie %+v", resp.StatusCode, resp.Header.Get("Location"), cookie)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"api/objects", nil)
	req.AddCookie(cookie)
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("with the cookie: %v %v", resp, err)
	}
	resp.Body.Close()
	req, _ = http.NewRequest(http.MethodGet, base+"api/objects", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("with a bearer token: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestNamespacedUser: a user who may read Kustomizations in one namespace
// only sees them there, found on their own when they may list namespaces,
// or in the namespaces they name.
func TestNamespacedUser(t *testing.T) {
	ns := fixture(t, "ok")
	other := fixture(t, "ok")
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ui-team"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ui-team"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ui-team"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "ui-team"},
			{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "ui-team-nolist"}}}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "ui-ns-lister-"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}}}}
	for _, o := range []client.Object{role, rb, cr} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "ui-ns-lister-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "ui-team"}}}
	if err := env.Client.Create(ctx, crb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, crb); _ = env.Client.Delete(ctx, cr) })
	seen := func(base string) map[string]bool {
		var objs Objects
		getJSON(t, base+"api/objects", &objs)
		m := map[string]bool{}
		for _, o := range objs.Objects {
			m[o.Kind+"/"+o.Namespace+"/"+o.Name] = true
		}
		return m
	}
	as := func(user string) *rest.Config {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return cfg
	}
	want := "Kustomization/" + ns + "/apps"
	if m := seen(serve(t, Options{Config: as("ui-team")})); !m[want] || m["Kustomization/"+other+"/apps"] || len(m) != 1 {
		t.Fatalf("ui-team (may list namespaces) sees %v", m)
	}
	if m := seen(serve(t, Options{Config: as("ui-team-nolist")})); len(m) != 0 {
		t.Fatalf("ui-team-nolist without --namespace sees %v", m)
	}
	if m := seen(serve(t, Options{Config: as("ui-team-nolist"), Namespaces: []string{ns, other}})); !m[want] || len(m) != 1 {
		t.Fatalf("ui-team-nolist with --namespace sees %v", m)
	}
}

// TestDrift: a DriftCorrected event of a Kustomization is listed with its
// fields (values as the user wrote them), the object's apiVersion from the
// inventory, and filtered by owner.
func TestDrift(t *testing.T) {
	ns := fixture(t, "ok")
	ctx := context.Background()
	var ks kustomizev1.Kustomization
	_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, &ks)
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: ns + "_web_apps_Deployment", Version: "v1"}}}
	if err := env.Client.Status().Update(ctx, &ks); err != nil {
		t.Fatal(err)
	}
	msg := "Deployment/" + ns + `/web drifted: .spec.replicas 2 → 5 (by kubectl-edit), .metadata.annotations.note "<b>a, b</b>" → <absent>; corrected`
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "apps.", Namespace: ns}, Reason: "DriftCorrected", Message: msg, Type: "Normal",
		InvolvedObject: corev1.ObjectReference{APIVersion: kustomizev1.GroupVersion.String(), Kind: "Kustomization", Namespace: ns, Name: "apps", UID: ks.UID},
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	// The 11th similar event of 10 minutes, as client-go's aggregator writes it.
	combined := ev.DeepCopy()
	combined.ObjectMeta = metav1.ObjectMeta{GenerateName: "apps.", Namespace: ns}
	combined.Message = "(combined from similar events): " + strings.Replace(msg, "2 → 5", "2 → 7", 1)
	combined.LastTimestamp = metav1.NewTime(time.Now().Add(time.Second))
	if err := env.Client.Create(ctx, combined); err != nil {
		t.Fatal(err)
	}
	base := serve(t, Options{Config: env.Config})
	var dl DriftList
	getJSON(t, base+"api/drift?owner=Kustomization/"+ns+"/apps", &dl)
	if len(dl.Drift) != 2 || dl.Drift[0].Fields[0].New != "7" {
		t.Fatalf("drift (the combined event first): %+v", dl)
	}
	d := dl.Drift[1]
	want := []FieldDrift{{Path: ".spec.replicas", Old: "2", New: "5", Manager: "kubectl-edit"}, {Path: ".metadata.annotations.note", Old: `"<b>a, b</b>"`, New: ""}}
	if d.Object != (Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"}) || fmt.Sprint(d.Fields) != fmt.Sprint(want) {
		t.Fatalf("drift %+v, want fields %+v", d, want)
	}
	getJSON(t, base+"api/drift?owner=Kustomization/"+ns+"/other", &dl)
	if len(dl.Drift) != 0 {
		t.Fatalf("drift of another owner: %+v", dl)
	}
}

// TestSecretYAMLRedacted: the YAML page shows a Secret's keys, not its
// values (nor kubectl's copy of them in last-applied-configuration).
func TestSecretYAMLRedacted(t *testing.T) {
	ns := fixture(t, "ok")
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds", Annotations: map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"hunter2-secret"}}`}},
		StringData: map[string]string{"password": "hunter2-secret"}}
	if err := env.Client.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	base := serve(t, Options{Config: env.Config})
	var y YAML
	if code := getJSON(t, base+"api/yaml?apiVersion=v1&kind=Secret&namespace="+ns+"&name=creds", &y); code != 200 {
		t.Fatalf("GET yaml: %d", code)
	}
	if strings.Contains(y.YAML, "hunter2") || strings.Contains(y.YAML, "aHVudGVyMi") || !strings.Contains(y.YAML, "password: '(redacted: 14 bytes)'") {
		t.Fatalf("Secret YAML:\n%s", y.YAML)
	}
}

// TestServedVersion: a kind whose CRD does not serve the version Eddy
// stores (Flux before 2.10 serves Alert as v1beta3 only) is read at a
// version the cluster serves, not hidden.
func TestServedVersion(t *testing.T) {
	ctx := context.Background()
	ns := fixture(t, "ok")
	alert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
		"metadata": map[string]any{"namespace": ns, "name": "old"},
		"spec": map[string]any{"providerRef": map[string]any{"name": "slack"},
			"eventSources": []any{map[string]any{"kind": "Kustomization", "name": "*"}}}}}
	if err := env.Client.Create(ctx, alert); err != nil {
		t.Fatal(err)
	}
	served := func(on bool) {
		t.Helper()
		var crd apiextensionsv1.CustomResourceDefinition
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "alerts.notification.toolkit.fluxcd.io"}, &crd); err != nil {
			t.Fatal(err)
		}
		for i := range crd.Spec.Versions {
			if crd.Spec.Versions[i].Name == "v1" {
				crd.Spec.Versions[i].Served = on
			}
		}
		if err := env.Client.Update(ctx, &crd); err != nil {
			t.Fatal(err)
		}
		// Wait until discovery says so.
		dc := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
		deadline := time.Now().Add(30 * time.Second)
		for {
			rl, _ := dc.ServerResourcesForGroupVersion("notification.toolkit.fluxcd.io/v1")
			has := false
			if rl != nil {
				for _, r := range rl.APIResources {
					has = has || r.Name == "alerts"
				}
			}
			if has == on {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("discovery still says v1 alerts served=%v", has)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	served(false)
	t.Cleanup(func() { served(true) })
	base := serve(t, Options{Config: env.Config})
	var objs Objects
	getJSON(t, base+"api/objects", &objs)
	found := false
	for _, o := range objs.Objects {
		found = found || (o.Kind == "Alert" && o.Namespace == ns && o.Name == "old")
	}
	if !found || slices.Contains(objs.Hidden, "Alert") {
		t.Fatalf("Alert served as v1beta3 only: listed %v, hidden %v", found, objs.Hidden)
	}
	var sess Session
	getJSON(t, base+"api/session", &sess)
	if code, body := post(t, base+"api/action/suspend", sess.CSRFToken, Action{Ref: Ref{Kind: "Alert", Namespace: ns, Name: "old"}}); code != 200 {
		t.Fatalf("suspend an Alert served as v1beta3: %d %v", code, body)
	}
}

// TestWatchRefused: a watch refused (401/403: permissions revoked while the
// UI runs) shows the banner with its own message, and the probe reaching
// /version does not lift it.
func TestWatchRefused(t *testing.T) {
	s := &store{hub: newHub(), connected: true}
	events := s.hub.subscribe()
	s.watchError(context.Background(), nil, apierrors.NewForbidden(schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}, "", fmt.Errorf("RBAC")))
	s.setConnected(true, "") // the probe
	if st := s.status(); st.Connected || st.Message != deniedMessage {
		t.Fatalf("after a refused watch and a good probe: %+v", st)
	}
	if msg := string(<-events); !strings.Contains(msg, `"connected":false`) || !strings.Contains(msg, "restart eddy ui") {
		t.Fatalf("status event: %s", msg)
	}
	select {
	case msg := <-events:
		t.Fatalf("the probe published %s", msg)
	default:
	}
}

// lockedBuffer is a log the server writes from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package dev

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/eddyops/eddy/pkg/gitserver"
)

// The recorder appends each event to logs/events.log and forwards it
// unchanged to notification-controller, answering with its status; with
// notification-controller down it answers 502, so the controllers retry.
func TestEventRecorderRecordsAndForwards(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got [][]byte
	status := http.StatusAccepted
	nc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		code := status
		mu.Unlock()
		if r.Header.Get("Content-Type") != "application/json" {
			code = http.StatusUnsupportedMediaType
		}
		w.WriteHeader(code)
	}))
	e := &Env{Opts: Options{StateDir: dir}}
	e.state.NotificationAddr = nc.URL + "/"
	port, err := e.startEventRecorder()
	if err != nil {
		t.Fatal(err)
	}
	defer e.events.Close()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	post := func(body string) int {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ev := `{"involvedObject":{"kind":"Kustomization","namespace":"flux-system","name":"apps"},"severity":"info","message":"m","reason":"r","reportingController":"kustomize-controller"}`
	if code := post(ev); code != http.StatusAccepted {
		t.Errorf("first event: %d, want 202 (notification-controller's answer)", code)
	}
	mu.Lock()
	status = http.StatusTooManyRequests
	mu.Unlock()
	if code := post(ev); code != http.StatusTooManyRequests {
		t.Errorf("repeat: %d, want notification-controller's 429", code)
	}
	if code := post("not json"); code != http.StatusBadRequest {
		t.Errorf("invalid body: %d, want 400", code)
	}
	if code := post(`"` + strings.Repeat("x", maxEventBytes) + `"`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 3 MiB: %d, want 413", code)
	}
	nc.Close()
	if code := post(ev); code != http.StatusBadGateway {
		t.Errorf("notification-controller down: %d, want 502", code)
	}
	mu.Lock()
	if len(got) != 2 || string(got[0]) != ev {
		t.Errorf("notification-controller got %d events (%q), want the 2 valid ones unchanged", len(got), got)
	}
	mu.Unlock()
	data, err := os.ReadFile(filepath.Join(dir, "logs", "events.log"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 3 || lines[2] != ev {
		t.Errorf("events.log has %d lines, want the 3 valid events:\n%s", len(lines), data)
	}
}

// The sink prints one line per alert: severity, object, revision, message.
func TestAlertsSink(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	var lines []string
	e := &Env{Opts: Options{StateDir: dir, OnAlert: func(l string) { lines = append(lines, l) }}}
	port, err := e.startAlertsSink()
	if err != nil {
		t.Fatal(err)
	}
	defer e.servers[0].Close()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	body := `{"involvedObject":{"kind":"Kustomization","namespace":"flux-system","name":"apps"},"severity":"info",` +
		`"message":"ConfigMap/production/payment-config configured\nService/production/x created","reason":"Progressing",` +
		`"metadata":{"revision":"main@sha1:0123456789abcdef0123456789abcdef01234567"},"reportingController":"kustomize-controller"}`
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("alert answered %d, want 200", resp.StatusCode)
	}
	resp, err = http.Post(url, "application/json", strings.NewReader(`{"message":"no object"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a body that is no event answered %d, want 400", resp.StatusCode)
	}
	want := "alert info Kustomization/flux-system/apps main@sha1:0123456789abcdef0123456789abcdef01234567: " +
		"ConfigMap/production/payment-config configured; Service/production/x created"
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("printed %q, want [%q]", lines, want)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "logs", "alerts.log"))
	if !strings.HasSuffix(strings.TrimSpace(string(data)), want) || strings.Count(string(data), "\n") != 1 {
		t.Errorf("alerts.log:\n%s\nwant one line ending in %q", data, want)
	}
}

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeT(t, filepath.Join(dir, "a.yaml"), "a: 1\n")
	commitAll(t, dir)
	return dir
}

// The hook is a script that runs `eddy dev hook post-commit` with the state
// directory and no secret; it replaces only Eddy's own hook; a commit with
// the hook and no environment running succeeds and prints one line.
func TestInstallHook(t *testing.T) {
	repo := gitRepo(t)
	state := filepath.Join(t.TempDir(), "state dir's") // a quote and a space
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := WebhookToken(state); err != nil {
		t.Fatal(err)
	}
	token, _ := os.ReadFile(tokenFile(state))
	// A stand-in for bin/eddy that records its arguments.
	fake := filepath.Join(t.TempDir(), "eddy")
	argsFile := filepath.Join(t.TempDir(), "args")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > '"+argsFile+"'\necho 'eddy dev: sent'\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := InstallHook(repo, fake, state)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(repo, ".git", "hooks", "post-commit") {
		t.Errorf("hook at %s", path)
	}
	script, _ := os.ReadFile(path)
	if bytes.Contains(script, bytes.TrimSpace(token)) {
		t.Error("the hook holds the token")
	}
	if !IsEddyHook(path) {
		t.Error("IsEddyHook is false for the installed hook")
	}
	commit := func() string {
		t.Helper()
		cmd := exec.Command("git", "commit", "-q", "--allow-empty", "-m", "x")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git commit failed with the hook: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := commit(); strings.TrimSpace(out) != "eddy dev: sent" {
		t.Errorf("commit output %q, want the command's one line", out)
	}
	args, _ := os.ReadFile(argsFile)
	if want := "dev\nhook\npost-commit\n--state-dir\n" + state + "\n"; string(args) != want {
		t.Errorf("the hook ran eddy with %q, want %q", args, want)
	}
	// Installing again replaces Eddy's own hook.
	if _, err := InstallHook(repo, fake, state); err != nil {
		t.Errorf("reinstalling over Eddy's hook: %v", err)
	}
	// eddy gone: the commit still succeeds, with one line.
	if err := os.Remove(fake); err != nil {
		t.Fatal(err)
	}
	if out := commit(); strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "not found: commit not sent") {
		t.Errorf("commit output without eddy: %q", out)
	}

	// A user's own hook is never overwritten.
	other := gitRepo(t)
	own := filepath.Join(other, ".git", "hooks", "post-commit")
	if err := os.WriteFile(own, []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = InstallHook(other, fake, state)
	if err == nil || !strings.Contains(err.Error(), "is not Eddy's") || strings.Contains(err.Error(), "\n") {
		t.Errorf("installing over a user's hook: %v; want a one-line refusal", err)
	}
	if data, _ := os.ReadFile(own); string(data) != "#!/bin/sh\necho mine\n" {
		t.Errorf("the user's hook changed: %q", data)
	}

	// core.hooksPath is honoured.
	if _, err := gitserver.Git(other, "config", "core.hooksPath", "githooks"); err != nil {
		t.Fatal(err)
	}
	if p, err := InstallHook(other, fake, state); err != nil || p != filepath.Join(other, "githooks", "post-commit") {
		t.Errorf("with core.hooksPath: %s, %v", p, err)
	}
}

// PostCommit with no environment running prints one line and sends nothing.
func TestPostCommitNotRunning(t *testing.T) {
	var out bytes.Buffer
	PostCommit(t.Context(), t.TempDir(), gitRepo(t), &out)
	if s := out.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "no environment running") || !strings.Contains(s, "commit not sent") {
		t.Errorf("output %q; want one line saying no environment runs", s)
	}
}

// The token is random, kept (mode 0600) and reused.
func TestWebhookToken(t *testing.T) {
	dir := t.TempDir()
	a, err := WebhookToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := WebhookToken(dir)
	c, _ := WebhookToken(t.TempDir())
	if a != b || a == c || len(a) != 64 {
		t.Errorf("tokens %q %q %q: want a kept 64-hex-digit token, different per state directory", a, b, c)
	}
	if fi, err := os.Stat(tokenFile(dir)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode: %v %v", fi.Mode(), err)
	}
}

// TestAlertLineCutsOnARuneBoundary: a long message is cut to 300 characters
// and stays valid UTF-8 (a byte cut once split a multi-byte character).
func TestAlertLineCutsOnARuneBoundary(t *testing.T) {
	msg := strings.Repeat("é", 400)
	body, _ := json.Marshal(map[string]any{
		"involvedObject": map[string]string{"kind": "Kustomization", "namespace": "flux-system", "name": "apps"},
		"severity":       "error",
		"message":        msg,
	})
	line, err := AlertLine(body)
	if err != nil {
		t.Fatal(err)
	}
	want := "alert error Kustomization/flux-system/apps: " + strings.Repeat("é", 300) + "…"
	if line != want || !utf8.ValidString(line) {
		t.Errorf("AlertLine = %q (valid UTF-8: %v), want %q", line, utf8.ValidString(line), want)
	}
}

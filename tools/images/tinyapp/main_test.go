package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// podinfo's kustomize/deployment.yaml runs the container with this command
// (the image override replaces only the image).
var podinfoArgs = []string{"--port=0", "--port-metrics=0", "--grpc-port=9999", "--grpc-service-name=podinfo",
	"--level=info", "--random-delay=false", "--random-error=false"}

func start(t *testing.T, args []string, env map[string]string) (addr string, logs *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs = new(bytes.Buffer)
	go func() {
		done <- serve(ctx, args, func(k string) string { return env[k] }, logs, ready)
	}()
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not listening after 10s")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve after shutdown: %v", err)
		}
	})
	return addr, logs
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func check(args ...string) (int, string) {
	var out bytes.Buffer
	code := podcli(args, &out, &out)
	return code, out.String()
}

func TestPodinfoCommandServesAndProbesPass(t *testing.T) {
	addr, logs := start(t, podinfoArgs, nil)
	for _, p := range []string{"/", "/healthz", "/readyz", "/version"} {
		if code, body := get(t, "http://"+addr+p); code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	if code, _ := get(t, "http://"+addr+"/nothing"); code != 404 {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
	// The probes, as podinfo's manifests write them: no scheme.
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, out := check("check", "http", addr+p); code != 0 {
			t.Errorf("podcli check http %s: exit %d: %s", p, code, out)
		}
	}
	_, port, _ := net.SplitHostPort(addr)
	if code, out := check("check", "http", "localhost:"+port+"/readyz"); code != 0 {
		t.Errorf("podcli check http localhost:%s/readyz: exit %d: %s", port, code, out)
	}
	if code, out := check("check", "tcp", addr); code != 0 {
		t.Errorf("podcli check tcp: exit %d: %s", code, out)
	}
	if !strings.Contains(logs.String(), "ignoring podinfo flags it does not implement: --grpc-port=9999 --grpc-service-name=podinfo --level=info --random-delay=false --random-error=false") {
		t.Errorf("logs: %s", logs)
	}
}

func TestUnreadyAndUnhealthy(t *testing.T) {
	addr, _ := start(t, []string{"--port=0", "--unready"}, nil)
	if code, _ := check("check", "http", addr+"/readyz"); code != 1 {
		t.Errorf("readyz check with --unready: exit %d, want 1", code)
	}
	if code, _ := check("check", "http", addr+"/healthz"); code != 0 {
		t.Errorf("healthz check with --unready: exit %d, want 0", code)
	}
	// From the environment, as a Deployment's env sets it.
	addr, _ = start(t, []string{"--port=0"}, map[string]string{"PODINFO_UNHEALTHY": "true"})
	if code, _ := check("check", "http", "http://"+addr+"/healthz"); code != 1 {
		t.Errorf("healthz check with PODINFO_UNHEALTHY: exit %d, want 1", code)
	}
}

func TestPrefixAndMetrics(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metrics := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(metrics)
	addr, _ := start(t, []string{"--host=127.0.0.1", "--port=0", "--prefix=/app/", "--port-metrics=" + port}, nil)
	if code, _ := get(t, "http://"+addr+"/app/healthz"); code != 200 {
		t.Errorf("GET /app/healthz: %d", code)
	}
	if code, _ := get(t, "http://"+addr+"/healthz"); code != 404 {
		t.Errorf("GET /healthz with a prefix: %d, want 404", code)
	}
	if code, body := get(t, "http://"+metrics+"/metrics"); code != 200 || !strings.Contains(body, "tinyapp_requests_total 2") {
		t.Errorf("GET /metrics: %d %s", code, body)
	}
}

func TestCrash(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{{args: []string{"--crash"}}, {env: map[string]string{"PODINFO_CRASH": "1"}}} {
		err := serve(context.Background(), append([]string{"--port=0"}, c.args...), func(k string) string { return c.env[k] }, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "exiting 1") {
			t.Errorf("%v %v: %v, want the crash", c.args, c.env, err)
		}
	}
	err := serve(context.Background(), nil, func(k string) string { return map[string]string{"PODINFO_PORT": "x"}[k] }, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "PODINFO_PORT") {
		t.Errorf("a bad PODINFO_PORT: %v", err)
	}
}

func TestCheckFailsOnNoServerAndUsage(t *testing.T) {
	if code, _ := check("check", "http", "--timeout=1s", "127.0.0.1:1/healthz"); code != 1 {
		t.Errorf("nothing listening: exit %d, want 1", code)
	}
	if code, _ := check("check", "grpc", "x"); code != 2 {
		t.Errorf("unknown check: exit %d, want 2", code)
	}
}

// TestCommandLineWinsOverServiceLinks runs the server in a pod's
// environment beside a Service named podinfo: Kubernetes' service links
// set PODINFO_PORT=tcp://<IP>:<port>, which is no port; podinfo's
// manifests pass --port, which wins.
func TestCommandLineWinsOverServiceLinks(t *testing.T) {
	addr, _ := start(t, []string{"--port=0"}, map[string]string{"PODINFO_PORT": "tcp://10.96.0.5:9898", "PODINFO_UNREADY": "true"})
	if code, _ := check("check", "http", addr+"/healthz"); code != 0 {
		t.Errorf("healthz check: exit %d, want 0", code)
	}
	// The environment still sets what the command line does not.
	if code, _ := check("check", "http", addr+"/readyz"); code != 1 {
		t.Errorf("readyz check with PODINFO_UNREADY: exit %d, want 1", code)
	}
}

package controllerkit

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// restConfigAgainst returns RESTConfig's answer, with the default flags,
// for an API server that sets header on every answer (empty: none).
func restConfigAgainst(t *testing.T, header string) (float32, int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if header != "" {
			w.Header().Set(header, "4b7c3a5e-0000-4000-8000-000000000001")
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	doc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs, 4)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.QPS, cfg.Burst
}

func TestClientHasNoRateLimiterWhenTheServerHasPriorityAndFairness(t *testing.T) {
	if qps, burst := restConfigAgainst(t, "X-Kubernetes-PF-FlowSchema-UID"); qps >= 0 || burst >= 0 {
		t.Errorf("QPS %v, burst %d with API Priority and Fairness on; want negative (no client-side limiter, as Flux)", qps, burst)
	}
}

func TestClientKeepsTheFlagLimitsWithoutPriorityAndFairness(t *testing.T) {
	if qps, burst := restConfigAgainst(t, ""); qps != 50 || burst != 300 {
		t.Errorf("QPS %v, burst %d without API Priority and Fairness; want the flags' 50 and 300", qps, burst)
	}
}

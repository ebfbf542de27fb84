package ssa_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// requestCounter counts a client's requests to resources by verb and
// resource, e.g. "GET configmaps", "LIST configmaps" or "PATCH configmaps dry-run";
// discovery requests are left out.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if key := requestKey(r); key != "" {
			c.mu.Lock()
			c.n[key]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// requestKey is "<verb> <resource>[ dry-run]" (verb LIST for a GET of a
// collection); "" for discovery.
func requestKey(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) > 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) > 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return ""
	}
	if parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	method := r.Method
	if method == http.MethodGet && len(parts) == 1 {
		method = "LIST"
	}
	key := method + " " + parts[0]
	if r.URL.Query().Get("dryRun") != "" {
		key += " dry-run"
	}
	return key
}

// take returns the counts since the last take and resets them.
func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

func format(n map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%s=%d", k, n[k]))
	}
	return strings.Join(out, " ")
}

// countingManager is a Manager whose requests c counts; as the user
// impersonate, when given.
func countingManager(t *testing.T, impersonate ...string) (*ssa.Manager, *requestCounter) {
	t.Helper()
	counter := &requestCounter{n: map[string]int{}}
	cfg := rest.CopyConfig(env.Config)
	if len(impersonate) > 0 {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: impersonate[0]}
	}
	cfg.WrapTransport = counter.wrap
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &ssa.Manager{Client: c, Owner: "kustomize-controller", StageTimeout: 30 * time.Second, Poll: 100 * time.Millisecond}, counter
}

// An unchanged re-apply without a memo (a requested reconcile) costs a
// dry-run and a get per object, nothing more, also after a change that
// removed a defaulted field.
func TestUnchangedReapplyRequests(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	m, counter := countingManager(t)
	docs := []string{
		dbService(ns, "clusterIP: None, sessionAffinity: None, "),
		configMap(ns, "cm", "1"),
		deployment(ns, 2, "{name: c, image: nginx}"),
	}
	if _, err := m.ApplyAll(ctx, objects(t, docs...), ssa.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"GET services": 1, "PATCH services dry-run": 1, "GET configmaps": 1, "PATCH configmaps dry-run": 1,
		"GET deployments": 1, "PATCH deployments dry-run": 1}
	for i, step := range []string{"re-apply", "removal of sessionAffinity", "re-apply after it"} {
		if i == 1 {
			docs[0] = dbService(ns, "clusterIP: None, ")
		}
		counter.take()
		cs, err := m.ApplyAll(ctx, objects(t, docs...), ssa.ApplyOptions{})
		if err != nil {
			t.Fatal(step, err)
		}
		got := counter.take()
		if i == 1 {
			continue
		}
		for _, c := range cs {
			if c.Action != ssa.Unchanged {
				t.Errorf("%s: %s, want unchanged", step, c)
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: requests %s, want %s", step, format(got), format(want))
		}
	}
}

// The request budget of a set with a memo (a Kustomization's periodic
// reconcile): a first apply costs a dry-run and an apply per object (no
// read: the dry-run's answer tells a new object, a new Namespace too, from
// an existing one); an unchanged one a read per object; a change a read
// per object and a dry-run and an apply of the changed one; and the first
// unchanged apply after it a read per object again (the apply's answer is
// remembered).
func TestApplyRequestBudget(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t) + "-own"
	m, counter := countingManager(t)
	m.Memo, m.MemoScope = ssa.NewUnchangedMemo(0, 0), "ns/budget"
	set := func(value string) []string {
		return []string{
			fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
			configMap(ns, "cm", value),
			fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: %s}\nstringData: {K: v}\n", ns),
			dbService(ns, ""),
			deployment(ns, 1, "{name: c, image: nginx}"),
		}
	}
	resources := []string{"namespaces", "configmaps", "secrets", "services", "deployments"}
	// each counts the requests per object, plus extra ones.
	each := func(perObject []string, extra ...string) map[string]int {
		n := map[string]int{}
		for _, r := range resources {
			for _, verb := range perObject {
				n[strings.Replace(verb, "%", r, 1)]++
			}
		}
		for _, e := range extra {
			n[e]++
		}
		return n
	}
	for _, step := range []struct {
		name, value string
		want        map[string]int
	}{
		{"first apply", "1", each([]string{"PATCH % dry-run", "PATCH %"})},
		{"unchanged", "1", each([]string{"GET %"})},
		{"a changed ConfigMap", "2", each([]string{"GET %"}, "PATCH configmaps dry-run", "PATCH configmaps")},
		{"first unchanged after the change", "2", each([]string{"GET %"})},
	} {
		counter.take()
		if _, err := m.ApplyAll(ctx, objects(t, set(step.value)...), ssa.ApplyOptions{}); err != nil {
			t.Fatal(step.name, err)
		}
		if got := counter.take(); !maps.Equal(got, step.want) {
			t.Errorf("%s: requests %s, want %s", step.name, format(got), format(step.want))
		}
	}
}

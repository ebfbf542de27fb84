package kustomize

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// Remote bases are refused before kustomize runs, with a message naming
// the entry and the kustomization file: nothing is cloned (no temporary
// directory is left behind) and nothing is downloaded.
func TestRemoteBasesAreRefusedBeforeKustomizeRuns(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-the-network, namespace: default}\n")
	}))
	defer srv.Close()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where kustomize would clone a repository

	const suffix = ": remote bases are not supported by Eddy yet"
	for _, c := range []struct{ kustomization, want string }{
		{"resources:\n- https://github.com/x/y//base?ref=v1\n", "remote resource 'https://github.com/x/y//base?ref=v1' in app/kustomization.yaml"},
		{"resources:\n- " + srv.URL + "/cm.yaml\n", "remote resource '" + srv.URL + "/cm.yaml' in app/kustomization.yaml"},
		{"resources:\n- github.com/org/repo//deploy?ref=v1\n", "remote resource 'github.com/org/repo//deploy?ref=v1' in app/kustomization.yaml"},
		{"resources:\n- git@github.com:org/repo.git//deploy\n", "remote resource 'git@github.com:org/repo.git//deploy' in app/kustomization.yaml"},
		{"resources:\n- git::https://example.com/org/repo\n", "remote resource 'git::https://example.com/org/repo' in app/kustomization.yaml"},
		{"resources:\n- file:///tmp/repo//app?ref=v1\n", "remote resource 'file:///tmp/repo//app?ref=v1' in app/kustomization.yaml"},
		{"resources:\n- example.com/org/repo//deploy?ref=main\n", "remote resource 'example.com/org/repo//deploy?ref=main' in app/kustomization.yaml"},
		{"bases:\n- ssh://git@example.com/org/repo\n", "remote base 'ssh://git@example.com/org/repo' in app/kustomization.yaml"},
		{"resources: [cm.yaml]\ncomponents:\n- https://example.com/org/repo//component\n", "remote component 'https://example.com/org/repo//component' in app/kustomization.yaml"},
		{"resources: [cm.yaml]\npatches:\n- path: " + srv.URL + "/patch.yaml\n", "remote patch '" + srv.URL + "/patch.yaml' in app/kustomization.yaml"},
		{"resources: [cm.yaml]\nopenapi: {path: " + srv.URL + "/schema.json}\n", "remote openapi '" + srv.URL + "/schema.json' in app/kustomization.yaml"},
		{"configMapGenerator:\n- name: c\n  files: [key=" + srv.URL + "/v]\n", "remote file '" + srv.URL + "/v' in app/kustomization.yaml"},
		// Credentials in the entry are masked (pkg/redact): beyond SSH the
		// whole userinfo, a token as user included; an SSH login name is kept.
		{"resources:\n- https://ghp_s3cretToken@github.com/org/repo//deploy?ref=v1\n", "remote resource 'https://xxxxx@github.com/org/repo//deploy?ref=v1' in app/kustomization.yaml"},
		{"resources:\n- git::https://user:s3cret@example.com/org/repo\n", "remote resource 'git::https://xxxxx@example.com/org/repo' in app/kustomization.yaml"},
		{"bases:\n- ssh://git:s3cret@example.com/org/repo\n", "remote base 'ssh://git:xxxxx@example.com/org/repo' in app/kustomization.yaml"},
		{"configMapGenerator:\n- name: c\n  files: [key=https://ghp_s3cretToken@example.com/v]\n", "remote file 'https://xxxxx@example.com/v' in app/kustomization.yaml"},
		// Reached through local bases: the file naming it is reported.
		{"resources: [../base]\n", "remote resource 'https://github.com/x/y//base?ref=v1' in nested/kustomization.yaml"},
	} {
		root := writeFiles(t, map[string]string{
			"app/kustomization.yaml":    c.kustomization,
			"app/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n",
			"base/kustomization.yaml":   "resources: [cm.yaml, ../nested]\n",
			"base/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: default}\n",
			"nested/kustomization.yaml": "resources:\n- https://github.com/x/y//base?ref=v1\n",
		})
		for range 2 {
			_, err := Build(root, Options{Path: "app"})
			if err == nil || err.Error() != c.want+suffix || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%q:\n got %v\nwant %s", c.kustomization, err, c.want+suffix)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the HTTP server was asked %d times", n)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// Local entries that only look like remote ones are still built: a file
// kustomize reads before trying a repository, and a local directory.
func TestLocalEntriesAreNotTakenForRemoteOnes(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"app/kustomization.yaml":         "resources:\n- github.com/mirror.yaml\n- ../vendor//base\n- ../base\n",
		"app/github.com/mirror.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n",
		"vendor/base/kustomization.yaml": "resources: [cm.yaml]\n",
		"vendor/base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: default}\n",
		"base/kustomization.yaml":        "resources: [cm.yaml]\nconfigMapGenerator:\n- name: g\n  files: [k=cm.yaml]\n",
		"base/cm.yaml":                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\n",
	})
	res, err := Build(root, Options{Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Objects); got != 4 {
		t.Errorf("built %d objects, want 4 (a, b, c and the generated g)", got)
	}
}

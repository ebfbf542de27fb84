package kustomize

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// containers returns the name → image of a built Deployment's containers,
// or nil (and a test error) if the build is not one object.
func containers(t *testing.T, res *Result) map[string]any {
	t.Helper()
	if len(res.Objects) != 1 {
		t.Errorf("%d objects, want 1", len(res.Objects))
		return nil
	}
	spec := res.Objects[0].Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	out := map[string]any{}
	for _, c := range spec["containers"].([]any) {
		c := c.(map[string]any)
		out[c["name"].(string)] = c["image"]
	}
	return out
}

// A kustomization's openapi field sets kyaml's process-wide schema; a later
// build of another kustomization must still merge containers by name with
// the built-in schema, not replace the list as the custom schema says.
func TestCustomOpenAPISchemaDoesNotLeakIntoLaterBuilds(t *testing.T) {
	root := openAPITree(t)
	res, err := Build(root, Options{Path: "custom"})
	if err != nil {
		t.Fatal(err)
	}
	if got := containers(t, res); len(got) != 1 || got["web"] != "nginx:2" {
		t.Fatalf("custom schema build: containers %v; want the list replaced by the patch's (the schema has no merge keys)", got)
	}
	res, err = Build(root, Options{Path: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if got := containers(t, res); len(got) != 2 || got["web"] != "nginx:2" || got["side"] != "busybox" {
		t.Errorf("plain build after a custom schema build: containers %v; want web=nginx:2 merged with side=busybox", got)
	}
}

// Builds running at the same time do not see each other's schema either.
func TestCustomOpenAPISchemaDoesNotLeakIntoConcurrentBuilds(t *testing.T) {
	root := openAPITree(t)
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, want := "plain", 2
			if i%2 == 1 {
				p, want = "custom", 1
			}
			res, err := Build(root, Options{Path: p})
			if err != nil {
				t.Error(err)
				return
			}
			if got := containers(t, res); len(got) != want {
				t.Errorf("%s: containers %v, want %d", p, got, want)
			}
		}()
	}
	wg.Wait()
}

// openAPITree holds "plain", a Deployment with two containers and a
// strategic merge patch of one, and "custom", the same with an openapi
// schema that gives Deployment.spec no merge keys.
func openAPITree(t *testing.T) *Tree {
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}, {name: side, image: busybox}]}}}\n"
	const patch = "patches:\n- patch: |\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n    spec: {template: {spec: {containers: [{name: web, image: nginx:2}]}}}\n"
	return writeFiles(t, map[string]string{
		"plain/kustomization.yaml":  "resources: [deploy.yaml]\n" + patch,
		"plain/deploy.yaml":         deploy,
		"custom/kustomization.yaml": "resources: [../plain/deploy.yaml]\nopenapi: {path: schema.json}\n" + patch,
		// Deployment.spec as a plain object: no merge keys, so a strategic
		// merge patch replaces the containers list.
		"custom/schema.json": `{"definitions": {"io.k8s.api.apps.v1.Deployment": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}], "properties": {"spec": {"type": "object"}}}}}`,
	})
}

// Flux compatible: spec.path is joined under the artifact root (SecureJoin),
// so an absolute path names a directory of the artifact; only a relative
// path climbing out of the root is refused, and a missing directory is
// ErrPathNotFound.
func TestSpecPathIsTakenUnderTheArtifactRoot(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n",
		"file.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: default}\n",
	})
	for _, p := range []string{"apps", "./apps", "/apps", "/apps/", "/../apps", "apps/../apps"} {
		res, err := Build(root, Options{Path: p})
		if err != nil {
			t.Errorf("spec.path %q: %v", p, err)
			continue
		}
		if len(res.Objects) != 1 || res.Objects[0].GetName() != "a" {
			t.Errorf("spec.path %q built %d objects, want ConfigMap a", p, len(res.Objects))
		}
	}
	for _, p := range []string{"..", "../apps", "apps/../../apps"} {
		_, err := Build(root, Options{Path: p})
		if want := "spec.path '" + p + "' points outside the artifact"; err == nil || err.Error() != want {
			t.Errorf("spec.path %q: got %v, want %q", p, err, want)
		}
	}
	for _, p := range []string{"missing", "/missing", "file.yaml"} {
		_, err := Build(root, Options{Path: p})
		if !errors.Is(err, ErrPathNotFound) || !strings.HasPrefix(err.Error(), "kustomization path not found: '"+p+"'") {
			t.Errorf("spec.path %q: got %v, want ErrPathNotFound naming the path", p, err)
		}
	}
}

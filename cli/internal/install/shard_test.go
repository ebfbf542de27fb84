package install

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func sharded() Options {
	o := DefaultOptions("v1")
	o.Namespace = "gitops"
	o.ClusterDomain = "corp.example"
	o.Shards = []string{"a", "b"}
	return o
}

// TestShards: a Deployment per shard and sharded controller, with the
// main one's pod spec, its own app label and selector, the shard's
// --watch-label-selector (source-controller: its own Service and storage
// address); the main controllers skip labelled objects;
// notification-controller is not sharded.
func TestShards(t *testing.T) {
	objs := objects(t, sharded())
	plain := objects(t, func() Options { o := sharded(); o.Shards = nil; return o }())
	if len(objs) != len(plain)+2*3+2 {
		t.Errorf("%d objects, want %d: the unsharded %d plus 6 Deployments and 2 Services", len(objs), len(plain)+8, len(plain))
	}
	for _, c := range ShardedComponents {
		main := managerArgs(t, objs, c)
		if want := append(managerArgs(t, plain, c), "--watch-label-selector=!sharding.fluxcd.io/key"); !slices.Equal(main, want) {
			t.Errorf("%s args\n%q, want\n%q", c, main, want)
		}
		for _, shard := range []string{"a", "b"} {
			name := c + "-" + shard
			d := find(objs, "Deployment", name)
			if d == nil {
				t.Fatalf("no Deployment %s", name)
			}
			want := append(managerArgs(t, plain, c), "--watch-label-selector=sharding.fluxcd.io/key in ("+shard+")")
			if c == "source-controller" {
				for i, a := range want {
					if strings.HasPrefix(a, "--storage-adv-addr=") {
						want[i] = "--storage-adv-addr=source-controller-" + shard + ".$(RUNTIME_NAMESPACE).svc.corp.example."
					}
				}
			}
			if got := managerArgs(t, objs, name); !slices.Equal(got, want) {
				t.Errorf("%s args\n%q, want\n%q", name, got, want)
			}
			sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
			pod, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
			if len(sel) != 1 || sel["app"] != name || pod["app"] != name || pod[ComponentLabel] != c || pod[PartOfLabel] != "flux" {
				t.Errorf("%s selector %v, pod labels %v", name, sel, pod)
			}
			if l := d.GetLabels(); l[ComponentLabel] != c || l[PartOfLabel] != "flux" || d.GetNamespace() != "gitops" {
				t.Errorf("%s labels %v namespace %s", name, l, d.GetNamespace())
			}
			// The same pod spec but for the args.
			mainSpec, _, _ := unstructured.NestedMap(find(plain, "Deployment", c).Object, "spec", "template", "spec")
			spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			for _, s := range []map[string]any{mainSpec, spec} {
				cs := s["containers"].([]any)
				delete(cs[0].(map[string]any), "args")
			}
			if !equalJSON(mainSpec, spec) {
				t.Errorf("%s pod spec differs from %s's beyond args", name, c)
			}
			svc := find(objs, "Service", name)
			if c != "source-controller" {
				if svc != nil {
					t.Errorf("a Service %s", name)
				}
				continue
			}
			if svc == nil {
				t.Fatalf("no Service %s", name)
			}
			if s, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); len(s) != 1 || s["app"] != name {
				t.Errorf("Service %s selects %v", name, s)
			}
		}
	}
	if find(objs, "Deployment", "notification-controller-a") != nil {
		t.Error("notification-controller is sharded")
	}
	if got := managerArgs(t, objs, "notification-controller"); !slices.Equal(got, managerArgs(t, plain, "notification-controller")) {
		t.Errorf("notification-controller args changed: %q", got)
	}
	// A subset of components: only those installed are sharded.
	sub := subset()
	sub.Shards = []string{"x"}
	objs = objects(t, sub)
	if find(objs, "Deployment", "kustomize-controller-x") == nil || find(objs, "Deployment", "helm-controller-x") != nil {
		t.Error("with source- and kustomize-controller only: want kustomize-controller-x and no helm-controller-x")
	}
}

// TestBadShards: empty, invalid, too long and repeated shard names are
// refused with one line naming --shards.
func TestBadShards(t *testing.T) {
	for _, tc := range []struct {
		shards []string
		want   string
	}{
		{[]string{"a", ""}, "--shards has an empty shard name"},
		{[]string{"Shard_1"}, `--shards "Shard_1" is not a valid shard name`},
		{[]string{"a.b"}, `--shards "a.b" is not a valid shard name`},
		{[]string{strings.Repeat("s", 43)}, "is too long: at most 42 characters"},
		{[]string{"a", "b", "a"}, `--shards "a" is given twice`},
	} {
		o := DefaultOptions("v1")
		o.Shards = tc.shards
		if _, err := Render(o); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("shards %q: error %v, want %q", tc.shards, err, tc.want)
		}
	}
	o := DefaultOptions("v1")
	o.Shards = []string{strings.Repeat("s", 42), "shard-1", "0"}
	if err := o.Validate(); err != nil {
		t.Errorf("valid shards refused: %v", err)
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := (&unstructured.Unstructured{Object: a}).MarshalJSON()
	y, _ := (&unstructured.Unstructured{Object: b}).MarshalJSON()
	return string(x) == string(y)
}

package postrender

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
)

func podinfoRender(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.TestdataDir(t),
		"expected/podinfo/helm-template/flux-example-production-values/expected-render.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func decode(t *testing.T, data []byte) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		out[u.GetKind()+"/"+u.GetName()] = u
	}
}

func release() *helmv2.HelmRelease {
	return &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "flux-apps"}}
}

// Patches with targets, images, commonMetadata and origin labels on
// podinfo's real render, in Flux's order.
func TestBuildPodinfo(t *testing.T) {
	in := podinfoRender(t)
	hr := release()
	hr.Spec.PostRenderers = []helmv2.PostRenderer{
		{Kustomize: &helmv2.Kustomize{
			Patches: []kustomizev1.Patch{
				{ // strategic merge, by name
					Patch:  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\nspec:\n  replicas: 3\n",
					Target: &kustomizev1.Selector{Kind: "Deployment", Name: "podinfo"},
				},
				{ // JSON 6902, by label selector: only the redis objects
					Patch:  `[{"op":"add","path":"/metadata/labels/stage","value":"one"}]`,
					Target: &kustomizev1.Selector{LabelSelector: "app=podinfo-redis"},
				},
			},
			Images: []kustomizev1.Image{{Name: "ghcr.io/stefanprodan/podinfo", NewTag: "6.0.0"}},
		}},
		// A second renderer sees the first one's output.
		{Kustomize: &helmv2.Kustomize{Patches: []kustomizev1.Patch{{
			Patch:  `[{"op":"add","path":"/metadata/annotations","value":{"second":"saw-stage-one"}}]`,
			Target: &kustomizev1.Selector{LabelSelector: "stage=one"},
		}}}},
	}
	hr.Spec.CommonMetadata = &helmv2.CommonMetadata{
		Labels:      map[string]string{"team": "web", NameLabel: "not-the-origin"},
		Annotations: map[string]string{"owner": "web@example.com"},
	}

	out, err := Build(hr).Run(bytes.NewBuffer(in))
	if err != nil {
		t.Fatal(err)
	}
	before, after := decode(t, in), decode(t, out.Bytes())
	if len(before) != len(after) || len(after) != 6 {
		t.Fatalf("objects: %d in, %d out, want 6", len(before), len(after))
	}
	for id, u := range after {
		l := u.GetLabels()
		if l[NameLabel] != "podinfo" || l[NamespaceLabel] != "flux-apps" || l["team"] != "web" {
			t.Errorf("%s labels = %v", id, l)
		}
		if u.GetAnnotations()["owner"] != "web@example.com" {
			t.Errorf("%s annotations = %v", id, u.GetAnnotations())
		}
		if _, ok := before[id]; !ok {
			t.Errorf("%s not in the input", id)
		}
	}
	dep := after["Deployment/podinfo"]
	if r, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); r != float64(3) {
		t.Errorf("replicas = %v, want 3", r)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "ghcr.io/stefanprodan/podinfo:6.0.0" {
		t.Errorf("image = %v", img)
	}
	if _, ok := dep.GetLabels()["stage"]; ok {
		t.Errorf("label selector patch applied to the podinfo Deployment")
	}
	redis := after["Deployment/podinfo-redis"]
	if redis.GetLabels()["stage"] != "one" || redis.GetAnnotations()["second"] != "saw-stage-one" {
		t.Errorf("redis metadata = %v %v", redis.GetLabels(), redis.GetAnnotations())
	}
	// Selectors and pod templates are left alone: only metadata changes.
	if sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels"); len(sel) != 1 {
		t.Errorf("selector changed: %v", sel)
	}
	// Objects without a namespace keep none (Helm installs them in the
	// release namespace).
	if ns := after["Service/podinfo-redis"].GetNamespace(); ns != before["Service/podinfo-redis"].GetNamespace() {
		t.Errorf("namespace changed to %q", ns)
	}
}

func TestBuildOriginOnly(t *testing.T) {
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    keep: me\ndata:\n  k: v\n"
	out, err := Build(release()).Run(bytes.NewBufferString(in))
	if err != nil {
		t.Fatal(err)
	}
	u := decode(t, out.Bytes())["ConfigMap/a"]
	want := map[string]string{"keep": "me", NameLabel: "podinfo", NamespaceLabel: "flux-apps"}
	if got := u.GetLabels(); len(got) != 3 || got["keep"] != "me" || got[NameLabel] != want[NameLabel] || got[NamespaceLabel] != want[NamespaceLabel] {
		t.Fatalf("labels = %v, want %v", got, want)
	}
	if Build(nil) != nil {
		t.Fatal("Build(nil) != nil")
	}
}

func TestBuildBadPatch(t *testing.T) {
	hr := release()
	hr.Spec.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomizev1.Patch{{
		Patch: `[{"op":"replace","path":"/spec/missing/field","value":1}]`, Target: &kustomizev1.Selector{Kind: "ConfigMap"},
	}}}}}
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	if _, err := Build(hr).Run(bytes.NewBufferString(in)); err == nil || strings.Contains(err.Error(), os.TempDir()) {
		t.Fatalf("err = %v, want a kustomize error without temp paths", err)
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestDigests(t *testing.T) {
	hr := release()
	if d := PostRenderersDigest(hr); d != "" {
		t.Errorf("unset postRenderers digest = %q", d)
	}
	if d := CommonMetadataDigest(hr); d != "" {
		t.Errorf("unset commonMetadata digest = %q", d)
	}
	hr.Spec.PostRenderers = []helmv2.PostRenderer{}
	if d := PostRenderersDigest(hr); d != sha("[]\n") {
		t.Errorf("empty postRenderers digest = %q", d)
	}
	hr.Spec.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{
		Patches: []kustomizev1.Patch{{Target: &kustomizev1.Selector{Kind: "Deployment", Name: "podinfo"}}},
		Images:  []kustomizev1.Image{{Name: "nginx", NewTag: "1.27"}},
	}}}
	want := sha(`[{"kustomize":{"patches":[{"patch":"","target":{"kind":"Deployment","name":"podinfo"}}],"images":[{"name":"nginx","newTag":"1.27"}]}}]` + "\n")
	if d := PostRenderersDigest(hr); d != want {
		t.Errorf("postRenderers digest = %q, want %q", d, want)
	}
	hr.Spec.CommonMetadata = &helmv2.CommonMetadata{Labels: map[string]string{"b": "2", "a": "1"}, Annotations: map[string]string{"x": "y"}}
	if d, want := CommonMetadataDigest(hr), sha(`{"annotations":{"x":"y"},"labels":{"a":"1","b":"2"}}`+"\n"); d != want {
		t.Errorf("commonMetadata digest = %q, want %q", d, want)
	}
}

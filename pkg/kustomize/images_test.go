package kustomize

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

var (
	imgDigestB = "sha256:" + strings.Repeat("b", 64)
	imgDigestC = "sha256:" + strings.Repeat("c", 64)
	imgDigestD = "sha256:" + strings.Repeat("d", 64)
)

// imageEntries are the 8 entries for the image "example/app" that set a
// subset of newName, newTag and digest to the given values.
func imageEntries(newName, newTag, digest string) []kustypes.Image {
	var out []kustypes.Image
	for bits := range 8 {
		img := kustypes.Image{Name: "example/app"}
		if bits&1 != 0 {
			img.NewName = newName
		}
		if bits&2 != 0 {
			img.NewTag = newTag
		}
		if bits&4 != 0 {
			img.Digest = digest
		}
		out = append(out, img)
	}
	return out
}

func imageDeployment(image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: a, image: %q}]}
`, image)
}

func imagesYAML(t *testing.T, images []kustypes.Image) string {
	t.Helper()
	if len(images) == 0 {
		return ""
	}
	b, err := yaml.Marshal(map[string]any{"images": images})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// renderedImage is the image of the one container of the one object built.
func renderedImage(t *testing.T, y []byte) string {
	t.Helper()
	var obj struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct{ Image string }
				}
			}
		}
	}
	if err := yaml.Unmarshal(y, &obj); err != nil || len(obj.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("unexpected build %s (%v)", y, err)
	}
	return obj.Spec.Template.Spec.Containers[0].Image
}

// overlayImage is what the real kustomize renders when the spec's entry is
// an overlay over a base whose kustomization declares declared (nil: no
// entry). The overlay names the image as the base renders it.
func overlayImage(t *testing.T, image string, declared *kustypes.Image, spec kustypes.Image) string {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	write := func(p, s string) {
		if err := fs.WriteFile(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	var base []kustypes.Image
	if declared != nil {
		base = []kustypes.Image{*declared}
		if declared.NewName != "" {
			spec.Name = declared.NewName
		}
	}
	write("/base/deploy.yaml", imageDeployment(image))
	write("/base/kustomization.yaml", "resources: [deploy.yaml]\n"+imagesYAML(t, base))
	write("/overlay/kustomization.yaml", "resources: [../base]\n"+imagesYAML(t, []kustypes.Image{spec}))
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/overlay")
	if err != nil {
		t.Fatal(err)
	}
	y, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return renderedImage(t, y)
}

// TestSpecImagesMergeAsKustomizeOverlay builds every combination of an
// image with a tag, a digest, both and neither; a kustomization.yaml entry
// for it setting any subset of newName, newTag and digest (or none); and a
// spec.images entry setting any subset: the image rendered must be the one
// the real kustomize renders with the spec's entry as an overlay. Flux
// compatible (fluxcd/pkg/kustomize's generator merges the same way).
func TestSpecImagesMergeAsKustomizeOverlay(t *testing.T) {
	images := []string{"example/app", "example/app:1.0", "example/app@" + imgDigestB, "example/app:1.0@" + imgDigestB}
	declared := append([]*kustypes.Image{nil}, ptrs(imageEntries("declared.example/app", "2.0", imgDigestC))...)
	specs := imageEntries("spec.example/app", "3.0", imgDigestD)
	cases := 0
	for _, image := range images {
		for _, d := range declared {
			for _, s := range specs {
				var base []kustypes.Image
				if d != nil {
					base = []kustypes.Image{*d}
				}
				tree := writeFiles(t, map[string]string{
					"deploy.yaml":        imageDeployment(image),
					"kustomization.yaml": "resources: [deploy.yaml]\n" + imagesYAML(t, base),
				})
				spec := kustomizeImage{Name: s.Name, NewName: s.NewName, NewTag: s.NewTag, Digest: s.Digest}
				res, err := Build(tree, Options{Images: []kustomizeImage{spec}})
				if err != nil {
					t.Fatal(err)
				}
				y, err := yaml.Marshal(res.Objects[0].Object)
				if err != nil {
					t.Fatal(err)
				}
				got, want := renderedImage(t, y), overlayImage(t, image, d, s)
				if got != want {
					t.Errorf("image %s, kustomization.yaml %s, spec.images %+v: rendered %s, kustomize renders %s", image, describe(d), s, got, want)
				}
				cases++
			}
		}
	}
	t.Logf("%d combinations", cases)
}

func ptrs(images []kustypes.Image) []*kustypes.Image {
	out := make([]*kustypes.Image, len(images))
	for i := range images {
		out[i] = &images[i]
	}
	return out
}

func describe(d *kustypes.Image) string {
	if d == nil {
		return "without an entry"
	}
	return fmt.Sprintf("%+v", *d)
}

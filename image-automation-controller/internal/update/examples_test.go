package update

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
)

const (
	examplesDir   = "../../../examples/image-automation"
	automationDoc = "../../../docs/image-automation-controller.md"
	reflectorDoc  = "../../../docs/image-reflector-controller.md"
	newTag        = "9.8.7"
	newDigest     = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
)

// examplePolicies reads the ImageRepositories and ImagePolicies of the
// example's image-automation.yaml, checks that every policy reflects
// digests (IfNotPresent), and returns each policy's latestRef as the
// reflector would write it for a new tag: newTag with newDigest.
func examplePolicies(t *testing.T) map[string]LatestRef {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, "image-automation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]string{} // namespace/repository name → spec.image
	var pols []imagev1.ImagePolicy
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Kind string `json:"kind"`
		}
		unmarshal(t, raw, &doc)
		switch doc.Kind {
		case imagev1.ImageRepositoryKind:
			var r imagev1.ImageRepository
			unmarshal(t, raw, &r)
			images[r.Namespace+"/"+r.Name] = r.Spec.Image
		case imagev1.ImagePolicyKind:
			var p imagev1.ImagePolicy
			unmarshal(t, raw, &p)
			pols = append(pols, p)
		}
	}
	if len(pols) == 0 {
		t.Fatal("no ImagePolicy in the example")
	}
	refs := map[string]LatestRef{}
	for _, p := range pols {
		if p.GetDigestReflectionPolicy() != imagev1.ReflectIfNotPresent {
			t.Errorf("ImagePolicy %s: digestReflectionPolicy %q, want IfNotPresent", p.Name, p.GetDigestReflectionPolicy())
		}
		name := images[p.Namespace+"/"+p.Spec.ImageRepositoryRef.Name]
		if name == "" {
			t.Fatalf("ImagePolicy %s names no ImageRepository of the example", p.Name)
		}
		refs[p.Namespace+":"+p.Name] = LatestRef{Name: name, Tag: newTag, Digest: newDigest}
	}
	return refs
}

// The shipped example, as written: the policies reflect digests, and the
// Setters strategy rewrites both kinds of markers (the whole image; a
// kustomize images entry's newTag and digest) to the new tag pinned by the
// new digest, leaving no marker unapplied.
func TestExampleMarkersPinTheNewDigest(t *testing.T) {
	policies := examplePolicies(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(examplesDir, "apps"), dir)
	res, err := WithSetters(dir, ".", policies)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 || len(res.UnknownPolicies) != 0 {
		t.Fatalf("unapplied markers: skipped %v, unknown %v", res.Skipped, res.UnknownPolicies)
	}
	web := readFile(t, dir, "web/deployment.yaml")
	if want := `image: ghcr.io/example-org/web:` + newTag + "@" + newDigest + ` # {"$imagepolicy": "flux-system:web"}`; !strings.Contains(web, want) {
		t.Errorf("web/deployment.yaml has no line %q:\n%s", want, web)
	}
	api := readFile(t, dir, "api/kustomization.yaml")
	for _, want := range []string{"newTag: " + newTag + " #", "digest: " + newDigest + " #"} {
		if !strings.Contains(api, want) {
			t.Errorf("api/kustomization.yaml has no %q:\n%s", want, api)
		}
	}
	if got := len(res.List()); got != 3 {
		t.Errorf("%d changes, want 3 (web's image, api's newTag and digest): %v", got, res.List())
	}
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// Every YAML block of the automation's documentation that carries a
// marker works as written: each of its markers is applied and each
// image it sets ends pinned by the new digest.
func TestDocumentedMarkersPinTheNewDigest(t *testing.T) {
	policies := examplePolicies(t)
	doc, err := os.ReadFile(automationDoc)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range yamlBlock.FindAllSubmatch(doc, -1) {
		if !bytes.Contains(m[1], []byte(Token)) {
			continue
		}
		n++
		dir := writeFiles(t, map[string]string{"block.yaml": string(m[1])})
		res, err := WithSetters(dir, ".", policies)
		if err != nil {
			t.Fatal(err)
		}
		markers := bytes.Count(m[1], []byte(Token))
		if len(res.Skipped) != 0 || len(res.UnknownPolicies) != 0 || len(res.List()) != markers {
			t.Errorf("block %d: %d changes for %d markers, skipped %v, unknown %v:\n%s", n, len(res.List()), markers, res.Skipped, res.UnknownPolicies, m[1])
			continue
		}
		out := readFile(t, dir, "block.yaml")
		whole := strings.Count(out, ":"+newTag+"@"+newDigest+" #")
		parts := strings.Count(out, newDigest+" #")
		if whole == 0 && parts == 0 {
			t.Errorf("block %d pins no image to the new digest:\n%s", n, out)
		}
	}
	if n == 0 {
		t.Fatalf("no YAML block with a marker in %s", automationDoc)
	}
}

// The ImagePolicies the documentation shows reflect digests.
func TestDocumentedPoliciesReflectDigests(t *testing.T) {
	n := 0
	for _, path := range []string{automationDoc, reflectorDoc} {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range yamlBlock.FindAllSubmatch(doc, -1) {
			if !bytes.Contains(m[1], []byte("kind: ImagePolicy\n")) {
				continue
			}
			n++
			var p imagev1.ImagePolicy
			if err := k8syaml.Unmarshal(m[1], &p); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if p.GetDigestReflectionPolicy() != imagev1.ReflectIfNotPresent {
				t.Errorf("%s: ImagePolicy %s has digestReflectionPolicy %q, want IfNotPresent", path, p.Name, p.GetDigestReflectionPolicy())
			}
		}
	}
	if n == 0 {
		t.Fatal("no ImagePolicy in the documentation")
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func unmarshal(t *testing.T, raw []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatal(err)
	}
}

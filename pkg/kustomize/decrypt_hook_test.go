package kustomize

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// fakeDecryptor "decrypts" by replacing ENC with its plaintext and
// records the calls the build makes.
type fakeDecryptor struct {
	sourcesDir string
	read       []string
	objects    []string
	fail       string
}

func (f *fakeDecryptor) DecryptSources(fs filesys.FileSystem, dir string) error {
	f.sourcesDir = dir
	data, err := fs.ReadFile("/app/app.env")
	if err != nil {
		return err
	}
	return fs.WriteFile("/app/app.env", []byte(strings.ReplaceAll(string(data), "ENC", "plain-env")))
}

func (f *fakeDecryptor) DecryptFile(p string, data []byte) ([]byte, error) {
	f.read = append(f.read, p)
	if f.fail != "" && strings.HasSuffix(p, f.fail) {
		return nil, errors.New("decryption failed for 'Secret/ns/s': boom")
	}
	if !strings.Contains(string(data), "ENC") {
		return nil, nil
	}
	return []byte(strings.ReplaceAll(string(data), "ENC", "plain-file")), nil
}

func (f *fakeDecryptor) DecryptObject(u *unstructured.Unstructured) error {
	f.objects = append(f.objects, u.GetName())
	return nil
}

func TestBuildDecryptorHooks(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app/kustomization.yaml", "resources: [s.yaml]\nsecretGenerator:\n- name: gen\n  envs: [app.env]\ngeneratorOptions: {disableNameSuffixHash: true}\n")
	write("app/s.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {a: ENC}\n")
	write("app/app.env", "K=ENC\n")
	tree, err := ReadDirTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDecryptor{}
	res, err := Build(tree, Options{Path: "app", Decryptor: f})
	if err != nil {
		t.Fatal(err)
	}
	if f.sourcesDir != "/app" {
		t.Errorf("DecryptSources dir %q", f.sourcesDir)
	}
	if len(f.objects) != 2 {
		t.Errorf("DecryptObject calls %v", f.objects)
	}
	if !strings.Contains(string(res.YAML), "a: plain-file") || !strings.Contains(string(res.YAML), "K: cGxhaW4tZW52") {
		t.Errorf("built:\n%s", res.YAML)
	}
	// The tree is shared: the plaintext stayed in the build's layer.
	if d := tree.files["/app/s.yaml"]; strings.Contains(string(d), "plain") {
		t.Error("the artifact tree was changed")
	}
	// A DecryptFile error is the build's error, as it is.
	_, err = Build(tree, Options{Path: "app", Decryptor: &fakeDecryptor{fail: "s.yaml"}})
	if err == nil || err.Error() != "decryption failed for 'Secret/ns/s': boom" {
		t.Fatalf("err = %v", err)
	}
}

package decryptor

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func readCLI(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sopscli", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecryptSOPSCLIFiles decrypts files written by the real sops CLI
// (testdata/sopscli/README.md): a YAML Secret encrypted with
// --encrypted-regex, one from a .sops.yaml with mac_only_encrypted, one
// encrypted whole (kind and metadata too), and dotenv, JSON, binary and
// INI generator files.
func TestDecryptSOPSCLIFiles(t *testing.T) {
	d := newDecryptor(t, map[string]string{"age.agekey": string(readCLI(t, "age.agekey"))})
	for _, name := range []string{"secret.enc.yaml", "macsecret.enc.yaml", "full.enc.yaml"} {
		out, err := d.DecryptFile(name, readCLI(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		u := decode(t, out)
		if got, _, _ := unstructuredString(u.Object, "stringData", "password"); got != "hunter2-cli-secret" {
			t.Errorf("%s: stringData.password = %q", name, got)
		}
		if got, _, _ := unstructuredString(u.Object, "data", "token"); got != base64.StdEncoding.EncodeToString([]byte("token-cli-value")) {
			t.Errorf("%s: data.token = %q", name, got)
		}
		if _, ok := u.Object["sops"]; ok {
			t.Errorf("%s: sops metadata left", name)
		}
	}

	fs := filesys.MakeFsInMemory()
	for _, name := range []string{"app.enc.env", "app.enc.json", "blob.enc.bin", "app.enc.ini"} {
		if err := fs.WriteFile("/app/"+name, readCLI(t, name)); err != nil {
			t.Fatal(err)
		}
	}
	_ = fs.WriteFile("/app/kustomization.yaml", []byte(`secretGenerator:
- name: s
  envs: [app.enc.env]
  files: [app.json=app.enc.json, blob.bin=blob.enc.bin, app.ini=app.enc.ini]
`))
	if err := d.DecryptSources(fs, "/app"); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"/app/app.enc.env": "PASSWORD=cli-dotenv-pass", "/app/app.enc.json": `"cli-json-pass"`, "/app/app.enc.ini": "password = ini-cli-pass"} {
		got, _ := fs.ReadFile(p)
		if !strings.Contains(string(got), want) || strings.Contains(string(got), "sops") {
			t.Errorf("%s = %q", p, got)
		}
	}
	if got, _ := fs.ReadFile("/app/blob.enc.bin"); !bytes.Equal(got, readCLI(t, "blob.bin")) {
		t.Errorf("binary = %q", got)
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// A hand-edited encrypted dotenv or INI file with a line the parser cannot
// read fails without the line (maybe a plaintext secret) in the message.
func TestDecryptMalformedLineNotEchoed(t *testing.T) {
	d := newDecryptor(t, map[string]string{"age.agekey": string(readCLI(t, "age.agekey"))})
	for _, tc := range []struct{ file, key, added, want string }{
		{"app.enc.env", "envs: [app.enc.env]", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-plain-secret\n",
			"decryption failed for 'Secret/s': failed to decrypt 'app/app.enc.env': failed to load encrypted dotenv data: malformed dotenv input (the line is not shown: it may hold a secret)"},
		{"app.enc.ini", "files: [app.ini=app.enc.ini]", "\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC-plain-secret\n",
			"decryption failed for 'Secret/s': failed to decrypt 'app/app.enc.ini': failed to load encrypted INI data: malformed INI input (the line is not shown: it may hold a secret)"},
	} {
		fs := filesys.MakeFsInMemory()
		_ = fs.WriteFile("/app/"+tc.file, append(readCLI(t, tc.file), tc.added...))
		_ = fs.WriteFile("/app/kustomization.yaml", []byte("secretGenerator:\n- name: s\n  "+tc.key+"\n"))
		err := d.DecryptSources(fs, "/app")
		if err == nil || strings.Contains(err.Error(), "plain-secret") || err.Error() != tc.want {
			t.Errorf("%s: err = %v", tc.file, err)
		}
	}
}

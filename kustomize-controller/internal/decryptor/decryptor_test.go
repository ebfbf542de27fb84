package decryptor

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor/sopstest"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/hcvault"
	sopskeys "github.com/getsops/sops/v3/keys"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

type keys struct {
	age, otherAge sopstest.AgeKey
	pgp           sopstest.PGPKey
}

func newKeys(t *testing.T) keys {
	t.Helper()
	a, err := sopstest.NewAgeKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := sopstest.NewAgeKey()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sopstest.NewPGPKey("eddy")
	if err != nil {
		t.Fatal(err)
	}
	return keys{age: a, otherAge: b, pgp: p}
}

// newDecryptor reads a decryption Secret holding data.
func newDecryptor(t *testing.T, data map[string]string) *Decryptor {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: "flux-system"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	c := fake.NewClientBuilder().WithObjects(s).Build()
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system"}}
	obj.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "sops-keys"}}
	d, err := New(context.Background(), c, obj, helperPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func encrypt(t *testing.T, plain string, f formats.Format, o sopstest.Options) []byte {
	t.Helper()
	out, err := sopstest.Encrypt([]byte(plain), f, o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: apps
  labels:
    app: db
stringData:
  password: hunter2-age-secret
data:
  token: ` + "dG9rZW4tdmFsdWUtMQ==" + `
`

func decode(t *testing.T, data []byte) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestDecryptFileAgeAndPGP(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.age.Identity, "pgp.asc": k.pgp.Armored})
	for _, tc := range []struct {
		name string
		file string
		f    formats.Format
		o    sopstest.Options
	}{
		{"age yaml", "db.yaml", formats.Yaml, sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedRegex: "^(data|stringData)$"}},
		{"pgp yaml", "db.yaml", formats.Yaml, sopstest.Options{PGP: []sopstest.PGPKey{k.pgp}, EncryptedRegex: "^(data|stringData)$"}},
		{"age json", "db.json", formats.Json, sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedRegex: "^(data|stringData)$"}},
		{"pgp json mac_only_encrypted", "db.json", formats.Json, sopstest.Options{PGP: []sopstest.PGPKey{k.pgp}, EncryptedRegex: "^(data|stringData)$", MACOnlyEncrypted: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := secretYAML
			if tc.f == formats.Json {
				js, err := yaml.YAMLToJSON([]byte(secretYAML))
				if err != nil {
					t.Fatal(err)
				}
				plain = string(js)
			}
			enc := encrypt(t, plain, tc.f, tc.o)
			if strings.Contains(string(enc), "hunter2") {
				t.Fatal("not encrypted")
			}
			out, err := d.DecryptFile("/apps/"+tc.file, enc)
			if err != nil {
				t.Fatal(err)
			}
			u := decode(t, out)
			if v, _, _ := unstructured.NestedString(u.Object, "stringData", "password"); v != "hunter2-age-secret" {
				t.Errorf("password = %q", v)
			}
			if v, _, _ := unstructured.NestedString(u.Object, "data", "token"); v != "dG9rZW4tdmFsdWUtMQ==" {
				t.Errorf("token = %q", v)
			}
			if _, ok := u.Object["sops"]; ok {
				t.Error("sops metadata kept")
			}
			vals := strings.Join(d.Values(), "\n")
			for _, want := range []string{"hunter2-age-secret", "dG9rZW4tdmFsdWUtMQ==", "token-value-1"} {
				if !strings.Contains(vals, want) {
					t.Errorf("values to mask miss %q", want)
				}
			}
			if strings.Contains(vals, "\ndb\n") {
				t.Error("an unencrypted value is in the mask list")
			}
		})
	}
}

// Flux compatible: a file is decrypted only when it holds a sops MAC; a
// plain file and the decrypt: disabled annotation leave it.
func TestDecryptFileLeavesPlainAndDisabled(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.age.Identity})
	if out, err := d.DecryptFile("/a.yaml", []byte(secretYAML)); err != nil || out != nil {
		t.Fatalf("plain file: %q %v", out, err)
	}
	annotated := strings.Replace(secretYAML, "  labels:", "  annotations:\n    kustomize.toolkit.fluxcd.io/decrypt: disabled\n  labels:", 1)
	enc := encrypt(t, annotated, formats.Yaml, sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedRegex: "^(data|stringData)$"})
	if out, err := d.DecryptFile("/a.yaml", enc); err != nil || out != nil {
		t.Fatalf("disabled: %q %v", out, err)
	}
	if out, err := d.DecryptFile("/a.txt", enc); err != nil || out != nil {
		t.Fatalf("not a resource file: %q %v", out, err)
	}
}

func TestDecryptFileMAC(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.age.Identity})
	o := sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedRegex: "^(data|stringData)$"}
	// An unencrypted value changed after encryption: the MAC covers it.
	enc := encrypt(t, secretYAML, formats.Yaml, o)
	tampered := strings.Replace(string(enc), "app: db", "app: other", 1)
	_, err := d.DecryptFile("/apps/db.yaml", []byte(tampered))
	want := "decryption failed for 'Secret/apps/db': failed to verify sops data integrity: MAC mismatch"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	// mac_only_encrypted: the MAC covers encrypted values only.
	o.MACOnlyEncrypted = true
	enc = encrypt(t, secretYAML, formats.Yaml, o)
	tampered = strings.Replace(string(enc), "app: db", "app: other", 1)
	out, err := d.DecryptFile("/apps/db.yaml", []byte(tampered))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "hunter2-age-secret") || !strings.Contains(string(out), "app: other") {
		t.Fatalf("out = %s", out)
	}
	// An encrypted value swapped for another's: decryption fails (the
	// value is bound to its path) or the MAC does.
	enc = encrypt(t, secretYAML, formats.Yaml, sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedRegex: "^(data|stringData)$"})
	u := decode(t, enc)
	u.Object["sops"].(map[string]any)["mac"] = "ENC[AES256_GCM,data:AAAA,iv:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=,tag:AAAAAAAAAAAAAAAAAAAAAA==,type:str]"
	bad, _ := yaml.Marshal(u.Object)
	if _, err := d.DecryptFile("/apps/db.yaml", bad); err == nil || !strings.HasPrefix(err.Error(), "decryption failed for 'Secret/apps/db': failed to verify sops data integrity") {
		t.Fatalf("bad mac: %v", err)
	}
}

func TestDecryptFileCommentRegex(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.age.Identity})
	plain := `apiVersion: v1
kind: Secret
metadata:
  name: cr
  namespace: apps
stringData:
  # sops:enc
  password: comment-regex-secret
  user: admin
`
	enc := encrypt(t, plain, formats.Yaml, sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedCommentRegex: "sops:enc"})
	if strings.Contains(string(enc), "comment-regex-secret") || !strings.Contains(string(enc), "user: admin") {
		t.Fatalf("encrypted:\n%s", enc)
	}
	out, err := d.DecryptFile("/apps/cr.yaml", enc)
	if err != nil {
		t.Fatal(err)
	}
	u := decode(t, out)
	if v, _, _ := unstructured.NestedString(u.Object, "stringData", "password"); v != "comment-regex-secret" {
		t.Fatalf("password = %q\n%s", v, out)
	}
}

func TestDecryptErrors(t *testing.T) {
	k := newKeys(t)
	o := sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedRegex: "^(data|stringData)$"}
	enc := encrypt(t, secretYAML, formats.Yaml, o)
	for _, tc := range []struct {
		name string
		keys map[string]string
		data []byte
		want string
	}{
		{"no key", map[string]string{}, enc, "decryption failed for 'Secret/apps/db': cannot get sops data key: "},
		{"wrong key", map[string]string{"x.agekey": k.otherAge.Identity}, enc, "decryption failed for 'Secret/apps/db': cannot get sops data key: "},
		{"pgp only", map[string]string{"x.asc": k.pgp.Armored}, enc, "decryption failed for 'Secret/apps/db': cannot get sops data key: "},
		{"looks encrypted", map[string]string{"x.agekey": k.age.Identity}, []byte(secretYAML + "sops:\n  mac: ENC[not really]\n"), "decryption failed for 'Secret/apps/db': failed to load encrypted YAML data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDecryptor(t, tc.keys)
			_, err := d.DecryptFile("/apps/db.yaml", tc.data)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatal("value in error")
			}
		})
	}
}

func TestImportErrors(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "ns"}, Data: map[string][]byte{"bad.agekey": []byte("AGE-SECRET-KEY-NOPE")}}
	c := fake.NewClientBuilder().WithObjects(s).Build()
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "ns"}}
	obj.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "k"}}
	_, err := New(context.Background(), c, obj, helperPath)
	if err == nil || !strings.HasPrefix(err.Error(), "failed to import 'bad.agekey' data from sops decryption Secret 'ns/k': ") {
		t.Fatalf("err = %v", err)
	}
	obj.Spec.Decryption.SecretRef.Name = "missing"
	if _, err := New(context.Background(), c, obj, helperPath); err == nil || !strings.Contains(err.Error(), `"missing" not found`) {
		t.Fatalf("err = %v", err)
	}
}

// The Secret's sops.vault-token reaches the helper, which decrypts a
// Vault transit data key with it (a fake Vault).
func TestVaultTokenOfTheSecretDecrypts(t *testing.T) {
	v, stop := sopstest.NewVault("s.token")
	defer stop()
	mk, err := hcvault.NewMasterKeyFromURI(v.URL + "/v1/transit/keys/app")
	if err != nil {
		t.Fatal(err)
	}
	hcvault.Token(v.Token).ApplyToMasterKey(mk)
	enc := encrypt(t, secretYAML, formats.Yaml, sopstest.Options{Keys: []sopskeys.MasterKey{mk}, EncryptedRegex: "^(data|stringData)$"})
	d := newDecryptor(t, map[string]string{"sops.vault-token": "s.token"})
	out, err := d.DecryptFile("/apps/db.yaml", enc)
	if err != nil || !strings.Contains(string(out), "hunter2") {
		t.Fatalf("out %q, error %v", out, err)
	}
}

// Generator sources in every format, decrypted in fs before the build.
func TestDecryptSources(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.age.Identity, "pgp.asc": k.pgp.Armored})
	fs := filesys.MakeFsInMemory()
	o := sopstest.Options{Age: []sopstest.AgeKey{k.age}}
	files := map[string]struct {
		plain string
		f     formats.Format
		o     sopstest.Options
	}{
		"/app/secret.env":   {"USER=admin\nPASS=dotenv-secret-1\n", formats.Dotenv, o},
		"/app/conf.json":    {`{"key": "json-secret-2"}`, formats.Json, sopstest.Options{PGP: []sopstest.PGPKey{k.pgp}}},
		"/app/conf.yaml":    {"key: yaml-secret-3\n", formats.Yaml, o},
		"/app/conf.ini":     {"[s]\nkey = ini-secret-4\n", formats.Ini, o},
		"/app/cert.pem":     {"binary-secret-5\n", formats.Binary, o},
		"/base/other.env":   {"OTHER=base-secret-6\n", formats.Dotenv, o},
		"/app/cm.env":       {"CM=configmap-secret-7\n", formats.Dotenv, o},
		"/app/plain.env":    {"PLAIN=not-encrypted\n", -1, o},
		"/app/noext-envsrc": {"N=noext-secret-8\n", formats.Dotenv, o},
	}
	for p, f := range files {
		data := []byte(f.plain)
		if f.f >= 0 {
			data = encrypt(t, f.plain, f.f, f.o)
		}
		if err := fs.WriteFile(p, data); err != nil {
			t.Fatal(err)
		}
	}
	_ = fs.WriteFile("/app/kustomization.yaml", []byte(`resources: [../base]
secretGenerator:
- name: s
  envs: [secret.env, plain.env, noext-envsrc]
  files: [conf.json, my.yaml=conf.yaml, conf.ini, cert.pem]
configMapGenerator:
- name: c
  envs: [cm.env]
`))
	_ = fs.WriteFile("/base/kustomization.yaml", []byte("secretGenerator:\n- name: o\n  envs: [other.env]\n"))
	if err := d.DecryptSources(fs, "app"); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"/app/secret.env": "dotenv-secret-1", "/app/conf.json": "json-secret-2", "/app/conf.yaml": "yaml-secret-3",
		"/app/conf.ini": "ini-secret-4", "/app/cert.pem": "binary-secret-5\n", "/base/other.env": "base-secret-6",
		"/app/cm.env": "configmap-secret-7", "/app/plain.env": "not-encrypted", "/app/noext-envsrc": "noext-secret-8",
	} {
		got, _ := fs.ReadFile(p)
		if !strings.Contains(string(got), want) || strings.Contains(string(got), "sops") {
			t.Errorf("%s = %q", p, got)
		}
	}
	if got, _ := fs.ReadFile("/app/cert.pem"); string(got) != "binary-secret-5\n" {
		t.Errorf("binary = %q", got)
	}
}

func TestDecryptSourcesError(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.otherAge.Identity})
	fs := filesys.MakeFsInMemory()
	_ = fs.WriteFile("/app/s.env", encrypt(t, "A=dotenv-secret\n", formats.Dotenv, sopstest.Options{Age: []sopstest.AgeKey{k.age}}))
	_ = fs.WriteFile("/app/kustomization.yaml", []byte("namespace: apps\nsecretGenerator:\n- name: s\n  envs: [s.env]\n"))
	err := d.DecryptSources(fs, "/app")
	if err == nil || !strings.HasPrefix(err.Error(), "decryption failed for 'Secret/apps/s': failed to decrypt 'app/s.env': cannot get sops data key: ") {
		t.Fatalf("err = %v", err)
	}
}

// A built Secret whose data values are SOPS documents (a generator fed
// an encrypted file Flux-style) is decrypted field by field.
func TestDecryptObjectFields(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.age.Identity})
	env := encrypt(t, "A=field-secret-1\n", formats.Dotenv, sopstest.Options{Age: []sopstest.AgeKey{k.age}})
	js := encrypt(t, `{"a": "field-secret-2"}`, formats.Json, sopstest.Options{Age: []sopstest.AgeKey{k.age}})
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "f", "namespace": "apps"},
		"data":       map[string]any{"a.env": base64.StdEncoding.EncodeToString(env), "plain": base64.StdEncoding.EncodeToString([]byte("x"))},
		"stringData": map[string]any{"b.json": string(js)},
	}}
	if err := d.DecryptObject(u); err != nil {
		t.Fatal(err)
	}
	a, _, _ := unstructured.NestedString(u.Object, "data", "a.env")
	if b, _ := base64.StdEncoding.DecodeString(a); string(b) != "A=field-secret-1\n" {
		t.Errorf("a.env = %q", b)
	}
	if b, _, _ := unstructured.NestedString(u.Object, "stringData", "b.json"); !strings.Contains(b, `"a": "field-secret-2"`) {
		t.Errorf("b.json = %q", b)
	}
	// A whole encrypted object (Flux path) without the MAC check.
	whole := decode(t, encrypt(t, secretYAML, formats.Yaml, sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedRegex: "^(data|stringData)$"}))
	whole.SetNamespace("changed-by-kustomize")
	if err := d.DecryptObject(whole); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(whole.Object, "stringData", "password"); v != "hunter2-age-secret" {
		t.Errorf("password = %q", v)
	}
	// A field that looks encrypted but is not.
	u.Object["stringData"] = map[string]any{"c.yaml": "mac: ENC[nope]\n"}
	err := d.DecryptObject(u)
	if err == nil || !strings.HasPrefix(err.Error(), "decryption failed for 'Secret/apps/f': failed to decrypt and format 'apps/f' Secret field 'c.yaml': failed to load encrypted YAML data") {
		t.Fatalf("err = %v", err)
	}
}

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor/sopstest"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestBinarySOPSDecryption runs the built kustomize-controller on a
// repository with an age-encrypted Secret (YAML), a PGP-encrypted Secret
// (JSON) and an encrypted dotenv read by a secretGenerator, all encrypted
// here with the sops library and fresh keys: the cluster holds
// the plaintext. A revision adding a Secret whose MAC does not match fails
// the whole set (Ready=False BuildFailed naming the object; the revision's
// other changes are not applied). No plaintext value is found in the
// controller's log, its events (Kubernetes and posted) or the
// Kustomization's status.
func TestBinarySOPSDecryption(t *testing.T) {
	const shard = "sops"
	ctx := context.Background()
	p := testenv.RunController(t, env, ControllerName, "--watch-label-selector="+shardKey+"="+shard,
		"--events-addr="+eventSink.url, "--min-retry-delay=200ms", "--max-retry-delay=2s", "--log-level=debug")
	ns := newNamespace(t)

	ageKey, err := sopstest.NewAgeKey()
	if err != nil {
		t.Fatal(err)
	}
	pgpKey, err := sopstest.NewPGPKey("eddy-test")
	if err != nil {
		t.Fatal(err)
	}
	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: ns},
		Data:       map[string][]byte{"age.agekey": []byte(ageKey.Identity), "pgp.asc": []byte(pgpKey.Armored)},
	}
	if err := env.Client.Create(ctx, keys); err != nil {
		t.Fatal(err)
	}

	plaintexts := []string{"age-plaintext-3f9a1c", "pgp-plaintext-7b2e4d", "dotenv-plaintext-c81f02", "age-plaintext-rev2-55aa01", "bad-plaintext-9d3e77", "cm-plaintext-e4b7a2"}
	ageOpts := sopstest.Options{Age: []sopstest.AgeKey{ageKey}, EncryptedRegex: "^(data|stringData)$"}
	enc := func(plain string, f formats.Format, o sopstest.Options) string {
		t.Helper()
		out, err := sopstest.Encrypt([]byte(plain), f, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range plaintexts {
			if strings.Contains(string(out), v) {
				t.Fatalf("%q left in the encrypted file", v)
			}
		}
		return string(out)
	}
	secret := func(name, field, key, value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    app: sops\n%s:\n  %s: %s\n", name, ns, field, key, value)
	}
	pgpJSON, err := yaml.YAMLToJSON([]byte(secret("pgp-secret", "stringData", "token", plaintexts[1])))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [age-secret.yaml, pgp-secret.json, enc-cm.yaml]
secretGenerator:
- name: env-secret
  namespace: ` + ns + `
  envs: [app.env]
generatorOptions: {disableNameSuffixHash: true}
`,
		"age-secret.yaml": enc(secret("age-secret", "stringData", "password", plaintexts[0]), formats.Yaml, ageOpts),
		"pgp-secret.json": enc(string(pgpJSON), formats.Json, sopstest.Options{PGP: []sopstest.PGPKey{pgpKey}, EncryptedRegex: "^(data|stringData)$"}),
		"app.env":         enc("API_KEY="+plaintexts[2]+"\n", formats.Dotenv, sopstest.Options{Age: []sopstest.AgeKey{ageKey}}),
		// Not a Secret: its drift event must still mask the decrypted value.
		"enc-cm.yaml": enc(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: enc-cm, namespace: %s}\ndata:\n  token: %s\n", ns, plaintexts[5]),
			formats.Yaml, sopstest.Options{Age: []sopstest.AgeKey{ageKey}, EncryptedRegex: "^data$"}),
	}
	r := newRepo(t, files)
	src := newSource(t, ns, "sops", r)
	rev1 := src.Status.Artifact.Revision
	k := newKustomization(t, ns, "sops", src.Name, func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: shard}
		k.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "sops-keys"}}
	})
	waitApplied(t, k, rev1)

	value := func(name, key string) string {
		t.Helper()
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		return string(s.Data[key])
	}
	for _, c := range []struct{ name, key, want string }{
		{"age-secret", "password", plaintexts[0]},
		{"pgp-secret", "token", plaintexts[1]},
		{"env-secret", "API_KEY", plaintexts[2]},
	} {
		if got := value(c.name, c.key); got != c.want {
			t.Errorf("Secret %s key %s = %q, want the plaintext %q", c.name, c.key, got, c.want)
		}
	}

	// Without spec.decryption an encrypted Secret is refused, nothing
	// applied (Flux compatible message).
	plain := newKustomization(t, ns, "no-decryption", src.Name, func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: shard}
		k.Spec.Prune = false
	})
	if c := waitFailed(t, plain, meta.ReconciliationFailedReason); c.Message != fmt.Sprintf("Secret/%s/age-secret is SOPS encrypted, configuring decryption is required for this secret to be reconciled", ns) {
		t.Errorf("without decryption: %q", c.Message)
	}
	if plain.Status.Inventory != nil && len(plain.Status.Inventory.Entries) > 0 {
		t.Errorf("without decryption, applied %v", plain.Status.Inventory.Entries)
	}

	// A decrypted Secret is drift-corrected as any other (the drift
	// report masks Secret values).
	drifted := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "age-secret"}, drifted); err != nil {
		t.Fatal(err)
	}
	drifted.Data["password"] = []byte("drifted-in-cluster")
	if err := env.Client.Update(ctx, drifted); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "enc-cm"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["token"] != plaintexts[5] {
		t.Errorf("enc-cm token = %q, want the plaintext", cm.Data["token"])
	}
	cm.Data["token"] = "drifted-in-cluster"
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	requestReconcile(t, k, func() string { return k.Status.LastHandledReconcileAt })
	waitApplied(t, k, rev1)
	if got := value("age-secret", "password"); got != plaintexts[0] {
		t.Errorf("age-secret not corrected: %q", got)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "enc-cm"}, cm); err != nil || cm.Data["token"] != plaintexts[5] {
		t.Errorf("enc-cm not corrected: %q (%v)", cm.Data["token"], err)
	}
	waitEvent(t, kustomizev1.KustomizationKind, ns, k.Name, "DriftCorrected")

	// Revision 2: the age Secret changes, a ConfigMap is added, and a
	// Secret whose MAC does not match (a label changed after encryption).
	bad := enc(secret("bad-secret", "stringData", "password", plaintexts[4]), formats.Yaml, ageOpts)
	bad = strings.Replace(bad, "app: sops", "app: tampered", 1)
	rev2 := push(t, r, src, map[string]string{
		"age-secret.yaml": enc(secret("age-secret", "stringData", "password", plaintexts[3]), formats.Yaml, ageOpts),
		"bad-secret.yaml": bad,
		"cm.yaml":         fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new-cm, namespace: %s}\n", ns),
		"kustomization.yaml": strings.Replace(files["kustomization.yaml"], "resources: [age-secret.yaml, pgp-secret.json, enc-cm.yaml]",
			"resources: [age-secret.yaml, pgp-secret.json, enc-cm.yaml, bad-secret.yaml, cm.yaml]", 1),
	}, "a Secret with a wrong MAC")
	waitFor(t, k, "Ready=False BuildFailed at "+rev2, func() bool {
		c := readyCond(k)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == meta.BuildFailedReason && k.Status.LastAttemptedRevision == rev2
	})
	want := fmt.Sprintf("decryption failed for 'Secret/%s/bad-secret': failed to verify sops data integrity: MAC mismatch", ns)
	if c := readyCond(k); c.Message != want {
		t.Errorf("Ready message %q, want %q", c.Message, want)
	}
	if k.Status.LastAppliedRevision != rev1 {
		t.Errorf("lastAppliedRevision %s, want %s", k.Status.LastAppliedRevision, rev1)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "new-cm"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed revision's ConfigMap was applied (%v)", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bad-secret"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Secret with a wrong MAC was applied (%v)", err)
	}
	if got := value("age-secret", "password"); got != plaintexts[0] {
		t.Errorf("age-secret changed by the failed revision: %q", got)
	}
	waitEvent(t, kustomizev1.KustomizationKind, ns, k.Name, meta.BuildFailedReason)

	// No plaintext in the log, the events or the status.
	haystacks := map[string]string{}
	log, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	haystacks["controller log"] = string(log)
	// Flux compatible: the failure is an error line of the log (what
	// `flux logs --level error` shows), without a stack trace.
	failed := false
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, `"level":"error"`) && strings.Contains(line, "Reconciliation failed after") && strings.Contains(line, "MAC mismatch") {
			failed = true
			if strings.Contains(line, "stacktrace") {
				t.Errorf("error line with a stack trace: %s", line)
			}
		}
	}
	if !failed {
		t.Error("no error line 'Reconciliation failed after …' for the MAC mismatch in the controller log")
	}
	evs := &corev1.EventList{}
	if err := env.Client.List(ctx, evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(evs)
	haystacks["Kubernetes events"] = string(b)
	b, _ = json.Marshal(eventSink.of(kustomizev1.KustomizationKind, ns, k.Name))
	haystacks["posted events"] = string(b)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(k), k); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(k)
	haystacks["Kustomization"] = string(b)
	if !strings.Contains(haystacks["controller log"], k.Name) || !strings.Contains(haystacks["posted events"], "decryption failed") {
		t.Fatalf("the log or the events are not the ones searched")
	}
	for what, h := range haystacks {
		for _, v := range plaintexts {
			if strings.Contains(h, v) {
				t.Errorf("%s holds the plaintext %q", what, v)
			}
		}
	}

	// Each build's SOPS helper has ended with its build.
	if kids := helperChildren(t, p.PID()); len(kids) > 0 {
		t.Errorf("eddy-sops processes left running or unreaped: %v", kids)
	}
}

// helperChildren lists the pids of the eddy-sops processes (zombies too) whose
// parent is pid (from /proc).
func helperChildren(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ...
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		var state byte
		var ppid, child int
		if _, err := fmt.Sscanf(s[end+2:], "%c %d", &state, &ppid); err != nil || ppid != pid {
			continue
		}
		if s[open+1:end] == sopswire.Helper {
			fmt.Sscanf(s, "%d", &child)
			kids = append(kids, child)
		}
	}
	return kids
}

// TestBinarySOPSHelperMissing runs the built kustomize-controller without
// eddy-sops beside it or in PATH: a Kustomization with spec.decryption
// fails its build with a message naming the helper (and no path), and
// one without decryption is applied as usual. Once the helper is put
// beside the controller, the next build finds it (no restart).
func TestBinarySOPSHelperMissing(t *testing.T) {
	const shard = "sops-missing"
	exe, err := testenv.BuildController(ControllerName, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(t.TempDir(), ControllerName)
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", "/usr/bin:/bin")
	testenv.RunBinary(t, env, alone, "--watch-label-selector="+shardKey+"="+shard, "--min-retry-delay=200ms", "--max-retry-delay=2s")
	ns := newNamespace(t)
	if err := env.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t, map[string]string{"cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: %s}\n", ns)})
	src := newSource(t, ns, "src", r)
	dec := newKustomization(t, ns, "decrypting", src.Name, func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: shard}
		k.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "sops-keys"}}
	})
	want := "SOPS decryption needs the helper eddy-sops beside the kustomize-controller binary or in PATH, and it is not there"
	if c := waitFailed(t, dec, meta.BuildFailedReason); c.Message != want {
		t.Errorf("Ready message %q, want %q", c.Message, want)
	}
	plain := newKustomization(t, ns, "plain", src.Name, func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: shard}
	})
	waitApplied(t, plain, src.Status.Artifact.Revision)

	helper, err := os.ReadFile(filepath.Join(filepath.Dir(exe), sopswire.Helper))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(alone), sopswire.Helper), helper, 0o755); err != nil {
		t.Fatal(err)
	}
	requestReconcile(t, dec, func() string { return dec.Status.LastHandledReconcileAt })
	waitApplied(t, dec, src.Status.Artifact.Revision)
}

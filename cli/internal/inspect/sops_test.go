package inspect_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddyops/eddy/cli/internal/inspect"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// A SOPS document as sops writes it (values and MAC encrypted; what only
// kustomize-controller decrypts): the shape is what counts here.
const sopsSecret = `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: ENC[AES256_GCM,data:q0nO,iv:AAAA,tag:BBBB,type:str]
%s
sops:
  mac: ENC[AES256_GCM,data:ZZZZ,iv:CCCC,tag:DDDD,type:str]
  lastmodified: "2026-12-02T00:00:00Z"
  version: 3.13.3
`

// Flux compatible: eddy build shows "**SOPS**" in place of encrypted
// values and drops the sops metadata; eddy diff compares a SOPS Secret's
// keys and the rest of it, not the values only the controller can decrypt.
func TestBuildAndDiffSOPS(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	ns := testenv.NewNamespace(t, c, "sops-diff-")
	envDoc := base64.StdEncoding.EncodeToString([]byte("A=ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\nsops_mac=ENC[AES256_GCM,data:m,iv:i,tag:t,type:str]\n"))
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "app", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() *kustomize.Tree {
		t.Helper()
		tree, err := kustomize.ReadDirTree(dir)
		if err != nil {
			t.Fatal(err)
		}
		return tree
	}
	write("kustomization.yaml", "resources: [db.yaml, env.yaml]\n")
	write("db.yaml", fmt.Sprintf(sopsSecret, ""))
	write("env.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: env\ndata:\n  app.env: "+envDoc+"\n  plain: "+base64.StdEncoding.EncodeToString([]byte("visible"))+"\n")
	tree := read()
	ks := kustomization(ns, "app")
	ks.Spec.Path = "./app"
	ks.Spec.TargetNamespace = ns
	objs, err := inspect.Build(ctx, c, ks, tree, "", false)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := yaml.Marshal(objs)
	for _, bad := range []string{"ENC[", "sops:", "mac:"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("built objects hold %q:\n%s", bad, out)
		}
	}
	mask := base64.StdEncoding.EncodeToString([]byte(inspect.SOPSMask))
	for _, want := range []string{"password: '**SOPS**'", "app.env: " + mask, "plain: " + base64.StdEncoding.EncodeToString([]byte("visible"))} {
		if !strings.Contains(string(out), want) {
			t.Errorf("built objects lack %q:\n%s", want, out)
		}
	}

	// Live: db applied with its decrypted password and env as decrypted.
	owner := map[string]string{kustomize.NameLabel: "app", kustomize.NamespaceLabel: ns}
	create(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Labels: owner}, StringData: map[string]string{"password": "hunter2"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "env", Labels: owner}, Data: map[string][]byte{"app.env": []byte("A=1\n"), "plain": []byte("visible")}})
	diff, err := inspect.Diff(ctx, c, ks, objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diff {
		if d.Action != inspect.ActionUnchanged {
			t.Errorf("%s: %s %v, want unchanged (its encrypted values are not compared)", d, d.Action, d.Fields)
		}
	}
	// A key added in Git shows; the live values stay as they are.
	write("db.yaml", fmt.Sprintf(sopsSecret, "  user: ENC[AES256_GCM,data:dXNy,iv:EEEE,tag:FFFF,type:str]"))
	if objs, err = inspect.Build(ctx, c, ks, read(), "", false); err != nil {
		t.Fatal(err)
	}
	if diff, err = inspect.Diff(ctx, c, ks, objs); err != nil {
		t.Fatal(err)
	}
	var db inspect.ObjectDiff
	for _, d := range diff {
		if d.Name == "db" {
			db = d
		}
	}
	if db.Action != inspect.ActionConfigured || len(db.Fields) != 1 || !strings.Contains(db.Fields[0].Path, "user") {
		t.Errorf("db: %s %+v, want configured with the new key only", db.Action, db.Fields)
	}
	live := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, live); err != nil || string(live.Data["password"]) != "hunter2" {
		t.Errorf("live password %q (%v): the diff must not write", live.Data["password"], err)
	}
}

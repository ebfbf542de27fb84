package kustomize

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
)

// writeFiles makes an artifact Tree of the given files (slash-separated
// names → content).
func writeFiles(t *testing.T, files map[string]string) *Tree {
	t.Helper()
	b := newTreeBuilder()
	for name, content := range files {
		if err := b.addFile("/"+name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	return b.tree()
}

const substCM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-${ENV}
  namespace: default
data:
  region: ${REGION:=eu-west-1}
  tier: ${TIER:-gold}
  literal: $${NOT_A_VAR}
  short: ${ENV:0:3}
`

func TestPostBuildSubstitution(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"cm.yaml": substCM,
		"off.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: untouched
  namespace: default
  annotations:
    kustomize.toolkit.fluxcd.io/substitute: disabled
data:
  raw: ${ENV}
`,
	})
	res, err := Build(root, Options{PostBuild: true, Vars: map[string]string{"ENV": "production", "TIER": "silver"}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, u := range res.Objects {
		byName[u.GetName()] = u.Object["data"].(map[string]any)
	}
	got := byName["app-production"]
	want := map[string]any{"region": "eu-west-1", "tier": "silver", "literal": "${NOT_A_VAR}", "short": "pro"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("data.%s = %v, want %v", k, got[k], v)
		}
	}
	if byName["untouched"]["raw"] != "${ENV}" {
		t.Errorf("an object with substitute: disabled was substituted: %v", byName["untouched"])
	}
}

func TestPostBuildStrictModeNamesTheVariable(t *testing.T) {
	root := writeFiles(t, map[string]string{"cm.yaml": substCM + "  missing: ${UNDEFINED_VAR}\n"})
	_, err := Build(root, Options{PostBuild: true, Vars: map[string]string{"ENV": "production"}})
	if err == nil || !strings.Contains(err.Error(), `variable not set (strict mode): "UNDEFINED_VAR"`) ||
		!strings.Contains(err.Error(), "ConfigMap/default/app-${ENV}") {
		t.Fatalf("got %v; want a strict-mode error naming UNDEFINED_VAR and the object", err)
	}
}

// TestPostBuildNonStrict: with Flux's StrictPostBuildSubstitutions=false an
// undefined variable without a default becomes "", defaults still apply.
func TestPostBuildNonStrict(t *testing.T) {
	root := writeFiles(t, map[string]string{"cm.yaml": substCM + "  missing: \"a${UNDEFINED_VAR}b\"\n  dflt: ${UNDEFINED_VAR:=d}\n"})
	res, err := Build(root, Options{PostBuild: true, NonStrict: true, Vars: map[string]string{"ENV": "production"}})
	if err != nil {
		t.Fatal(err)
	}
	data := res.Objects[0].Object["data"].(map[string]any)
	if data["missing"] != "ab" || data["dflt"] != "d" || res.Objects[0].GetName() != "app-production" {
		t.Errorf("non-strict substitution gave %s %v", res.Objects[0].GetName(), data)
	}
}

func TestPostBuildWithoutVariables(t *testing.T) {
	root := writeFiles(t, map[string]string{"cm.yaml": substCM})
	res, err := Build(root, Options{PostBuild: true})
	if err != nil {
		t.Fatalf("with no variables (strategy WithVariables) nothing is substituted: %v", err)
	}
	if res.Objects[0].GetName() != "app-${ENV}" {
		t.Errorf("name %q, want it unsubstituted", res.Objects[0].GetName())
	}
	if _, err := Build(writeFiles(t, map[string]string{"cm.yaml": substCM}), Options{PostBuild: true, Strategy: "Always"}); err == nil ||
		!strings.Contains(err.Error(), `"ENV"`) {
		t.Errorf("strategy Always with no variables: got %v, want a strict-mode error for ENV", err)
	}
}

func TestBuildStaysInsideTheArtifact(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"app/kustomization.yaml":    "resources:\n- ../../../../../../etc/passwd\n",
		"escape/kustomization.yaml": "resources:\n- /etc/hosts\n",
	})
	for _, p := range []string{"../../", "../outside", "/etc"} {
		if _, err := Build(root, Options{Path: p}); err == nil || !strings.Contains(err.Error(), "outside the artifact") && !strings.Contains(err.Error(), "not found") {
			t.Errorf("spec.path %q: got %v, want a refusal", p, err)
		}
	}
	for _, p := range []string{"app", "escape"} {
		_, err := Build(root, Options{Path: p})
		if err == nil {
			t.Fatalf("%s: a kustomization reading outside the artifact was built", p)
		}
		if strings.Contains(err.Error(), "localhost") || strings.Contains(err.Error(), "root:") {
			t.Errorf("%s: error shows a file of the controller's host: %v", p, err)
		}
		t.Logf("%s: %v", p, err)
	}
}

func TestOverlaysAndCommonMetadata(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.25}]}
`,
	})
	res, err := Build(root, Options{
		TargetNamespace: "prod", NamePrefix: "p-", NameSuffix: "-s",
		Images:         []kustomizeImage{{Name: "nginx", NewTag: "1.27"}},
		CommonMetadata: &commonMetadata{Labels: map[string]string{"team": "web"}, Annotations: map[string]string{"owner": "ops"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	u := res.Objects[0]
	image := u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]
	if u.GetNamespace() != "prod" || u.GetName() != "p-web-s" || image != "nginx:1.27" ||
		u.GetLabels()["team"] != "web" || u.GetAnnotations()["owner"] != "ops" {
		t.Errorf("overlays not applied: %s/%s image %v labels %v annotations %v", u.GetNamespace(), u.GetName(), image, u.GetLabels(), u.GetAnnotations())
	}
}

type (
	kustomizeImage = kustomizev1.Image
	commonMetadata = kustomizev1.CommonMetadata
)

// An empty directory and a kustomization without resources build nothing,
// as in Flux, instead of failing; spec.buildMetadata reaches kustomize.
func TestEmptyBuildsAndBuildMetadata(t *testing.T) {
	tree := writeFiles(t, map[string]string{
		"empty/README.md":         "nothing to apply",
		"bare/kustomization.yaml": "namespace: x\n",
		"app/cm.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n",
	})
	for _, p := range []string{"empty", "bare"} {
		res, err := Build(tree, Options{Path: p})
		if err != nil {
			t.Errorf("%s: %v", p, err)
		} else if len(res.Objects) != 0 {
			t.Errorf("%s: %d objects, want none", p, len(res.Objects))
		}
	}
	res, err := Build(tree, Options{Path: "app", BuildMetadata: []string{"originAnnotations"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Objects[0].GetAnnotations()["config.kubernetes.io/origin"]; !strings.Contains(got, "path: cm.yaml") {
		t.Errorf("origin annotation %q", got)
	}
}

// Flux compatible: newlines are removed from variable values, so a value
// cannot add lines (and keys) to the YAML it is substituted into.
func TestPostBuildStripsNewlinesFromValues(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata:\n  quoted: \"${PASS}\"\n  plain: ${TWO_LINES}\n"
	root := writeFiles(t, map[string]string{"cm.yaml": cm})
	res, err := Build(root, Options{PostBuild: true, Vars: map[string]string{"PASS": "s3cret\n", "TWO_LINES": "one\ntwo"}})
	if err != nil {
		t.Fatal(err)
	}
	data := res.Objects[0].Object["data"].(map[string]any)
	if data["quoted"] != "s3cret" || data["plain"] != "onetwo" || len(data) != 2 {
		t.Errorf("data = %q, want quoted=s3cret plain=onetwo", data)
	}

	// Without the newline this value is "v  injected: yes", which is not
	// valid YAML after "plain: ", so the build fails as in Flux.
	_, err = Build(root, Options{PostBuild: true, Vars: map[string]string{"PASS": "x", "TWO_LINES": "v\n  injected: yes"}})
	if err == nil || !strings.Contains(err.Error(), "postBuild substitution of ConfigMap/default/a produced invalid YAML") {
		t.Errorf("got %v, want the substituted YAML refused rather than a key injected", err)
	}
}

// Flux compatible: variable names must match
// ^[_[:alpha:]][_[:alpha:][:digit:]]*$; the first invalid one, in sorted
// order, is named.
func TestPostBuildRefusesInvalidVariableNames(t *testing.T) {
	root := writeFiles(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {x: \"${OK}\"}\n"})
	for i := range 3 {
		_, err := Build(root, Options{PostBuild: true, Vars: map[string]string{"OK": "1", "app.name": "x", "z-name": "y", "_ok2": "z"}})
		const want = "postBuild substitution failed: 'app.name' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'"
		if err == nil || err.Error() != want {
			t.Fatalf("build %d: got %v, want %q", i, err, want)
		}
	}
	for _, name := range []string{"OK", "_x", "a1", "A_B2"} {
		if _, err := Build(root, Options{PostBuild: true, Vars: map[string]string{"OK": "1", name: "v"}}); err != nil {
			t.Errorf("valid name %q refused: %v", name, err)
		}
	}
	// [:alpha:] is ASCII in Go's regexp, as in Flux.
	if _, err := Build(root, Options{PostBuild: true, Vars: map[string]string{"OK": "1", "ÄB": "v"}}); err == nil || !strings.Contains(err.Error(), "'ÄB' var name is invalid") {
		t.Errorf("name ÄB: got %v, want it refused", err)
	}
}

// Substitution does not round-trip numbers through float64: integers
// beyond 2^53 keep their value, and an object without a `$` is untouched.
func TestPostBuildKeepsIntegerPrecision(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"foo.yaml": "apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: a, namespace: default}\nspec:\n  max: 9223372036854775807\n  id: 9007199254740993\n  ratio: 0.5\n  label: ${X}\n",
		"bar.yaml": "apiVersion: example.com/v1\nkind: Bar\nmetadata: {name: b, namespace: default}\nspec:\n  max: 9223372036854775807\n",
	})
	res, err := Build(root, Options{PostBuild: true, Vars: map[string]string{"X": "10"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range res.Objects {
		spec := u.Object["spec"].(map[string]any)
		if spec["max"] != int64(9223372036854775807) {
			t.Errorf("%s: max = %v (%T), want int64 9223372036854775807", u.GetKind(), spec["max"], spec["max"])
		}
		if u.GetKind() != "Foo" {
			continue
		}
		if spec["id"] != int64(9007199254740993) || spec["ratio"] != 0.5 || spec["label"] != int64(10) {
			t.Errorf("Foo spec = %#v, want id int64 9007199254740993, ratio 0.5, label int64 10", spec)
		}
	}
}

// Flux compatible (fluxcd/pkg/envsubst): in strict mode an unset variable
// fails the build when read bare or transformed; the default-providing
// operators do not, and Flux evaluates ${U:+x} and ${U:?x} as ${U:-x} (the
// word when U is unset or empty, else U), not as bash does.
func TestPostBuildOperatorsOnUnsetVariables(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"${U:=d}", "d"}, {"${U:-d}", "d"}, {"${U:+x}", "x"}, {"${U:?msg}", "msg"},
		{"${S:+x}", "set"}, {"${S:?msg}", "set"}, {"${E:+x}", "x"}, {"$${U}", "${U}"},
		{"${U:-${S}}", "set"},
		{"${U}", `error: "U"`}, {"${#U}", `error: "U"`}, {"${U^^}", `error: "U"`}, {"${U,}", `error: "U"`},
		{"${U:1}", `error: "U"`}, {"${U/a/b}", `error: "U"`}, {"${U%%.*}", `error: "U"`}, {"${U#x}", `error: "U"`},
		{"${S:-${V}}", `error: "V"`}, {"${U/${V}/b}", `error: "V"`},
	} {
		root := writeFiles(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {x: \"" + c.expr + "\"}\n"})
		res, err := Build(root, Options{PostBuild: true, Vars: map[string]string{"S": "set", "E": ""}})
		got := ""
		if err != nil {
			got = "error: " + strings.TrimPrefix(err.Error(), "postBuild substitution of ConfigMap/default/a failed: variable not set (strict mode): ")
		} else {
			got, _ = res.Objects[0].Object["data"].(map[string]any)["x"].(string)
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.expr, got, c.want)
		}
	}
}

// Flux compatible (kustomize-controller v1.9.5, bash): in
// ${var:offset:length} a negative length counts back from the end of the
// value; an end before the offset gives "" (bash refuses it). The other
// operators are unchanged by the evaluator that adds this rule.
func TestPostBuildSubstringNegativeLength(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"${S:2:-1}", "cde"}, {"${S:0:-2}", "abcd"}, {"${S:1:-1}", "bcde"},
		{"${S:4:-2}", ""}, {"${S:5:-3}", ""}, {"${S:10:-5}", ""}, {"${S:0:-10}", ""},
		{"${S:2:2}", "cd"}, {"${S:2}", "cdef"}, {"${S:-2}", "abcdef"}, {"${S:4:10}", "ef"},
		{"${S/c/x}", "abxdef"}, {"${S//c/x}", "abxdef"},
		{"${S#a*c}", "def"}, {"${S%%d*}", "abc"}, {"n${#S}", "n6"}, {"${S^^}", "ABCDEF"}, {"${S^}", "Abcdef"},
		{"${U:-x${S:1:-4}y}", "xby"}, {"${U:=d}", "d"}, {"${S}-${U:-a-b}", "abcdef-a-b"},
	} {
		root := writeFiles(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {x: \"" + c.expr + "\"}\n"})
		res, err := Build(root, Options{PostBuild: true, NonStrict: true, Vars: map[string]string{"S": "abcdef"}})
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got, _ := res.Objects[0].Object["data"].(map[string]any)["x"].(string); got != c.want {
			t.Errorf("%s: got %q, want %q", c.expr, got, c.want)
		}
	}
}

// postBuild templates come from the repository and values from the
// Kustomization and its ConfigMaps: substitution must not panic, and a
// value, from which newlines are removed, cannot change what object it is
// written into.
func FuzzSubstitute(f *testing.F) {
	f.Add("${VAR}", "x", false)
	f.Add("${VAR:=d}-${OTHER:-e}", "", true)
	f.Add("$${VAR} ${VAR:0:3} ${VAR/a/b} ${#VAR}", "abcdef", false)
	f.Add("${VAR:10:-5}", "a: b\nkind: Secret", true)
	f.Add("${VAR:2:-1} ${VAR:-3:-1} ${VAR: -9:-20}", "abcdef", false)
	f.Add("${VAR:0:-${#VAR}}${VAR/${VAR:1:-1}/x}", "héllo", true)
	f.Fuzz(func(t *testing.T, template, value string, strict bool) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "app", "namespace": "default"},
			"data":     map[string]any{"key": template, "other": "${VAR}"},
		}}
		if err := substitute([]*unstructured.Unstructured{u}, map[string]string{"VAR": value}, "", strict); err != nil {
			return
		}
		if u.GetAPIVersion() != "v1" || u.GetKind() != "ConfigMap" || u.GetName() != "app" || u.GetNamespace() != "default" {
			t.Fatalf("template %q with VAR=%q made %v", template, value, u.Object)
		}
	})
}

// Flux compatible: a spec.images entry that sets only newName keeps the
// newTag or digest the kustomization.yaml declares for the same image; one
// that sets newTag or digest replaces both (TestSpecImagesMergeAsKustomizeOverlay
// checks every combination).
func TestPartialImageOverrideKeepsDeclaredFields(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"kustomization.yaml": "resources: [deploy.yaml]\nimages:\n- {name: nginx, newName: registry.example/nginx, newTag: \"1.25\"}\n- {name: redis, newTag: \"7\"}\n- {name: app, digest: \"sha256:" + strings.Repeat("a", 64) + "\"}\n",
		"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: a, image: nginx}, {name: b, image: redis}, {name: c, image: app:1}, {name: d, image: busybox}]}
`,
	})
	res, err := Build(root, Options{Images: []kustomizeImage{
		{Name: "nginx", NewName: "mirror.example/nginx"}, // keeps newTag 1.25
		{Name: "redis", NewName: "mirror.example/redis"}, // keeps newTag 7
		{Name: "app", NewTag: "2"},                       // replaces the digest, as kustomize does
		{Name: "busybox", NewTag: "1.36"},                // not declared: as given
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Objects[0].Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
		got = append(got, c.(map[string]any)["image"].(string))
	}
	want := []string{"mirror.example/nginx:1.25", "mirror.example/redis:7", "app:2", "busybox:1.36"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("images %v, want %v", got, want)
	}
}

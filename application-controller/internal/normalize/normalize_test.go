package normalize

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/ssa"
)

// desiredYAML is the Deployment as Git declares it.
const desiredYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: production
  annotations:
    example.com/owner: team-a
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: app
        image: app:1
      - name: sidecar
        image: proxy:1
`

// liveYAML is the same Deployment in the cluster after an HPA scaled it to
// 3 through the scale subresource, an injector changed the sidecar's image,
// and the Deployment controller wrote status; managedFields as the API
// server records them.
const liveYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: production
  annotations:
    example.com/owner: team-a
    deployment.kubernetes.io/revision: "2"
  managedFields:
  - manager: argocd-controller
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          f:example.com/owner: {}
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"app"}:
                .: {}
                f:image: {}
                f:name: {}
              k:{"name":"sidecar"}:
                .: {}
                f:name: {}
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    subresource: scale
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          f:deployment.kubernetes.io/revision: {}
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    subresource: status
    fieldsType: FieldsV1
    fieldsV1:
      f:status:
        f:replicas: {}
  - manager: injector
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"sidecar"}:
                f:image: {}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: app
        image: app:1
      - name: sidecar
        image: proxy:2
status:
  replicas: 3
`

func load(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	// Numbers as the API machinery decodes them.
	raw, _ := json.Marshal(u.Object)
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

func compile(t *testing.T, entries ...argov1.ResourceIgnoreDifferences) *Rules {
	t.Helper()
	r, err := Compile(entries)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func deployments(e argov1.ResourceIgnoreDifferences) argov1.ResourceIgnoreDifferences {
	e.Group, e.Kind = "apps", "Deployment"
	return e
}

func field(u *unstructured.Unstructured, path ...string) (any, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return v, ok
}

func TestHPAReplicasIgnoredThroughManagedFieldsManagers(t *testing.T) {
	r := compile(t, deployments(argov1.ResourceIgnoreDifferences{ManagedFieldsManagers: []string{"kube-controller-manager"}}))
	desired, live := load(t, desiredYAML), load(t, liveYAML)
	liveCopy := live.DeepCopy()
	if err := r.Apply(desired, live); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(liveCopy, live); err != nil {
		t.Fatal(err)
	}
	if _, ok := field(desired, "spec", "replicas"); ok {
		t.Error("desired still has spec.replicas")
	}
	if _, ok := field(liveCopy, "spec", "replicas"); ok {
		t.Error("live still has spec.replicas")
	}
	if v, _ := field(liveCopy, "spec", "template", "spec", "containers"); len(v.([]any)) != 2 {
		t.Errorf("live containers = %v", v)
	}
	got, err := r.Paths(desired.DeepCopy(), live)
	if err != nil {
		t.Fatal(err)
	}
	if got != nil {
		t.Errorf("Paths of an already normalised desired = %v, want none", got)
	}
	got, _ = r.Paths(load(t, desiredYAML), live)
	if want := []string{"/spec/replicas"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Paths = %v, want %v", got, want)
	}
	if _, err := ssa.NewIgnoreRule(got, nil); err != nil {
		t.Errorf("paths do not make an ssa.IgnoreRule: %v", err)
	}
}

func TestUnlistedManagerKeepsItsFields(t *testing.T) {
	r := compile(t, deployments(argov1.ResourceIgnoreDifferences{ManagedFieldsManagers: []string{"someone-else"}}))
	desired, live := load(t, desiredYAML), load(t, liveYAML)
	if err := r.Apply(desired, live); err != nil {
		t.Fatal(err)
	}
	if v, _ := field(desired, "spec", "replicas"); v != int64(1) {
		t.Errorf("replicas = %v, want 1", v)
	}
	// Without live there are no managed fields to read.
	r = compile(t, deployments(argov1.ResourceIgnoreDifferences{ManagedFieldsManagers: []string{"kube-controller-manager"}}))
	if err := r.Apply(desired, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := field(desired, "spec", "replicas"); v != int64(1) {
		t.Errorf("replicas without live = %v, want 1", v)
	}
}

func TestManagerOwnedListItemFieldFoundByKey(t *testing.T) {
	r := compile(t, deployments(argov1.ResourceIgnoreDifferences{ManagedFieldsManagers: []string{"injector"}}))
	desired, live := load(t, desiredYAML), load(t, liveYAML)
	// Git lists the sidecar first: the key, not the position, names it.
	containers, _ := field(desired, "spec", "template", "spec", "containers")
	l := containers.([]any)
	l[0], l[1] = l[1], l[0]
	got, _ := r.Paths(desired, live)
	if want := []string{"/spec/template/spec/containers/0/image"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Paths = %v, want %v", got, want)
	}
	got, _ = r.Paths(live, live)
	if want := []string{"/spec/template/spec/containers/1/image"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Paths in live = %v, want %v", got, want)
	}
}

func TestJSONPointersAndSelection(t *testing.T) {
	tests := []struct {
		name  string
		entry argov1.ResourceIgnoreDifferences
		gone  [][]string
		kept  [][]string
	}{
		{"pointer", deployments(argov1.ResourceIgnoreDifferences{JSONPointers: []string{"/spec/replicas"}}),
			[][]string{{"spec", "replicas"}}, [][]string{{"spec", "template"}}},
		{"escaped slash in a key", deployments(argov1.ResourceIgnoreDifferences{JSONPointers: []string{"/metadata/annotations/example.com~1owner"}}),
			[][]string{{"metadata", "annotations", "example.com/owner"}}, [][]string{{"metadata", "name"}}},
		{"missing field changes nothing", deployments(argov1.ResourceIgnoreDifferences{JSONPointers: []string{"/spec/paused", "/spec/template/spec/containers/7/image"}}),
			nil, [][]string{{"spec", "replicas"}, {"spec", "template"}}},
		{"kind glob", argov1.ResourceIgnoreDifferences{Group: "*", Kind: "Deploy*", JSONPointers: []string{"/spec/replicas"}},
			[][]string{{"spec", "replicas"}}, nil},
		{"other kind", argov1.ResourceIgnoreDifferences{Group: "apps", Kind: "StatefulSet", JSONPointers: []string{"/spec/replicas"}},
			nil, [][]string{{"spec", "replicas"}}},
		{"core group does not match apps", argov1.ResourceIgnoreDifferences{Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
			nil, [][]string{{"spec", "replicas"}}},
		{"name matches", deployments(argov1.ResourceIgnoreDifferences{Name: "api", Namespace: "production", JSONPointers: []string{"/spec/replicas"}}),
			[][]string{{"spec", "replicas"}}, nil},
		{"other name", deployments(argov1.ResourceIgnoreDifferences{Name: "web", JSONPointers: []string{"/spec/replicas"}}),
			nil, [][]string{{"spec", "replicas"}}},
		{"other namespace", deployments(argov1.ResourceIgnoreDifferences{Namespace: "staging", JSONPointers: []string{"/spec/replicas"}}),
			nil, [][]string{{"spec", "replicas"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := load(t, desiredYAML)
			if err := compile(t, tt.entry).Apply(u, nil); err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.gone {
				if _, ok := field(u, p...); ok {
					t.Errorf("%v still present", p)
				}
			}
			for _, p := range tt.kept {
				if _, ok := field(u, p...); !ok {
					t.Errorf("%v removed", p)
				}
			}
		})
	}
}

func images(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	v, _ := field(u, "spec", "template", "spec", "containers")
	var out []string
	for _, c := range v.([]any) {
		m := c.(map[string]any)
		img, _ := m["image"].(string)
		out = append(out, m["name"].(string)+"="+img)
	}
	return strings.Join(out, ",")
}

func TestJQPathExpressions(t *testing.T) {
	tests := []struct {
		name, expr, want string
	}{
		{"select an item's field", `.spec.template.spec.containers[] | select(.name == "sidecar") | .image`, "app=app:1,sidecar="},
		{"a whole item", `.spec.template.spec.containers[] | select(.name == "app")`, "sidecar=proxy:1"},
		{"every item's field", `.spec.template.spec.containers[].image`, "app=,sidecar="},
		{"negative position", `.spec.template.spec.containers[-1].image`, "app=app:1,sidecar="},
		{"failing on this object selects nothing", `.spec.initContainers[] | .image`, "app=app:1,sidecar=proxy:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := load(t, desiredYAML)
			r := compile(t, deployments(argov1.ResourceIgnoreDifferences{JQPathExpressions: []string{tt.expr}}))
			if err := r.Apply(u, nil); err != nil {
				t.Fatal(err)
			}
			if got := images(t, u); got != tt.want {
				t.Errorf("containers = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPathsRenderPointers(t *testing.T) {
	r := compile(t,
		deployments(argov1.ResourceIgnoreDifferences{
			JSONPointers:      []string{"/metadata/annotations/example.com~1owner", "/spec/replicas"},
			JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar") | .image`, `.spec.replicas`},
		}))
	got, err := r.Paths(load(t, desiredYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/metadata/annotations/example.com~1owner", "/spec/replicas", "/spec/template/spec/containers/1/image"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Paths = %v, want %v", got, want)
	}
}

func TestCompileErrorsNameTheEntry(t *testing.T) {
	tests := []struct {
		entry argov1.ResourceIgnoreDifferences
		want  string
	}{
		{argov1.ResourceIgnoreDifferences{Kind: "*", JSONPointers: []string{"spec/replicas"}},
			`ignoreDifferences[1]: invalid JSON pointer "spec/replicas": must start with "/"`},
		{argov1.ResourceIgnoreDifferences{Kind: "*", JSONPointers: []string{"/a~2b"}},
			`ignoreDifferences[1]: invalid JSON pointer "/a~2b": "~" must be followed by "0" or "1"`},
		{argov1.ResourceIgnoreDifferences{Kind: "*", JQPathExpressions: []string{".spec | "}},
			`ignoreDifferences[1]: invalid jqPathExpression ".spec | ": `},
		{argov1.ResourceIgnoreDifferences{Kind: "*", JQPathExpressions: []string{"nosuchfunc(1)"}},
			`ignoreDifferences[1]: invalid jqPathExpression "nosuchfunc(1)": `},
		{argov1.ResourceIgnoreDifferences{Kind: "[", JSONPointers: []string{"/a"}},
			`ignoreDifferences[1]: invalid kind glob "["`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := Compile([]argov1.ResourceIgnoreDifferences{{Kind: "ConfigMap"}, tt.entry})
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Compile error = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestRespectIgnoredKeepsLiveValues(t *testing.T) {
	t.Run("HPA replicas kept", func(t *testing.T) {
		r := compile(t, deployments(argov1.ResourceIgnoreDifferences{ManagedFieldsManagers: []string{"kube-controller-manager"}}))
		desired, live := load(t, desiredYAML), load(t, liveYAML)
		if err := r.RespectIgnored(desired, live); err != nil {
			t.Fatal(err)
		}
		if v, _ := field(desired, "spec", "replicas"); v != int64(3) {
			t.Errorf("replicas = %v, want 3", v)
		}
		if _, ok := field(desired, "status"); ok {
			t.Error("status copied into desired")
		}
		if _, ok := field(desired, "metadata", "annotations", "deployment.kubernetes.io/revision"); ok {
			t.Error("a manager's field Git does not declare was copied")
		}
	})
	t.Run("list item found by name", func(t *testing.T) {
		r := compile(t, deployments(argov1.ResourceIgnoreDifferences{
			JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar") | .image`},
		}))
		desired, live := load(t, desiredYAML), load(t, liveYAML)
		containers, _ := field(desired, "spec", "template", "spec", "containers")
		l := containers.([]any)
		l[0], l[1] = l[1], l[0]
		if err := r.RespectIgnored(desired, live); err != nil {
			t.Fatal(err)
		}
		if got, want := images(t, desired), "sidecar=proxy:2,app=app:1"; got != want {
			t.Errorf("containers = %s, want %s", got, want)
		}
	})
	t.Run("field absent in live is dropped, status never copied", func(t *testing.T) {
		r := compile(t, deployments(argov1.ResourceIgnoreDifferences{JSONPointers: []string{"/spec/paused", "/status/replicas"}}))
		desired, live := load(t, desiredYAML), load(t, liveYAML)
		_ = unstructured.SetNestedField(desired.Object, true, "spec", "paused")
		if err := r.RespectIgnored(desired, live); err != nil {
			t.Fatal(err)
		}
		if _, ok := field(desired, "spec", "paused"); ok {
			t.Error("spec.paused kept though ignored and absent in live")
		}
		if _, ok := field(desired, "status"); ok {
			t.Error("status copied into desired")
		}
	})
	t.Run("whole item appended from live", func(t *testing.T) {
		r := compile(t, deployments(argov1.ResourceIgnoreDifferences{
			JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar")`},
		}))
		desired, live := load(t, desiredYAML), load(t, liveYAML)
		if err := r.RespectIgnored(desired, live); err != nil {
			t.Fatal(err)
		}
		if got, want := images(t, desired), "app=app:1,sidecar=proxy:2"; got != want {
			t.Errorf("containers = %s, want %s", got, want)
		}
	})
	t.Run("new object left as Git has it", func(t *testing.T) {
		r := compile(t, deployments(argov1.ResourceIgnoreDifferences{JSONPointers: []string{"/spec/replicas"}}))
		desired := load(t, desiredYAML)
		if err := r.RespectIgnored(desired, nil); err != nil {
			t.Fatal(err)
		}
		if v, _ := field(desired, "spec", "replicas"); v != int64(1) {
			t.Errorf("replicas = %v, want 1", v)
		}
	})
}

func TestNilRulesIgnoreNothing(t *testing.T) {
	var r *Rules
	u := load(t, desiredYAML)
	if err := r.Apply(u, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.Paths(u, nil); p != nil {
		t.Errorf("Paths = %v", p)
	}
	if err := r.RespectIgnored(u, load(t, liveYAML)); err != nil {
		t.Fatal(err)
	}
	if v, _ := field(u, "spec", "replicas"); v != int64(1) {
		t.Errorf("replicas = %v", v)
	}
}

func TestEmptyGroupMatchesCoreKinds(t *testing.T) {
	cm := load(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"production"},"data":{"a":"1","b":"2"}}`)
	r := compile(t, argov1.ResourceIgnoreDifferences{Kind: "ConfigMap", JSONPointers: []string{"/data/a"}})
	if err := r.Apply(cm, nil); err != nil {
		t.Fatal(err)
	}
	if got := cm.Object["data"]; !reflect.DeepEqual(got, map[string]any{"b": "2"}) {
		t.Errorf("data = %v, want only b", got)
	}
}

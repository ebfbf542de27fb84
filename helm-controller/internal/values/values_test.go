package values

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
)

func release(values string, refs ...meta.ValuesReference) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "apps"}}
	hr.Spec.ValuesFrom = refs
	if values != "" {
		hr.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
	}
	return hr
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}, Data: data}
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func reader(objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
}

// ConfigMap (root merge) < Secret with targetPath < spec.values.
func TestComposePrecedence(t *testing.T) {
	c := reader(
		configMap("base", map[string]string{"values.yaml": "replicaCount: 1\nui:\n  color: red\n  message: from-cm\nimage:\n  tag: 6.0.0\n"}),
		secret("creds", map[string]string{"color": "blue", "tag": "6.1.0"}),
	)
	hr := release(`{"image":{"tag":"6.2.0"},"ui":{"logo":"x"}}`,
		meta.ValuesReference{Kind: "ConfigMap", Name: "base"},
		meta.ValuesReference{Kind: "Secret", Name: "creds", ValuesKey: "color", TargetPath: "ui.color"},
		meta.ValuesReference{Kind: "Secret", Name: "creds", ValuesKey: "tag", TargetPath: "image.tag"},
	)
	got, err := Compose(context.Background(), c, hr)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"replicaCount": float64(1),
		"ui":           map[string]any{"color": "blue", "message": "from-cm", "logo": "x"},
		"image":        map[string]any{"tag": "6.2.0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Compose = %#v\nwant %#v", got, want)
	}
}

func TestComposeOptionalMissing(t *testing.T) {
	c := reader(configMap("base", map[string]string{"values.yaml": "a: 1"}))
	hr := release(`{"b":2}`,
		meta.ValuesReference{Kind: "Secret", Name: "absent", Optional: true},
		meta.ValuesReference{Kind: "ConfigMap", Name: "base", ValuesKey: "other.yaml", Optional: true},
		meta.ValuesReference{Kind: "ConfigMap", Name: "base"},
	)
	got, err := Compose(context.Background(), c, hr)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"a": float64(1), "b": float64(2)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Compose = %#v, want %#v", got, want)
	}

	// Without optional the same references fail.
	hr = release("", meta.ValuesReference{Kind: "Secret", Name: "absent"})
	_, err = Compose(context.Background(), c, hr)
	if want := "could not resolve Secret chart values reference 'apps/absent' with key 'values.yaml': resource not found"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if !errors.Is(err, ErrResourceNotFound) {
		t.Fatalf("errors.Is(%v, ErrResourceNotFound) = false", err)
	}
}

func TestComposeMissingKey(t *testing.T) {
	c := reader(configMap("base", map[string]string{"values.yaml": "a: 1"}), secret("creds", map[string]string{"x": "hunter2"}))
	for _, tc := range []struct {
		ref  meta.ValuesReference
		want string
	}{
		{meta.ValuesReference{Kind: "ConfigMap", Name: "base", ValuesKey: "prod.yaml"},
			"could not resolve ConfigMap chart values reference 'apps/base' with key 'prod.yaml': key not found"},
		{meta.ValuesReference{Kind: "Secret", Name: "creds", TargetPath: "a.b"},
			"could not resolve Secret chart values reference 'apps/creds' with key 'values.yaml': key not found"},
	} {
		_, err := Compose(context.Background(), c, release("", tc.ref))
		if err == nil || err.Error() != tc.want {
			t.Errorf("err = %v\nwant %q", err, tc.want)
		}
		if !errors.Is(err, ErrKeyNotFound) {
			t.Errorf("errors.Is(%v, ErrKeyNotFound) = false", err)
		}
	}
}

// A Secret whose data does not parse fails without quoting the data.
func TestComposeSecretDataNotInError(t *testing.T) {
	c := reader(secret("creds", map[string]string{"values.yaml": "hunter2: [unclosed", "pw": "hunter2,x"}))
	for _, ref := range []meta.ValuesReference{
		{Kind: "Secret", Name: "creds"},
		{Kind: "Secret", Name: "creds", ValuesKey: "pw", TargetPath: "a"},
	} {
		_, err := Compose(context.Background(), c, release("", ref))
		if err == nil || strings.Contains(err.Error(), "hunter2") ||
			!strings.HasPrefix(err.Error(), "could not resolve Secret chart values reference 'apps/creds' with key '") {
			t.Errorf("err = %v", err)
		}
	}
}

func TestComposeQuotedValueIsString(t *testing.T) {
	c := reader(configMap("v", map[string]string{"plain": "8080", "double": `"8080"`, "single": "'true'"}))
	hr := release("",
		meta.ValuesReference{Kind: "ConfigMap", Name: "v", ValuesKey: "plain", TargetPath: "service.port"},
		meta.ValuesReference{Kind: "ConfigMap", Name: "v", ValuesKey: "double", TargetPath: "service.name"},
		meta.ValuesReference{Kind: "ConfigMap", Name: "v", ValuesKey: "single", TargetPath: "list[1]"},
	)
	got, err := Compose(context.Background(), c, hr)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"service": map[string]any{"port": int64(8080), "name": "8080"},
		"list":    []any{nil, "true"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Compose = %#v\nwant %#v", got, want)
	}
}

func TestComposeLiteral(t *testing.T) {
	raw := "{\"a\": [1, 2], \"b\": \"c=d\"}\nline2,with\\comma"
	c := reader(configMap("v", map[string]string{"cfg": raw}))
	hr := release("",
		meta.ValuesReference{Kind: "ConfigMap", Name: "v", ValuesKey: "cfg", TargetPath: `config.app\.json`, Literal: true},
	)
	got, err := Compose(context.Background(), c, hr)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"config": map[string]any{"app.json": raw}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Compose = %#v\nwant %#v", got, want)
	}
	// Without literal the same value is --set syntax and does not parse.
	hr.Spec.ValuesFrom[0].Literal = false
	if _, err := Compose(context.Background(), c, hr); !errors.Is(err, ErrValueMerge) {
		t.Fatalf("err = %v, want ErrValueMerge", err)
	}
}

func TestComposeReadsObjectOnce(t *testing.T) {
	counting := &countingReader{Reader: reader(configMap("v", map[string]string{"a": "1", "b": "2"}))}
	hr := release("",
		meta.ValuesReference{Kind: "ConfigMap", Name: "v", ValuesKey: "a", TargetPath: "a"},
		meta.ValuesReference{Kind: "ConfigMap", Name: "v", ValuesKey: "b", TargetPath: "b"},
	)
	if _, err := Compose(context.Background(), counting, hr); err != nil {
		t.Fatal(err)
	}
	if counting.gets != 1 {
		t.Fatalf("Get called %d times, want 1", counting.gets)
	}
}

type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestDigest(t *testing.T) {
	values := map[string]any{
		"replicas": 3,
		"image":    map[string]any{"tag": "latest", "repository": "nginx"},
		"ports": []any{
			map[string]any{"protocol": "TCP", "port": 8080},
			map[string]any{"port": 9090, "protocol": "UDP"},
		},
	}
	// The bytes Flux hashes: go-yaml v2 output with keys sorted at every depth.
	independent := sha("image:\n  repository: nginx\n  tag: latest\nports:\n- port: 8080\n  protocol: TCP\n- port: 9090\n  protocol: UDP\nreplicas: 3\n")
	if got := Digest(values); got != independent {
		t.Fatalf("Digest = %s, want %s", got, independent)
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"nil", nil, sha("")},
		{"empty", map[string]any{}, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		// Published digest of fluxcd/pkg chartutil for the same map.
		{"flux vector", values, "sha256:fcdc2b0de1581a3633ada4afee3f918f6eaa5b5ab38c3fef03d5b48d3f85d9f6"},
		{"numeric-looking keys", map[string]any{"replicas": 3, "test": map[string]any{
			"632bd82398e71231a98004b6": "value4", "632bd817c559818a52307da2": "value3",
			"632bd80ddf416cf32fd50679": "value2", "632bd80235a05f4192aefade": "value1",
		}}, "sha256:8a980fcbeadd6f05818f07e8aec14070c22250ca3d96af1fcd5f93b3e85b4d70"},
		// JSON-decoded spec.values (float64) digest like integers.
		{"float integer", map[string]any{"replicas": float64(3)}, sha("replicas: 3\n")},
	} {
		if got := Digest(tc.values); got != tc.want {
			t.Errorf("%s: Digest = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestComposeSecretRedact: the strings read from Secrets (a targetPath
// value and a values document's string leaves) are masked by Redact,
// ConfigMap data and short scalars are not.
func TestComposeSecretRedact(t *testing.T) {
	ns := "ns"
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
			Data: map[string][]byte{"pw": []byte("hunter22"), "values.yaml": []byte("db:\n  password: t0p-s3cret\n  port: 5432\n  tls: true\n  pin: 24681357\n")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}, Data: map[string]string{"values.yaml": "host: public-host\n"}},
	).Build()
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hr"}, Spec: helmv2.HelmReleaseSpec{
		ValuesFrom: []meta.ValuesReference{{Kind: "Secret", Name: "s"}, {Kind: "Secret", Name: "s", ValuesKey: "pw", TargetPath: "auth.pw"},
			{Kind: "ConfigMap", Name: "c"}}}}
	_, secrets, err := ComposeSecret(context.Background(), c, hr)
	if err != nil {
		t.Fatal(err)
	}
	got := secrets.Redact("pw hunter22, password t0p-s3cret on public-host:1234 tls true pin 24681357")
	if want := "pw ***, password *** on public-host:1234 tls true pin ***"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
	var none *Secrets
	if none.Redact("x") != "x" {
		t.Error("nil Secrets changed a message")
	}
}

package appdiff

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	objs := []Object{{
		Group: "apps", Kind: "Deployment", Namespace: "production", Name: "payment-api",
		Fields: []Field{
			{Path: "/spec/replicas", Live: json.RawMessage(`3`), Desired: json.RawMessage(`2`), Manager: "kubectl-edit"},
			{Path: "/metadata/labels/tier", Desired: json.RawMessage(`"api"`)},
		},
	}}
	s, err := Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, objs) {
		t.Fatalf("Decode(Encode(x)) = %+v, want %+v", got, objs)
	}
}

func TestEncodeMasksSecretValues(t *testing.T) {
	objs := []Object{{
		Kind: "Secret", Namespace: "production", Name: "db",
		Fields: []Field{
			{Path: "/data/password", Live: json.RawMessage(`"c2VjcmV0MQ=="`), Desired: json.RawMessage(`"c2VjcmV0Mg=="`)},
			{Path: "/stringData/token", Desired: json.RawMessage(`"t0ken"`)},
			{Path: "/metadata/labels/app", Live: json.RawMessage(`"db"`), Desired: json.RawMessage(`"db2"`)},
			{Path: "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
				Live: json.RawMessage(`"{\"data\":{\"password\":\"b2xk\"}}"`)},
		},
	}}
	s, err := Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"c2VjcmV0MQ==", "c2VjcmV0Mg==", "t0ken", "b2xk"} {
		if strings.Contains(s, secret) {
			t.Errorf("the encoded diff holds the secret value %q: %s", secret, s)
		}
	}
	got, _ := Decode(s)
	f := got[0].Fields
	if string(f[0].Live) != `"`+MaskedLive+`"` || string(f[0].Desired) != `"`+MaskedDesired+`"` {
		t.Errorf("changed data value masked as %s → %s", f[0].Live, f[0].Desired)
	}
	if f[1].Live != nil || string(f[1].Desired) != `"`+MaskedDesired+`"` {
		t.Errorf("added stringData value masked as %s → %s; want missing → masked", f[1].Live, f[1].Desired)
	}
	if string(f[2].Desired) != `"db2"` {
		t.Errorf("a label of a Secret was masked: %s", f[2].Desired)
	}
	if string(f[3].Live) != `"`+MaskedLive+`"` || f[3].Desired != nil {
		t.Errorf("kubectl's last-applied record masked as %s → %s; want masked → missing", f[3].Live, f[3].Desired)
	}
	if objs[0].Fields[0].Live == nil || string(objs[0].Fields[0].Live) != `"c2VjcmV0MQ=="` {
		t.Error("Encode changed its argument")
	}
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		in      string
		n       int
		wantErr bool
	}{
		{"", 0, false},
		{"  ", 0, false},
		{"[]", 0, false},
		{`[{"kind":"ConfigMap","name":"a","fields":[{"path":"/data/x","live":"1"}]}]`, 1, false},
		{"{}", 0, true},
		{"not json", 0, true},
	} {
		got, err := Decode(c.in)
		if (err != nil) != c.wantErr || len(got) != c.n {
			t.Errorf("Decode(%q) = %d objects, %v; want %d, error %v", c.in, len(got), err, c.n, c.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), Annotation) {
			t.Errorf("Decode(%q) error %q does not name the annotation", c.in, err)
		}
	}
	if s, err := Encode(nil); s != "" || err != nil {
		t.Errorf("Encode(nil) = %q, %v; want empty", s, err)
	}
}

package sopshelper_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor/sopstest"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopshelper"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
	"github.com/getsops/sops/v3/cmd/sops/formats"
)

// serve runs Serve on the JSON values of msgs and returns its answers.
func serve(t *testing.T, msgs ...any) ([]sopswire.Response, error) {
	t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, m := range msgs {
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	err := sopshelper.Serve(&in, &out)
	var resps []sopswire.Response
	dec := json.NewDecoder(&out)
	for {
		var r sopswire.Response
		if e := dec.Decode(&r); e == io.EOF {
			break
		} else if e != nil {
			t.Fatal(e)
		}
		resps = append(resps, r)
	}
	return resps, err
}

func TestServe(t *testing.T) {
	age, err := sopstest.NewAgeKey()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sopstest.Encrypt([]byte("A=serve-secret-1\nB=plain\n"), formats.Dotenv, sopstest.Options{Age: []sopstest.AgeKey{age}, EncryptedRegex: "^A$"})
	if err != nil {
		t.Fatal(err)
	}
	resps, err := serve(t,
		sopswire.Hello{Version: sopswire.Version, Keys: []sopswire.Key{{Name: "a.agekey", Data: []byte(age.Identity)}}},
		sopswire.Request{Data: enc, In: formats.Dotenv, Out: formats.Dotenv, CheckMAC: true},
		sopswire.Request{Data: []byte("not sops"), In: formats.Yaml, Out: formats.Yaml},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 3 || resps[0].Error != "" || resps[0].Plain != nil || resps[0].Version != sopswire.Version {
		t.Fatalf("responses = %+v", resps)
	}
	if got := string(resps[1].Plain); got != "A=serve-secret-1\nB=plain\n" || resps[1].Error != "" {
		t.Errorf("plain = %q, error %q", got, resps[1].Error)
	}
	if len(resps[1].Values) != 1 || string(resps[1].Values[0]) != "serve-secret-1" {
		t.Errorf("values = %q, want the encrypted value only", resps[1].Values)
	}
	if !strings.HasPrefix(resps[2].Error, "failed to load encrypted YAML data: ") || resps[2].Plain != nil {
		t.Errorf("bad document: %+v", resps[2])
	}
}

// A key that cannot be imported is named in the answer to Hello, and
// nothing more is read.
func TestServeImportError(t *testing.T) {
	resps, err := serve(t,
		sopswire.Hello{Version: sopswire.Version, Keys: []sopswire.Key{{Name: "sops.aws-kms"}, {Name: "bad.agekey", Data: []byte("AGE-SECRET-KEY-NOPE")}}},
		sopswire.Request{Data: []byte("x")},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 1 || resps[0].Key != "bad.agekey" || !strings.HasPrefix(resps[0].Error, "failed to parse and add to age identities: ") {
		t.Fatalf("responses = %+v", resps)
	}
}

func TestServeBadInput(t *testing.T) {
	if err := sopshelper.Serve(strings.NewReader("{nope"), io.Discard); err == nil {
		t.Fatal("no error")
	}
	if err := sopshelper.Serve(strings.NewReader(""), io.Discard); err != nil {
		t.Fatalf("empty input: %v", err)
	}
}

// A Hello of another protocol version is answered with the helper's
// version and an error, and nothing more is read.
func TestServeVersionMismatch(t *testing.T) {
	resps, err := serve(t, sopswire.Hello{Version: sopswire.Version + 1}, sopswire.Request{Data: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 1 || resps[0].Version != sopswire.Version || resps[0].Error == "" {
		t.Fatalf("responses = %+v", resps)
	}
}

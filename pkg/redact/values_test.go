package redact

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestValuesMasksEveryFormOfASecret: a secret is masked as it is, JSON-
// escaped (as an API server's apply error quotes it), Go-quoted, base64-
// encoded, and, when it has several lines, line by line.
func TestValuesMasksEveryFormOfASecret(t *testing.T) {
	const quoted = `pa"ss\word`
	const pem = "-----BEGIN KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQ\n  c2VjcmV0LWtleS1ib2R5\n}\n-----END KEY-----"
	v := NewValues("*****", []string{quoted, pem, "s3cret<&>", ""})
	for _, c := range []struct{ name, in, want string }{
		{"raw", `value "s3cret<&>" is invalid`, `value "*****" is invalid`},
		{"JSON-escaped in an apply error",
			`ConfigMap "app" is invalid: data.password: Invalid value: "pa\"ss\\word": must be lower case`,
			`ConfigMap "app" is invalid: data.password: Invalid value: "*****": must be lower case`},
		{"JSON with HTML escapes", `{"token":"s3cret\u003c\u0026\u003e"}`, `{"token":"*****"}`},
		{"multi-line, JSON-escaped",
			`Invalid value: "-----BEGIN KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQ\n  c2VjcmV0LWtleS1ib2R5\n}\n-----END KEY-----"`,
			`Invalid value: "*****"`},
		{"multi-line, raw", "key:\n" + pem, "key:\n*****"},
		{"multi-line, re-indented line by line",
			"key: |\n    -----BEGIN KEY-----\n    MIIBVQIBADANBgkqhkiG9w0BAQ\n    c2VjcmV0LWtleS1ib2R5\n    }\n",
			"key: |\n    *****\n    *****\n    *****\n    }\n"},
		{"base64", `data.password: "` + base64.StdEncoding.EncodeToString([]byte(quoted)) + `"`, `data.password: "*****"`},
		{"no secret", "nothing to hide", "nothing to hide"},
	} {
		if got := v.Mask(c.in); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestValuesMasksTheLongerSecretWhole: a secret containing another is
// masked whole, whatever the order the secrets were given in.
func TestValuesMasksTheLongerSecretWhole(t *testing.T) {
	got := NewValues("***", []string{"abc", "abcdef"}).Mask("x abcdef y abc")
	if got != "x *** y ***" {
		t.Errorf("Mask = %q", got)
	}
}

func TestNilValuesMaskNothing(t *testing.T) {
	var v *Values
	if v.Mask("s3cret") != "s3cret" || NewValues("***", nil).Mask("s3cret") != "s3cret" {
		t.Error("no secrets, yet the message changed")
	}
	if strings.Contains(NewValues("***", []string{""}).Mask("ab"), "***") {
		t.Error("an empty secret masked the gaps of a message")
	}
}

package controller

import (
	"encoding/base64"
	"maps"
	"slices"

	"github.com/eddyops/eddy/pkg/redact"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// secretMask stands for a Secret's value in a task's failure message: the
// run of '+' Argo CD's UI shows for a Secret's value (as pkg/appdiff).
const secretMask = "++++++++"

// secretValues is the masker (redact.Values, every form of a value) of the
// values of the core Secrets c renders, objects and hooks: an API server's
// apply or dry-run error can quote the object it refuses, values included,
// and Argo CD's own sync messages leaking them is a bug its users filed.
func secretValues(c *comparison) *redact.Values {
	var values []string
	for _, k := range slices.Sorted(maps.Keys(c.desired)) {
		values = appendSecretValues(values, c.desired[k])
	}
	for _, u := range c.hooks {
		values = appendSecretValues(values, u)
	}
	return redact.NewValues(secretMask, values)
}

// appendSecretValues appends the string values of u's data (as written,
// and decoded when it is base64) and stringData when u is a core Secret.
func appendSecretValues(values []string, u *unstructured.Unstructured) []string {
	if u == nil || u.GetKind() != "Secret" || u.GroupVersionKind().Group != "" {
		return values
	}
	for _, field := range []string{"data", "stringData"} {
		m, _ := u.Object[field].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			s, ok := m[k].(string)
			if !ok {
				continue
			}
			values = append(values, s)
			if b, err := base64.StdEncoding.DecodeString(s); field == "data" && err == nil {
				values = append(values, string(b))
			}
		}
	}
	return values
}

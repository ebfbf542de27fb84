// Package appdiff is the pending diff of an Argo CD Application that Eddy's
// application-controller publishes and `eddy app diff` prints: for each
// object whose live state differs from Git, the fields that differ, their
// live and desired values, and the field manager that last wrote the field
// (Eddy's drift report; Argo CD has no such record). The controller writes
// it, encoded with Encode, in the Application's annotation Annotation; the
// CLI reads it with Decode.
package appdiff

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Annotation is the Application annotation holding the encoded diff; absent
// or empty when nothing differs.
const Annotation = "eddy.dev/diff"

// Masked values stand for a Secret's data values, which never reach the
// annotation: the live one and the desired one differ in length so that a
// change still reads as a change (as Argo CD masks Secrets in its diff, with
// runs of '+').
const (
	MaskedLive    = "++++++++"
	MaskedDesired = "+++++++++"
)

// Object is one object of the Application that differs from Git.
type Object struct {
	// Group is the API group, "" for the core group.
	Group string `json:"group,omitempty"`
	// Kind is the API kind, e.g. "Deployment".
	Kind string `json:"kind"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Fields are the fields that differ, in the controller's order.
	Fields []Field `json:"fields,omitempty"`
}

// Field is one field that differs.
type Field struct {
	// Path is the field's JSON pointer (RFC 6901), e.g. "/spec/replicas";
	// "" is the whole object: one missing live (Desired only) or one to
	// prune (Live only).
	Path string `json:"path"`
	// Live is the live value as JSON; nil when the field is missing live.
	Live json.RawMessage `json:"live,omitempty"`
	// Desired is the value Git declares as JSON; nil when Git does not set
	// the field (a field to be removed).
	Desired json.RawMessage `json:"desired,omitempty"`
	// Manager is the field manager that last wrote the live field, from
	// managedFields; empty when unknown.
	Manager string `json:"manager,omitempty"`
}

// IsSecret is true of a core/v1 Secret, whose data values are masked.
func (o Object) IsSecret() bool { return o.Group == "" && o.Kind == "Secret" }

// Encode returns objs as the annotation's JSON ("" for none). The values of
// a Secret's data and stringData fields, and of its kubectl
// last-applied-configuration annotation, are replaced by MaskedLive and
// MaskedDesired (a missing side stays missing), so the annotation never
// holds a secret value. An error only when a value is not valid JSON.
func Encode(objs []Object) (string, error) {
	if len(objs) == 0 {
		return "", nil
	}
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = o
		if !o.IsSecret() {
			continue
		}
		out[i].Fields = make([]Field, len(o.Fields))
		for j, f := range o.Fields {
			if secretValue(f.Path) {
				f.Live, f.Desired = mask(f.Live, MaskedLive), mask(f.Desired, MaskedDesired)
			}
			out[i].Fields[j] = f
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encoding the diff: %w", err)
	}
	return string(data), nil
}

// Decode parses the annotation's value: nil for "", an error naming the
// annotation when it is not a list of objects.
func Decode(s string) ([]Object, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var objs []Object
	if err := json.Unmarshal([]byte(s), &objs); err != nil {
		return nil, fmt.Errorf("annotation %s is not a list of objects: %w", Annotation, err)
	}
	return objs, nil
}

// lastAppliedPointer is kubectl's last-applied-configuration annotation,
// which holds a Secret's values as they were applied.
const lastAppliedPointer = "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"

// secretValue is true of a path of a Secret that holds its values: under
// data or stringData, or kubectl's last-applied record.
func secretValue(path string) bool {
	return path == "/data" || path == "/stringData" || path == lastAppliedPointer ||
		strings.HasPrefix(path, "/data/") || strings.HasPrefix(path, "/stringData/")
}

func mask(v json.RawMessage, with string) json.RawMessage {
	if v == nil {
		return nil
	}
	return json.RawMessage(`"` + with + `"`)
}

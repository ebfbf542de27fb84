// Package values composes a HelmRelease's chart values from spec.valuesFrom
// and spec.values, and digests them, with Flux's semantics
// (flux-contract-2.10.md §2.1 fact 7; fluxcd/pkg chartutil).
package values

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/helmvalues"
	"github.com/eddyops/eddy/pkg/redact"
)

// Reasons a values reference fails; RefError.Is matches them, so callers can
// test errors.Is(err, ErrResourceNotFound).
var (
	ErrResourceNotFound   = errors.New("resource not found")
	ErrKeyNotFound        = errors.New("key not found")
	ErrUnsupportedRefKind = errors.New("unsupported values reference kind")
	ErrValuesDataRead     = errors.New("failed to read values data")
	ErrValueMerge         = errors.New("failed to merge value")
)

// DefaultValuesKey is the data key read when valuesKey is empty.
const DefaultValuesKey = "values.yaml"

// RefError is a failure to resolve one spec.valuesFrom entry. Its text is
// Flux's: "could not resolve [optional ]<Kind> chart values reference
// '<ns>/<name>' with key '<key>': <reason>". It never holds data read from a
// Secret: parse errors of Secret data are reduced to the bare reason.
type RefError struct {
	Reason   error
	Kind     string
	Name     types.NamespacedName
	Key      string
	Optional bool
	// Err is the detail replacing Reason's text, when set.
	Err error
}

func (e *RefError) Error() string {
	var b strings.Builder
	b.WriteString("could not resolve")
	if e.Optional {
		b.WriteString(" optional")
	}
	if e.Kind != "" {
		b.WriteString(" " + e.Kind)
	}
	b.WriteString(" chart values reference")
	fmt.Fprintf(&b, " '%s'", e.Name.String())
	if e.Key != "" {
		fmt.Fprintf(&b, " with key '%s'", e.Key)
	}
	reason := "unknown error"
	if e.Reason != nil {
		reason = e.Reason.Error()
	}
	if e.Err != nil {
		reason = e.Err.Error()
	}
	b.WriteString(": " + reason)
	return b.String()
}

// Is reports whether target is the error's reason or in its detail chain.
func (e *RefError) Is(target error) bool {
	return e.Reason == target || (e.Err != nil && errors.Is(e.Err, target))
}

// Unwrap returns the detail error.
func (e *RefError) Unwrap() error { return e.Err }

func refError(ns string, ref meta.ValuesReference, reason, detail error) *RefError {
	if ref.Kind == "Secret" {
		// Parse errors may quote the data; a Secret's must not leak.
		detail = nil
	}
	return &RefError{
		Reason:   reason,
		Kind:     ref.Kind,
		Name:     types.NamespacedName{Namespace: ns, Name: ref.Name},
		Key:      valuesKey(ref),
		Optional: ref.Optional,
		Err:      detail,
	}
}

func valuesKey(ref meta.ValuesReference) string {
	if ref.ValuesKey == "" {
		return DefaultValuesKey
	}
	return ref.ValuesKey
}

// Compose returns hr's chart values: each spec.valuesFrom entry in order
// (Secret or ConfigMap in hr's namespace, each object read once), then
// spec.values on top of everything.
//
// An entry without targetPath is parsed as a YAML document and deep-merged
// at the root (maps merge key by key, any other value replaces). An entry
// with targetPath sets that one value with Helm's --set syntax
// (strvals.ParseInto); a value wrapped in single or double quotes is
// unquoted and kept a string; with literal: true the value is taken
// verbatim like --set-literal (the path still honours `\.` escapes).
//
// A missing object or key is skipped (and logged) only when the entry is
// optional; otherwise, and on any parse or merge failure, the error is a
// *RefError. Other API errors are returned as they are. The result is
// never nil.
func Compose(ctx context.Context, c client.Reader, hr *helmv2.HelmRelease) (map[string]any, error) {
	vals, _, err := ComposeSecret(ctx, c, hr)
	return vals, err
}

// ComposeSecret is Compose that also returns the Secret strings: every
// value read from a Secret entry (the raw data of a targetPath entry and
// each string or number it parses to, each string or number leaf of a
// values document, numbers in decimal). Helm
// errors quote values (a schema's pattern check, a template's fail), so a
// message built from one must pass through Redact with these.
func ComposeSecret(ctx context.Context, c client.Reader, hr *helmv2.HelmRelease) (map[string]any, *Secrets, error) {
	secrets := &Secrets{}
	specValues, err := SpecValues(hr)
	if err != nil {
		return nil, nil, err
	}
	ns := hr.GetNamespace()
	logger := log.FromContext(ctx)

	// One read per object and reconcile, so every entry sees the same
	// version; a nil entry records NotFound.
	read := map[string]client.Object{}
	result := map[string]any{}
	for _, ref := range hr.Spec.ValuesFrom {
		name := types.NamespacedName{Namespace: ns, Name: ref.Name}
		var obj client.Object
		switch ref.Kind {
		case "Secret":
			obj = &corev1.Secret{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		default:
			return nil, nil, refError(ns, ref, ErrUnsupportedRefKind, nil)
		}
		id := ref.Kind + "/" + name.String()
		cached, seen := read[id]
		if !seen {
			if err := c.Get(ctx, name, obj); err != nil {
				if !apierrors.IsNotFound(err) {
					return nil, nil, err
				}
				obj = nil
			}
			read[id] = obj
			cached = obj
		}
		if cached == nil {
			rerr := refError(ns, ref, ErrResourceNotFound, nil)
			if ref.Optional {
				logger.Info(rerr.Error())
				continue
			}
			return nil, nil, rerr
		}

		key := valuesKey(ref)
		var data []byte
		var found bool
		switch o := cached.(type) {
		case *corev1.Secret:
			data, found = o.Data[key]
		case *corev1.ConfigMap:
			var s string
			s, found = o.Data[key]
			data = []byte(s)
		}
		if !found {
			rerr := refError(ns, ref, ErrKeyNotFound, nil)
			if ref.Optional {
				logger.Info(rerr.Error())
				continue
			}
			return nil, nil, rerr
		}

		if ref.TargetPath != "" {
			// As Flux: spec.values is merged in before the path is set (and
			// again at the end), so a --set on a path spec.values shapes
			// parses against the same tree.
			result = helmvalues.Merge(result, specValues)
			set := setValue
			if ref.Literal {
				set = setLiteral
			}
			if ref.Kind == "Secret" {
				secrets.add(string(data))
				parsed := map[string]any{}
				if set(parsed, ref.TargetPath, string(data)) == nil {
					secrets.addLeaves(parsed)
				}
			}
			if err := set(result, ref.TargetPath, string(data)); err != nil {
				return nil, nil, refError(ns, ref, ErrValueMerge, err)
			}
			continue
		}
		vals, err := chartutil.ReadValues(data)
		if err != nil {
			return nil, nil, refError(ns, ref, ErrValuesDataRead, err)
		}
		if ref.Kind == "Secret" {
			secrets.addLeaves(vals)
		}
		result = helmvalues.Merge(result, vals)
	}
	return helmvalues.Merge(result, specValues), secrets, nil
}

// SpecValues decodes hr.spec.values; nil when unset.
func SpecValues(hr *helmv2.HelmRelease) (map[string]any, error) {
	if hr.Spec.Values == nil || len(hr.Spec.Values.Raw) == 0 {
		return nil, nil
	}
	var v map[string]any
	if err := json.Unmarshal(hr.Spec.Values.Raw, &v); err != nil {
		return nil, fmt.Errorf("could not decode spec.values: %w", err)
	}
	return v, nil
}

// setValue applies path=value with --set semantics; a quoted value is
// unquoted and forced to a string (--set-string).
func setValue(dest map[string]any, path, value string) error {
	const quotes = `'"`
	quoted := false
	for _, q := range quotes {
		if strings.HasPrefix(value, string(q)) && strings.HasSuffix(value, string(q)) {
			quoted = true
		}
	}
	if quoted {
		return strvals.ParseIntoString(path+"="+strings.Trim(value, quotes), dest)
	}
	return strvals.ParseInto(path+"="+value, dest)
}

// literalEscaper escapes the characters --set's value parser interprets,
// backslash first so later escapes are not doubled.
var literalEscaper = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`)

// setLiteral sets value verbatim at path (--set-literal for the value, with
// --set's path syntax).
func setLiteral(dest map[string]any, path, value string) error {
	return strvals.ParseIntoString(path+"="+literalEscaper.Replace(value), dest)
}

// minSecretLen is the shortest Secret string Redact masks: shorter ones
// ("1", "true", "on") would mask ordinary words of a message, and are no
// secret worth the name.
const minSecretLen = 4

// Secrets are strings read from Secrets for a HelmRelease's values; the
// zero value and nil hold none.
type Secrets struct{ list []string }

func (s *Secrets) add(v string) {
	if len(v) >= minSecretLen {
		s.list = append(s.list, v)
	}
}

func (s *Secrets) addLeaves(v any) {
	switch t := v.(type) {
	case chartutil.Values:
		s.addLeaves(map[string]any(t))
	case map[string]any:
		for _, e := range t {
			s.addLeaves(e)
		}
	case []any:
		for _, e := range t {
			s.addLeaves(e)
		}
	case string:
		s.add(t)
	case float64: // YAML numbers decode as JSON's
		s.add(strconv.FormatFloat(t, 'f', -1, 64))
	case int64:
		s.add(strconv.FormatInt(t, 10))
	}
}

// Redact returns msg with each Secret string of s masked with "***" in
// every form redact.Values knows (as it is, JSON-escaped, base64, line by
// line); a secret containing another is masked whole.
func (s *Secrets) Redact(msg string) string {
	if s == nil || len(s.list) == 0 {
		return msg
	}
	return redact.NewValues(SecretMask, s.list).Mask(msg)
}

// SecretMask replaces a Secret string in a HelmRelease's messages.
const SecretMask = "***"

package inspect

import (
	"context"
	"encoding/base64"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eddyops/eddy/pkg/kustomize"
)

// SOPSMask stands for each encrypted value of a SOPS-encrypted object in
// what Build returns (base64-encoded in a Secret's data). Flux compatible:
// flux build and flux diff show it in place of SOPS values, which only
// kustomize-controller can decrypt.
const SOPSMask = "**SOPS**"

var sopsMaskB64 = base64.StdEncoding.EncodeToString([]byte(SOPSMask))

// maskSOPS hides what only kustomize-controller can decrypt: in an object
// kustomize.SOPSEncrypted tells, the `sops` is removed and each encrypted
// value ("ENC[…]") becomes SOPSMask; in a Secret, a data or stringData
// value that holds a SOPS document (kustomize.SOPSDocument) does too. It
// tells whether u was changed.
func maskSOPS(u *unstructured.Unstructured) bool {
	masked := false
	if kustomize.SOPSEncrypted(u.Object) {
		delete(u.Object, "sops")
		masked = true
		secretData, _ := u.Object["data"].(map[string]any)
		var walk func(v any) any
		walk = func(v any) any {
			switch v := v.(type) {
			case map[string]any:
				for k, e := range v {
					v[k] = walk(e)
				}
			case []any:
				for i, e := range v {
					v[i] = walk(e)
				}
			case string:
				if strings.HasPrefix(v, "ENC[") {
					return SOPSMask
				}
			}
			return v
		}
		walk(u.Object)
		if isSecret(u) {
			for k, v := range secretData {
				if v == SOPSMask {
					secretData[k] = sopsMaskB64
				}
			}
		}
	}
	if !isSecret(u) {
		return masked
	}
	for _, field := range []string{"data", "stringData"} {
		m, _ := u.Object[field].(map[string]any)
		for k, v := range m {
			s, ok := v.(string)
			if !ok {
				continue
			}
			doc := s
			if field == "data" {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					continue
				}
				doc = string(b)
			}
			if kustomize.SOPSDocument([]byte(doc)) != kustomize.NotSOPS {
				masked = true
				if field == "data" {
					m[k] = sopsMaskB64
				} else {
					m[k] = SOPSMask
				}
			}
		}
	}
	return masked
}

func isSecret(u *unstructured.Unstructured) bool {
	return u.GetKind() == "Secret" && u.GetAPIVersion() == "v1"
}

// unmaskFromLive returns u with each SOPSMask value replaced by the live
// object's value at the same path, so that a dry-run shows only what
// differs besides the encrypted values (Flux compatible: flux diff compares
// a SOPS Secret's keys, not its values). u is not modified; without a live
// object (or a value there) the mask stays.
func unmaskFromLive(ctx context.Context, c client.Reader, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), live); err != nil {
		if apierrors.IsNotFound(err) {
			return u, nil
		}
		return nil, err
	}
	out := u.DeepCopy()
	if isSecret(out) {
		// stringData is written into data: a masked stringData value is
		// compared as the live data value.
		sd, _ := out.Object["stringData"].(map[string]any)
		ld, _ := live.Object["data"].(map[string]any)
		for k, v := range sd {
			if lv, ok := ld[k]; ok && v == SOPSMask {
				d, _ := out.Object["data"].(map[string]any)
				if d == nil {
					d = map[string]any{}
					out.Object["data"] = d
				}
				d[k] = lv
				delete(sd, k)
			}
		}
		if sd != nil && len(sd) == 0 {
			delete(out.Object, "stringData")
		}
	}
	var walk func(v, l any) any
	walk = func(v, l any) any {
		switch v := v.(type) {
		case map[string]any:
			lm, _ := l.(map[string]any)
			for k, e := range v {
				v[k] = walk(e, lm[k])
			}
		case []any:
			ll, _ := l.([]any)
			for i, e := range v {
				var le any
				if i < len(ll) {
					le = ll[i]
				}
				v[i] = walk(e, le)
			}
		case string:
			if (v == SOPSMask || v == sopsMaskB64) && l != nil {
				return l
			}
		}
		return v
	}
	walk(out.Object, live.Object)
	return out, nil
}

// hasMask tells whether u holds a SOPSMask value (an object Build masked).
func hasMask(u *unstructured.Unstructured) bool {
	found := false
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			found = found || v == SOPSMask || v == sopsMaskB64
		}
	}
	walk(u.Object)
	return found
}

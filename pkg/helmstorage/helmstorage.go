// Package helmstorage reads the objects of a Helm release from its storage
// record, the way `flux tree` expands a HelmRelease: without the Helm
// libraries, from the Secret Helm's storage driver writes.
package helmstorage

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// SecretName is the name of the storage Secret of release version v of
// name: sh.helm.release.v1.<name>.v<v>.
func SecretName(name string, v int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, v)
}

// Objects decodes the objects of a storage record: data is the Secret's
// "release" value, base64 of (optionally gzipped) JSON whose "manifest"
// is the rendered multi-document YAML. Objects keep the namespace the
// manifest gives them (none for most chart templates). Errors: "no release
// data", or the base64, gzip, JSON or YAML decoding error.
func Objects(data []byte) ([]*unstructured.Unstructured, error) {
	if len(data) == 0 {
		return nil, errors.New("no release data")
	}
	b, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b, 0x08}) {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if b, err = io.ReadAll(r); err != nil {
			return nil, err
		}
	}
	var rls struct {
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal(b, &rls); err != nil {
		return nil, err
	}
	return ReadObjects(strings.NewReader(rls.Manifest))
}

// ReadObjects decodes a multi-document YAML (or JSON) stream; empty
// documents are skipped.
func ReadObjects(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
}

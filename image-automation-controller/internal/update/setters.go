package update

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	yaml "go.yaml.in/yaml/v3"
)

// Token is what a file must contain, quotes included, to be read at all
// (Flux's screening of files before parsing them).
const Token = `"$imagepolicy"`

// setterPrefix is the long form of a marker's reference, kyaml setters2's
// `{"$ref": "#/definitions/io.k8s.cli.setters.<ns>:<name>"}`.
const setterPrefix = "#/definitions/io.k8s.cli.setters."

// WithSetters sets every marked scalar in the YAML files below
// root/path (path is joined securely: it cannot leave root) from policies,
// keyed `<namespace>:<name>`, and rewrites the files that changed in place.
//
// A marker `# {"$imagepolicy": "<ns>:<name>"}` sets the whole scalar to
// the image reference LatestRef.String(), whatever the field is (Flux sets
// a marked tag field to the whole reference too); with `:tag`, `:name` or
// `:digest` it sets the scalar to that part only. A `:digest` marker whose
// policy has no digest yet is left alone (Flux would write an empty
// string). Files read: `*.yaml`, `*.yml` and `Kustomization`, holding
// Token, not symbolic links, outside `.git`; a file that is not valid YAML
// is skipped and listed in Result.Skipped, as is a marked scalar Eddy cannot
// replace in place (block or multi-line scalars, anchors or tags before the
// value). Markers naming an unknown policy are listed in
// Result.UnknownPolicies. The error is for the walk, a read or a write.
func WithSetters(root, path string, policies map[string]LatestRef) (Result, error) {
	var res Result
	dir, err := securejoin.SecureJoin(root, path)
	if err != nil {
		return res, fmt.Errorf("update path %q: %w", path, err)
	}
	if _, err := os.Stat(dir); err != nil {
		return res, fmt.Errorf("update path %q: %w", path, errors.Unwrap(err))
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !isYAMLName(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return updateFile(p, filepath.ToSlash(rel), policies, &res)
	})
	return res, err
}

func isYAMLName(name string) bool {
	ext := filepath.Ext(name)
	return ext == ".yaml" || ext == ".yml" || name == "Kustomization"
}

// updateFile applies the markers of one file and writes it if it changed.
func updateFile(path, rel string, policies map[string]LatestRef, res *Result) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", rel, errors.Unwrap(err))
	}
	if !bytes.Contains(data, []byte(Token)) {
		return nil
	}
	docs, err := parseDocuments(data)
	if err != nil {
		res.Skipped = append(res.Skipped, SkippedFile{File: rel, Reason: "not valid YAML: " + err.Error()})
		return nil
	}
	f := &fileEdit{data: data, rel: rel}
	for _, doc := range docs {
		obj := identify(doc)
		walk(doc, false, func(n *yaml.Node, flow bool) {
			f.visit(n, flow, obj, policies, res)
		})
	}
	if len(f.edits) == 0 {
		return nil
	}
	out := f.apply()
	if _, err := parseDocuments(out); err != nil {
		// Never write a file the update broke; say so instead.
		res.Skipped = append(res.Skipped, SkippedFile{File: rel, Reason: "the update would make it invalid YAML: " + err.Error()})
		return nil
	}
	for _, e := range f.edits {
		res.add(rel, e.obj, e.change)
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, out, info.Mode().Perm()); err != nil {
		return fmt.Errorf("writing %s: %w", rel, errors.Unwrap(err))
	}
	return nil
}

// parseDocuments decodes every YAML document of data.
func parseDocuments(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

// walk calls fn on every scalar that is a mapping value or a sequence
// item (the nodes kyaml's setters visit), telling whether it is inside a
// flow collection.
func walk(n *yaml.Node, flow bool, fn func(*yaml.Node, bool)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, flow, fn)
		}
	case yaml.MappingNode:
		inner := flow || n.Style&yaml.FlowStyle != 0
		for i := 1; i < len(n.Content); i += 2 {
			walk(n.Content[i], inner, fn)
		}
	case yaml.SequenceNode:
		inner := flow || n.Style&yaml.FlowStyle != 0
		for _, c := range n.Content {
			walk(c, inner, fn)
		}
	case yaml.ScalarNode:
		fn(n, flow)
	}
}

// identify reads apiVersion, kind, metadata.name and metadata.namespace of
// a document.
func identify(doc *yaml.Node) ObjectIdentifier {
	var id ObjectIdentifier
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return id
	}
	m := doc.Content[0]
	id.APIVersion, id.Kind = field(m, "apiVersion"), field(m, "kind")
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "metadata" && m.Content[i+1].Kind == yaml.MappingNode {
			id.Name, id.Namespace = field(m.Content[i+1], "name"), field(m.Content[i+1], "namespace")
		}
	}
	return id
}

func field(m *yaml.Node, key string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.ScalarNode {
			return m.Content[i+1].Value
		}
	}
	return ""
}

// markerSetter returns the setter a line comment names
// (`# {"$imagepolicy": "ns:name:tag"}` or the long `$ref` form), "" if the
// comment is not a marker. As kyaml, the comment must be exactly one JSON
// object.
func markerSetter(comment string) string {
	c := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(comment), "#"))
	if !strings.HasPrefix(c, "{") {
		return ""
	}
	var m map[string]any
	if json.Unmarshal([]byte(c), &m) != nil {
		return ""
	}
	if s, ok := m["$imagepolicy"].(string); ok {
		return s
	}
	if s, ok := m["$ref"].(string); ok && strings.HasPrefix(s, setterPrefix) {
		return strings.TrimPrefix(s, setterPrefix)
	}
	return ""
}

// setterValue returns what setter writes for policies: the policy is the
// first two colon-separated parts, an optional third is tag, name or
// digest. ok is false for an unknown policy or suffix.
func setterValue(setter string, policies map[string]LatestRef) (value string, ok bool) {
	parts := strings.Split(setter, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return "", false
	}
	ref, found := policies[parts[0]+":"+parts[1]]
	if !found {
		return "", false
	}
	if len(parts) == 2 {
		return ref.String(), true
	}
	switch parts[2] {
	case "tag":
		return ref.Tag, true
	case "name":
		return ref.Name, true
	case "digest":
		return ref.Digest, true
	}
	return "", false
}

package builder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// mergeFile deep-merges the YAML of the source file src into the artifact
// file dest, as Helm merges values files: maps merge key by key, anything
// else (lists included) is replaced by src's. Each file's documents are
// merged into one first.
func mergeFile(srcRoot *os.Root, src string, dstRoot *os.Root, dest string) error {
	over, err := loadYAML(srcRoot, src)
	if err != nil {
		return fmt.Errorf("merge '%s': %w", src, err)
	}
	base, err := loadYAML(dstRoot, dest)
	if err != nil {
		return fmt.Errorf("merge into '%s': %w", dest, err)
	}
	out, err := yaml.Marshal(mergeMaps(base, over))
	if err != nil {
		return err
	}
	return dstRoot.WriteFile(dest, out, 0o644)
}

func loadYAML(r *os.Root, name string) (map[string]any, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]any{}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		raw, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		doc := map[string]any{}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return nil, err
		}
		out = mergeMaps(out, doc)
	}
}

// mergeMaps returns base with over merged in; neither is changed.
func mergeMaps(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

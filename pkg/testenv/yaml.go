package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// YAMLDocuments splits a multi-document YAML stream at its `---` lines, as
// kubectl reads one; the error is the reader's, for a malformed stream.
func YAMLDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, doc)
	}
}

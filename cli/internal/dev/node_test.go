package dev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNodeRealRefusesFlagsOfLocalProcessesInOneLine(t *testing.T) {
	for _, tc := range []struct {
		f    Flags
		want string
	}{
		{Flags{Node: "vm", Nodes: 1}, `--node "vm": want kwok`},
		{Flags{Node: NodeReal, Nodes: 3}, "--nodes=3: --node real runs one node"},
		{Flags{Node: NodeReal, Nodes: 1, AlertsSink: true}, "--alerts-sink is not available with --node real"},
		{Flags{Node: NodeReal, Nodes: 1, InstallHook: true}, "--install-hook is not available with --node real"},
	} {
		err := CheckNodeFlags(&tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("CheckNodeFlags(%+v) = %v; want one line with %q", tc.f, err, tc.want)
		}
	}
	for _, f := range []Flags{{Nodes: 3}, {Node: NodeKwok, Nodes: 2, AlertsSink: true}, {Node: NodeReal, Nodes: 1, Shards: 2, UI: true}} {
		if err := CheckNodeFlags(&f); err != nil {
			t.Errorf("CheckNodeFlags(%+v) = %v; want nil", f, err)
		}
	}
}

func TestNodeRealWithoutImagesSaysWhatToBuild(t *testing.T) {
	root := t.TempDir()
	_, err := FindNodeImages(root, "v1.2.3")
	if err == nil || err.Error() != "--node real: no bin/node-images (the pause image the node needs): run `make node-images`" {
		t.Errorf("without bin/node-images: %v", err)
	}
	node := filepath.Join(root, "bin", "node-images")
	if err := os.MkdirAll(node, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(node, "index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = FindNodeImages(root, "v1.2.3")
	want := "--node real: no controller images of eddy v1.2.3 in bin/images or bin/test-images: run `make images` (or `make test-images`)"
	if err == nil || err.Error() != want {
		t.Errorf("without bin/images: %v; want %s", err, want)
	}
}

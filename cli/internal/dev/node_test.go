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

func TestNodeRealBundleHonoursShardsAndControllerFlagsThroughDeployments(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	s := &State{Registry: "127.0.0.1:5001", Shards: 1,
		ImageDigests:    map[string]string{"source-controller": digest, "kustomize-controller": digest},
		ControllerFlags: ControllerFlags{"kustomize-controller": {"--concurrent=7"}}}
	objs, err := nodeBundle(s, "v9")
	if err != nil {
		t.Fatal(err)
	}
	args := map[string][]any{}
	images := map[string]string{}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		c := u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		args[u.GetName()], _ = c["args"].([]any)
		images[u.GetName()], _ = c["image"].(string)
	}
	for _, name := range []string{"kustomize-controller", "kustomize-controller-shard1"} {
		if a := args[name]; len(a) == 0 || a[len(a)-1] != "--concurrent=7" {
			t.Errorf("%s's arguments %v do not end with --concurrent=7", name, a)
		}
	}
	if a := args["source-controller"]; len(a) > 0 && a[len(a)-1] == "--concurrent=7" {
		t.Errorf("source-controller got kustomize-controller's flags: %v", a)
	}
	if got, want := images["source-controller-shard1"], "127.0.0.1:5001/source-controller:v9@"+digest; got != want {
		t.Errorf("source-controller-shard1's image %q; want %q", got, want)
	}
	if _, ok := images["application-controller"]; ok {
		t.Error("application-controller installed without its image")
	}
}

func TestNodeRealBundleInstallsTheImageControllersOfTheStateWithTheirFlags(t *testing.T) {
	digest := "sha256:" + strings.Repeat("b", 64)
	s := &State{Registry: "127.0.0.1:5001", Node: NodeReal,
		OptionalComponents: []string{"image-reflector-controller", "image-automation-controller"},
		ImageDigests:       map[string]string{"image-reflector-controller": digest, "image-automation-controller": digest},
		ControllerFlags: ControllerFlags{"image-reflector-controller": {"--concurrent=3"},
			"image-automation-controller": {"--requeue-dependency=2s"}}}
	objs, err := nodeBundle(s, "v9")
	if err != nil {
		t.Fatal(err)
	}
	args, images, crds := map[string][]any{}, map[string]string{}, map[string]bool{}
	for _, u := range objs {
		switch u.GetKind() {
		case "CustomResourceDefinition":
			crds[u.GetName()] = true
		case "Deployment":
			c := u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			args[u.GetName()], _ = c["args"].([]any)
			images[u.GetName()], _ = c["image"].(string)
		}
	}
	for name, flag := range map[string]string{"image-reflector-controller": "--concurrent=3", "image-automation-controller": "--requeue-dependency=2s"} {
		if got, want := images[name], "127.0.0.1:5001/"+name+":v9@"+digest; got != want {
			t.Errorf("%s's image %q; want %q", name, got, want)
		}
		if a := args[name]; len(a) == 0 || a[len(a)-1] != flag {
			t.Errorf("%s's arguments %v do not end with %s", name, a, flag)
		}
	}
	for _, name := range []string{"imagerepositories.image.toolkit.fluxcd.io", "imagepolicies.image.toolkit.fluxcd.io", "imageupdateautomations.image.toolkit.fluxcd.io"} {
		if !crds[name] {
			t.Errorf("no CustomResourceDefinition %s", name)
		}
	}

	objs, err = nodeBundle(&State{Registry: "127.0.0.1:5001", Node: NodeReal, ImageDigests: s.ImageDigests}, "v9")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() == "Deployment" && strings.HasPrefix(u.GetName(), "image-") {
			t.Errorf("%s installed for a repository without image kinds", u.GetName())
		}
	}
}

func TestNodeRealRefusesImageKindsWithoutTheirImagesNamingMakeTestImages(t *testing.T) {
	root, tree := t.TempDir(), t.TempDir()
	writeFiles(t, tree, map[string]string{"clusters/dev/images.yaml": "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"})
	src := &Source{WorkTree: tree, Path: "./clusters/dev"}
	images := &NodeImages{Controllers: filepath.Join(root, "bin", "test-images"),
		Components: []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller", "image-reflector-controller"}}
	var o Options
	err := withOptional(&o, root, src, nil, images)
	want := "--node real: the repository uses image.toolkit.fluxcd.io, and bin/test-images has no image of image-automation-controller " +
		"of this eddy's version: run `make test-images` (or `make images`)"
	if err == nil || err.Error() != want {
		t.Errorf("withOptional = %v; want %s", err, want)
	}

	images.Components = append(images.Components, "image-automation-controller")
	o = Options{}
	if err := withOptional(&o, root, src, nil, images); err != nil {
		t.Fatal(err)
	}
	// No bin/image-*-controller here: with --node real they run from images, not bin/.
	if strings.Join(o.OptionalComponents, ",") != "image-reflector-controller,image-automation-controller" || o.Optional != nil {
		t.Errorf("optional components %q, processes %q", o.OptionalComponents, o.Optional)
	}
}

package main

import (
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The images a real node needs besides the controllers' (make node-images):
// the pod sandbox's pause image and the tiny application the examples and
// tests run. Both are built for linux/amd64 only: the node runs on this
// machine.
const (
	PauseName = "pause"
	AppName   = "tinyapp"

	// pauseUser is the pause image's user, as Kubernetes' own image sets it.
	pauseUser = "65535:65535"
)

// PauseIndex is the pause image: the static pause binary (compiled from
// Kubernetes' build/pause/linux/pause.c) as /pause, alone in one layer on
// scratch, entrypoint /pause, user 65535:65535, as Kubernetes builds
// registry.k8s.io/pause; labelled with version (pause's own, e.g. 3.10.2)
// and m's creation time, its source being build/pause of k8sVersion (the
// k8s.io/kubernetes module it was compiled from). An index of one
// linux/amd64 image.
func PauseIndex(bin, version, k8sVersion string, m Meta) (v1.ImageIndex, error) {
	b := Binary{OS: "linux", Arch: "amd64", Path: bin}
	data, err := readStatic(PauseName, b)
	if err != nil {
		return nil, err
	}
	l, err := layer([]entry{{name: PauseName, mode: 0o755, data: data}}, m.Created)
	if err != nil {
		return nil, err
	}
	pm := Meta{Version: version, Created: m.Created,
		Source: "https://github.com/kubernetes/kubernetes/tree/" + k8sVersion + "/build/pause"}
	img, err := assemble(b.OS, b.Arch, m.Created, v1.Config{
		Entrypoint: []string{"/" + PauseName},
		User:       pauseUser,
		WorkingDir: "/",
		Labels:     labels(PauseName, pm),
	}, []layerOf{{l, "eddy images: /pause (Kubernetes' build/pause/linux/pause.c, gcc -static)"}})
	if err != nil {
		return nil, err
	}
	return single(PauseName, b, img, pm), nil
}

// AppIndex is the tiny application's image (tools/images/tinyapp): the
// controllers' base layer (CA bundle, nobody 65534, /tmp), then the binary
// as /tinyapp with two links to it, /podinfo (podinfo's manifests run
// ./podinfo from the working directory /) and /usr/local/bin/podcli (their
// exec probes run `podcli check http ...`); entrypoint /tinyapp, user
// 65534:65534, labelled as the controllers are. An index of one
// linux/amd64 image.
func AppIndex(bin string, m Meta) (v1.ImageIndex, error) {
	b := Binary{OS: "linux", Arch: "amd64", Path: bin}
	data, err := readStatic(AppName, b)
	if err != nil {
		return nil, err
	}
	base, err := baseLayer(m)
	if err != nil {
		return nil, err
	}
	l, err := layer([]entry{
		{name: AppName, mode: 0o755, data: data},
		{name: "podinfo", mode: 0o777, link: "/" + AppName},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: "usr/local/bin/podcli", mode: 0o777, link: "/" + AppName},
	}, m.Created)
	if err != nil {
		return nil, err
	}
	img, err := assemble(b.OS, b.Arch, m.Created, v1.Config{
		Entrypoint: []string{"/" + AppName},
		User:       user,
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels:     labels(AppName, m),
	}, []layerOf{{base, baseHistory}, {l, "eddy images: /tinyapp, /podinfo and /usr/local/bin/podcli linking to it"}})
	if err != nil {
		return nil, err
	}
	return single(AppName, b, img, m), nil
}

// readStatic reads b's binary and refuses what a scratch image cannot run.
func readStatic(name string, b Binary) ([]byte, error) {
	data, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, fmt.Errorf("%s for %s/%s: %w (build it first: make node-images)", name, b.OS, b.Arch, err)
	}
	if err := checkStatic(data, b); err != nil {
		return nil, fmt.Errorf("%s for %s/%s: %w", name, b.OS, b.Arch, err)
	}
	return data, nil
}

// single is the index of one platform's image, annotated as Index
// annotates the controllers'.
func single(name string, b Binary, img v1.Image, m Meta) v1.ImageIndex {
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add:        img,
		Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: b.OS, Architecture: b.Arch}},
	})
	return mutate.Annotations(idx, labels(name, m)).(v1.ImageIndex)
}

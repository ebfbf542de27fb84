package dev

import (
	"testing"
)

// A repository that came to use image kinds after the environment started
// gets one line naming the group, the controllers and the remedy; one the
// environment already runs them for, or that uses none, gets nothing.
func TestCheckOptionalRunningNamesControllersTheEnvironmentLacks(t *testing.T) {
	root, tree := t.TempDir(), t.TempDir()
	writeFiles(t, tree, map[string]string{"clusters/dev/images.yaml": "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"})
	src := &Source{WorkTree: tree, Path: "./clusters/dev"}
	want := "the repository now uses image.toolkit.fluxcd.io, whose controllers (image-reflector-controller, image-automation-controller) " +
		"the running environment was started without: run `eddy dev down`, then `eddy dev up`"
	for _, node := range []string{"", NodeReal} {
		if err := checkOptionalRunning(root, src, &State{Node: node}); err == nil || err.Error() != want {
			t.Errorf("node %q: got %v\nwant %s", node, err, want)
		}
	}
	running := &State{OptionalComponents: []string{"image-reflector-controller", "image-automation-controller"}}
	if err := checkOptionalRunning(root, src, running); err != nil {
		t.Errorf("environment running both: %v", err)
	}
	if err := checkOptionalRunning(root, &Source{WorkTree: tree, Path: "./other"}, &State{}); err != nil {
		t.Errorf("repository without image kinds: %v", err)
	}
}

// The wait's hint for a kind of an optional controller whose CRD is
// missing names that controller and the remedy, not "CRDs of Eddy's
// controllers only".
func TestHintForAMissingKindOfAnOptionalController(t *testing.T) {
	msg := `ImagePolicy/flux-system/podinfo dry-run failed: no matches for kind "ImagePolicy" in version "image.toolkit.fluxcd.io/v1"`
	want := "a kind of image.toolkit.fluxcd.io, served by Eddy's image-reflector-controller and image-automation-controller, " +
		"which this environment does not run: eddy dev starts them when `eddy dev up` finds the kind in a local --repo: " +
		"commit the objects, then run `eddy dev down`, then `eddy dev up`"
	if got := hint(msg); got != want {
		t.Errorf("hint:\n got %s\nwant %s", got, want)
	}
	other := `Certificate/x/y dry-run failed: no matches for kind "Certificate" in version "cert-manager.io/v1"`
	if got := hint(other); got == want || got == "" {
		t.Errorf("hint for another group: %q", got)
	}
}

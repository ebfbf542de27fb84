package dev

import (
	"slices"
	"strings"
	"testing"
)

// --controller-flags gives each named controller its flags, kept in the
// state directory: a later `eddy dev up` without it gets them back, one
// that names a controller replaces that controller's flags only, and
// NAME= clears them.
func TestControllerFlagsAreKeptAndReplacedPerController(t *testing.T) {
	dir := t.TempDir()
	first, err := resolveControllerFlags(dir, []string{
		"kustomize-controller=--feature-gates=StrictPostBuildSubstitutions=false --log-level=debug",
		"helm-controller=--concurrent=2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--feature-gates=StrictPostBuildSubstitutions=false", "--log-level=debug"}
	if !slices.Equal(first["kustomize-controller"], want) || !slices.Equal(first.forProcess("kustomize-controller-shard2"), want) {
		t.Fatalf("kustomize-controller's flags %q (shard 2: %q), want %q", first["kustomize-controller"], first.forProcess("kustomize-controller-shard2"), want)
	}
	if err := saveControllerFlags(dir, first); err != nil {
		t.Fatal(err)
	}
	kept, err := resolveControllerFlags(dir, nil)
	if err != nil || !kept.Equal(first) {
		t.Fatalf("without --controller-flags: %v (%v), want the kept %v", kept, err, first)
	}
	next, err := resolveControllerFlags(dir, []string{"helm-controller="})
	if err != nil || !slices.Equal(next["kustomize-controller"], want) || len(next["helm-controller"]) != 0 {
		t.Fatalf("after helm-controller=: %v (%v); want kustomize-controller's kept and helm-controller's cleared", next, err)
	}
	// The values the detached supervisor gets reproduce the set exactly.
	again, err := resolveControllerFlags(dir, next.Args())
	if err != nil || !again.Equal(next) {
		t.Errorf("from Args %q: %v (%v), want %v", next.Args(), again, err, next)
	}
	if err := saveControllerFlags(dir, ControllerFlags{}); err != nil {
		t.Fatal(err)
	}
	if none, err := LoadControllerFlags(dir); err != nil || len(none.Lines()) != 0 {
		t.Errorf("after saving none: %v (%v)", none, err)
	}
}

// The optional controllers take --controller-flags as the others do: kept,
// reproduced for the detached supervisor, given to their process, and
// refused in one line when eddy dev sets the flag itself.
func TestControllerFlagsReachTheOptionalControllers(t *testing.T) {
	dir := t.TempDir()
	got, err := resolveControllerFlags(dir, []string{
		"image-reflector-controller=--log-level=debug", "image-automation-controller=--concurrent=2 --feature-gates=GitShallowClone=false"})
	if err != nil {
		t.Fatal(err)
	}
	if f := got.forProcess("image-reflector-controller"); !slices.Equal(f, []string{"--log-level=debug"}) {
		t.Errorf("image-reflector-controller's flags %q", f)
	}
	if f := got.forProcess("image-automation-controller"); !slices.Equal(f, []string{"--concurrent=2", "--feature-gates=GitShallowClone=false"}) {
		t.Errorf("image-automation-controller's flags %q", f)
	}
	if again, err := resolveControllerFlags(dir, got.Args()); err != nil || !again.Equal(got) {
		t.Errorf("from Args %q: %v (%v), want %v", got.Args(), again, err, got)
	}
	if got.Equal(ControllerFlags{}) {
		t.Error("flags of the optional controllers are not compared")
	}
	if err := saveControllerFlags(dir, got); err != nil {
		t.Fatal(err)
	}
	if kept, err := resolveControllerFlags(dir, []string{"image-reflector-controller="}); err != nil ||
		len(kept["image-reflector-controller"]) != 0 || len(kept["image-automation-controller"]) != 2 {
		t.Errorf("after image-reflector-controller=: %v (%v)", kept, err)
	}
	_, err = ParseControllerFlags([]string{"image-reflector-controller=--storage-path=/tmp/x"})
	if err == nil || !strings.Contains(err.Error(), "eddy dev sets --storage-path itself") || strings.Contains(err.Error(), "\n") {
		t.Errorf("reserved flag of image-reflector-controller: %v", err)
	}
}

// An optional controller that is not built is not run, so its flags are
// not checked (the check would fail for want of its binary); a core
// controller's flags are.
func TestControllerFlagsOfAnUnbuiltOptionalControllerAreNotChecked(t *testing.T) {
	root := t.TempDir()
	f := ControllerFlags{"image-automation-controller": {"--log-level=debug"}}
	if err := checkControllerFlags(root, f, nil); err != nil {
		t.Errorf("unbuilt image-automation-controller: %v", err)
	}
	f = ControllerFlags{"kustomize-controller": {"--log-level=debug"}}
	if err := checkControllerFlags(root, f, nil); err == nil {
		t.Error("unbuilt kustomize-controller's flags were not checked")
	}
}

// A value that names no controller, is not a flag, or sets a flag eddy dev
// sets itself is refused with a one-line error naming it.
func TestControllerFlagsRefuseBadValues(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{"--feature-gates=X=true", "want NAME=FLAGS"},
		{"image-controller=--log-level=debug", "want NAME=FLAGS"},
		{"kustomize-controller=debug", `"debug" is not a flag`},
		{"source-controller=--storage-path=/tmp/x", "eddy dev sets --storage-path itself"},
		{"kustomize-controller=--kubeconfig=/x", "eddy dev sets --kubeconfig itself"},
		{"notification-controller=-health-addr=:1", "eddy dev sets --health-addr itself"},
	} {
		_, err := ParseControllerFlags([]string{c.value})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", c.value, err, c.want)
		}
	}
}

// The lease of each controller process is the one it takes: Flux's name,
// with a shard's selector hash for shards and the main process of a
// sharded environment.
func TestLeaseNameOfEachControllerProcess(t *testing.T) {
	for _, c := range []struct {
		proc   string
		shards int
		want   string
	}{
		{"kustomize-controller", 0, "kustomize-controller-leader-election"},
		{"notification-controller", 2, "notification-controller-leader-election"},
		{"kustomize-controller-shard1", 1, "kustomize-controller-leader-election-7ee98f29"},
		{"eddy-ui", 0, ""},
	} {
		if got := leaseName(c.proc, c.shards); got != c.want {
			t.Errorf("leaseName(%s, %d) = %q, want %q", c.proc, c.shards, got, c.want)
		}
	}
	if got := leaseName("kustomize-controller", 1); got == leaseName("kustomize-controller", 0) || got == leaseName("kustomize-controller-shard1", 1) {
		t.Errorf("the main kustomize-controller of a sharded environment shares a lease: %s", got)
	}
}

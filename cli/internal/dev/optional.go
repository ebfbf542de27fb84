package dev

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/cli/internal/ui"
)

// OptionalController is a controller eddy dev runs only for a repository
// whose manifests use its API group, after Controllers.
type OptionalController struct {
	// Name is the binary in bin/ and the install component.
	Name string
	// APIVersion is the prefix of the apiVersion ("<group>/") that asks
	// for it.
	APIVersion string
	// Kinds names what goes unreconciled without it, in the note that says
	// its binary is absent.
	Kinds string
}

// OptionalControllers is the table of optional controllers: Flux's image
// automation pair, for image.toolkit.fluxcd.io. A controller whose binary
// is not built is left out with a one-line note (its CRDs are installed
// all the same), so a new entry turns on once `make build` builds it.
var OptionalControllers = []OptionalController{
	{Name: install.ImageReflectorController, APIVersion: "image.toolkit.fluxcd.io/", Kinds: "ImageRepositories and ImagePolicies"},
	{Name: install.ImageAutomationController, APIVersion: "image.toolkit.fluxcd.io/", Kinds: "ImageUpdateAutomations"},
}

// optionalNames are the names of OptionalControllers.
func optionalNames() []string {
	names := make([]string, 0, len(OptionalControllers))
	for _, o := range OptionalControllers {
		names = append(names, o.Name)
	}
	return names
}

// OptionalFor returns the optional controllers src's manifests ask for:
// run, those whose binary is in root's bin/; components, all of them (their
// CRDs go into the bundle); notes, one line per controller left out. A
// remote repository (no work tree) asks for none: its files are not here
// to read.
func OptionalFor(root string, src *Source) (run, components, notes []string) {
	if src == nil || src.WorkTree == "" {
		return nil, nil, nil
	}
	used := usedAPIVersions(filepath.Join(src.WorkTree, filepath.FromSlash(strings.TrimPrefix(src.Path, "./"))))
	for _, o := range OptionalControllers {
		if !slices.Contains(used, o.APIVersion) {
			continue
		}
		components = append(components, o.Name)
		if fileExists(filepath.Join(root, "bin", o.Name)) {
			run = append(run, o.Name)
		} else {
			notes = append(notes, o.Name+" is not built (no bin/"+o.Name+"): the repository's "+o.Kinds+" are applied but not reconciled")
		}
	}
	return run, components, notes
}

// withOptional sets the optional controllers of o for src (OptionalFor).
// With kwok's nodes (images nil) it says in one line each one left out;
// with --node real they run as pods from images, not as processes from
// bin/, and a missing image is refused (checkNodeOptional).
func withOptional(o *Options, root string, src *Source, u *ui.UI, images *NodeImages) error {
	var notes []string
	o.Optional, o.OptionalComponents, notes = OptionalFor(root, src)
	if images != nil {
		o.Optional = nil
		return checkNodeOptional(images, o.OptionalComponents)
	}
	for _, n := range notes {
		u.Warning("%s", n)
	}
	return nil
}

// checkNodeOptional returns an error of one line when the controller
// images of --node real lack one of the optional controllers components:
// its Deployment would never pull.
func checkNodeOptional(images *NodeImages, components []string) error {
	missing := notIn(components, images.Components)
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("--node real: the repository uses %s, and bin/%s has no image of %s of this eddy's version: run `make test-images` (or `make images`)",
		strings.Join(optionalGroups(missing), ", "), filepath.Base(images.Controllers), strings.Join(missing, " or "))
}

// usedAPIVersions returns which of OptionalControllers' APIVersion prefixes
// appear as an apiVersion in the YAML files under dir (.git and
// unreadable files skipped).
func usedAPIVersions(dir string) []string {
	var used []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")):
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, o := range OptionalControllers {
			if !slices.Contains(used, o.APIVersion) && usesAPIVersion(data, o.APIVersion) {
				used = append(used, o.APIVersion)
			}
		}
		return nil
	})
	return used
}

// usesAPIVersion reports whether a line of data is `apiVersion: <prefix>…`.
func usesAPIVersion(data []byte, prefix string) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("apiVersion:"))
		if ok && bytes.HasPrefix(bytes.Trim(bytes.TrimSpace(v), `"'`), []byte(prefix)) {
			return true
		}
	}
	return false
}

package dev

import (
	"fmt"
	"slices"
	"strings"
)

// optionalGroups returns the API groups of the optional controllers
// named (OptionalControllers), in table order, each once.
func optionalGroups(names []string) []string {
	var groups []string
	for _, o := range OptionalControllers {
		g := strings.TrimSuffix(o.APIVersion, "/")
		if slices.Contains(names, o.Name) && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	return groups
}

// notIn returns the names of want that have does not hold, in order.
func notIn(want, have []string) []string {
	var out []string
	for _, n := range want {
		if !slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	return out
}

// checkOptionalRunning returns an error of one line when src uses the
// kinds of an optional controller that the running environment s was
// started without: a controller process cannot be added to a running
// environment, and without it (and its CRDs) the sync fails on "no
// matches for kind".
func checkOptionalRunning(root string, src *Source, s *State) error {
	_, components, _ := OptionalFor(root, src)
	missing := notIn(components, s.OptionalComponents)
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the repository now uses %s, whose controllers (%s) the running environment was started without: "+
		"run `eddy dev down`, then `eddy dev up`", strings.Join(optionalGroups(missing), ", "), strings.Join(missing, ", "))
}

// optionalHint is the hint for a Ready message that says a kind of an
// optional controller has no CRD ("no matches for kind … in version
// \"<group>/…\""); "" for any other message.
func optionalHint(msg string) string {
	var names []string
	for _, o := range OptionalControllers {
		if strings.Contains(msg, `in version "`+o.APIVersion) {
			names = append(names, o.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("a kind of %s, served by Eddy's %s, which this environment does not run: eddy dev starts them when "+
		"`eddy dev up` finds the kind in a local --repo: commit the objects, then run `eddy dev down`, then `eddy dev up`",
		strings.Join(optionalGroups(names), ", "), strings.Join(names, " and "))
}

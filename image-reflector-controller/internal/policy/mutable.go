package policy

import "strings"

// mutableNames are tags that by convention move to a new image: a policy
// resolving to one selects whatever was pushed last under that name, not
// a version.
var mutableNames = map[string]bool{
	"latest": true, "stable": true, "edge": true, "nightly": true, "canary": true,
	"main": true, "master": true, "dev": true, "develop": true, "head": true,
	"release": true, "lts": true, "current": true, "mainline": true, "snapshot": true,
}

// IsMutable tells whether tag is judged mutable (Eddy's rule, beyond Flux):
// one of the conventional moving names (latest, stable, edge, nightly,
// canary, main, master, dev, develop, head, release, lts, current,
// mainline, snapshot; case-insensitive), or "latest" as a dash- or
// dot-separated part ("alpine-latest", "latest.1"). Version tags, build
// numbers and tags carrying a commit or a timestamp are not.
func IsMutable(tag string) bool {
	t := strings.ToLower(tag)
	if mutableNames[t] {
		return true
	}
	for _, part := range strings.FieldsFunc(t, func(r rune) bool { return r == '-' || r == '.' || r == '_' }) {
		if part == "latest" {
			return true
		}
	}
	return false
}

// Package faultpoint lets tests crash a controller at a named point of its
// work, deterministically: the process exits with ExitCode at the n-th
// passage of the point named by the EDDY_FAULT environment variable.
//
// TEST ONLY. EDDY_FAULT is read by tests that start the built binaries (the
// fault-injection suite); nothing in a deployment sets it, and with it unset
// Hit costs one atomic load. Its value is "<point>[:<n>]" (n ≥ 1, default
// 1), or several of them separated by commas, e.g.
// "kustomize-after-apply:2,helm-mid-upgrade". An unknown point name is
// accepted and never reached; a malformed count is reported on standard
// error and the entry ignored.
package faultpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// EnvVar names the environment variable read once, at the first Hit.
const EnvVar = "EDDY_FAULT"

// ExitCode is the exit status of a process stopped at a fault point: a
// value no controller exits with otherwise, so a test tells the fault from
// a crash.
const ExitCode = 86

// The points the controllers pass.
const (
	// KustomizeAfterApply is passed by kustomize-controller after a
	// Kustomization's objects were applied and before its inventory (and
	// the rest of its status) is written.
	KustomizeAfterApply = "kustomize-after-apply"
	// HelmMidUpgrade is passed by helm-controller once an install, upgrade
	// or rollback stored its release as pending-* and before the release
	// is recorded as deployed or failed.
	HelmMidUpgrade = "helm-mid-upgrade"
	// SourceMidArtifactWrite is passed by source-controller's artifact
	// storage once an artifact's bytes are in their temporary file and
	// before the file is renamed into place.
	SourceMidArtifactWrite = "source-mid-artifact-write"
)

var (
	once    sync.Once
	mu      sync.Mutex
	pending map[string]int // point → passages left before the exit
	exit    = os.Exit      // replaced in tests
)

// Hit counts a passage of point and exits the process with ExitCode, after
// a line on standard error naming the point, when EDDY_FAULT asks for this
// passage. It returns at once when EDDY_FAULT is unset.
func Hit(point string) {
	once.Do(func() { pending = parse(os.Getenv(EnvVar)) })
	if len(pending) == 0 {
		return
	}
	mu.Lock()
	left, ok := pending[point]
	if ok {
		left--
		pending[point] = left
	}
	mu.Unlock()
	if ok && left == 0 {
		fmt.Fprintf(os.Stderr, "fault point %s reached (%s): exiting with status %d\n", point, EnvVar, ExitCode)
		exit(ExitCode)
	}
}

// parse reads EDDY_FAULT's value: each "<point>[:<n>]" maps point to n.
func parse(v string) map[string]int {
	out := map[string]int{}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, count, hasCount := strings.Cut(entry, ":")
		n := 1
		if hasCount {
			var err error
			if n, err = strconv.Atoi(count); err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "%s: ignoring %q: the count must be a whole number ≥ 1\n", EnvVar, entry)
				continue
			}
		}
		out[name] = n
	}
	return out
}

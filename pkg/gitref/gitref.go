// Package gitref resolves what of a Git remote to check out for a
// GitRepository's spec.ref (or an ImageUpdateAutomation's
// git.checkout.ref). source-controller, which fetches the repository, and
// image-automation-controller, which commits on it, resolve refs so, and
// thus check out the same tag for the same spec.ref.semver.
package gitref

import (
	"errors"
	"fmt"
	"sort"

	"github.com/Masterminds/semver/v3"
)

// ErrNoSemverMatch is wrapped by HighestSemverTag's error when no tag
// satisfies the constraint; the message is Flux's
// (`no match found for semver: <constraint>`).
var ErrNoSemverMatch = errors.New("no match found for semver")

// ConstraintError is a spec.ref.semver that is not a Masterminds semver v3
// constraint: only a spec change helps. The message is Flux's
// (`semver parse error: <cause>`).
type ConstraintError struct{ Err error }

func (e *ConstraintError) Error() string { return "semver parse error: " + e.Err.Error() }

func (e *ConstraintError) Unwrap() error { return e.Err }

// HighestSemverTag returns, among tags (short names, `v1.2.3` rather than
// `refs/tags/v1.2.3`), the one of the highest version satisfying
// constraint (Masterminds semver v3, as Flux: a `v` prefix is allowed;
// tags that are not versions are skipped). Of tags of equal versions
// (`v1.2.3` and `1.2.3`, or versions differing only in build metadata)
// the greatest name wins: Flux orders them by their commits' time, which
// would need a fetch. Errors: *ConstraintError, or ErrNoSemverMatch
// wrapped with the constraint.
func HighestSemverTag(constraint string, tags []string) (string, error) {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return "", &ConstraintError{Err: err}
	}
	sorted := append([]string(nil), tags...)
	sort.Strings(sorted)
	var best *semver.Version
	var bestTag string
	for _, tag := range sorted {
		v, err := semver.NewVersion(tag)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || !v.LessThan(best) {
			best, bestTag = v, tag
		}
	}
	if best == nil {
		return "", fmt.Errorf("%w: %s", ErrNoSemverMatch, constraint)
	}
	return bestTag, nil
}

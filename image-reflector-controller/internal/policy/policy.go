// Package policy selects the latest tag of a repository as an ImagePolicy's
// spec.policy says (Flux's image-reflector-controller, contract §2.3):
// semver (Masterminds semver v3 ranges over strict SemVer tags, an
// optional leading "v"), alphabetical and numerical (asc or desc), after
// spec.filterTags (a Go regexp with `$name` expansion of extract).
package policy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Orders of the alphabetical and numerical policies (spec.policy.*.order);
// "" is Asc.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// ErrNoVersion is a policy that finds no tag to select: no tag matches the
// range (or parses), or the filtered list is empty. The message is Flux's.
var ErrNoVersion = errors.New("unable to determine latest version from provided list")

// Policer picks the latest of a list of candidate versions.
type Policer interface {
	// Latest returns the chosen item of versions, or an error.
	Latest(versions []string) (string, error)
}

// SemVer picks the highest version within a Masterminds semver v3
// constraint. Tags that are not strict SemVer (an optional leading "v"
// allowed) are skipped; pre-releases match only as Masterminds allows
// (a range with a pre-release part, e.g. ">=1.0.0-0 <2.0.0-0").
type SemVer struct {
	Range      string
	constraint *semver.Constraints
}

// NewSemVer parses the range; an invalid range is an error quoting it.
func NewSemVer(rng string) (*SemVer, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return nil, fmt.Errorf("semver range %q is invalid: %w", rng, err)
	}
	return &SemVer{Range: rng, constraint: c}, nil
}

// ParseVersion parses a strict SemVer version with an optional leading "v"
// ("1.2" and "01.0.0" are refused), as Flux's tags are parsed.
func ParseVersion(s string) (*semver.Version, error) {
	return semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
}

// Latest returns the highest version (as written) in the range; ties
// (1.0.0 and v1.0.0) keep the first.
func (p *SemVer) Latest(versions []string) (string, error) {
	var best *semver.Version
	var bestTag string
	for _, t := range versions {
		v, err := ParseVersion(t)
		if err != nil || !p.constraint.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best, bestTag = v, t
		}
	}
	if best == nil {
		return "", ErrNoVersion
	}
	return bestTag, nil
}

// checkOrder normalizes an order (case-insensitive, "" is asc).
func checkOrder(order string) (string, error) {
	switch o := strings.ToLower(order); o {
	case "", OrderAsc:
		return OrderAsc, nil
	case OrderDesc:
		return OrderDesc, nil
	}
	return "", fmt.Errorf("order %q is invalid: want %s or %s", order, OrderAsc, OrderDesc)
}

// Alphabetical picks by byte-wise string order: asc picks the last, desc
// the first.
type Alphabetical struct{ Order string }

// NewAlphabetical checks the order.
func NewAlphabetical(order string) (*Alphabetical, error) {
	o, err := checkOrder(order)
	return &Alphabetical{Order: o}, err
}

// Latest implements Policer.
func (p *Alphabetical) Latest(versions []string) (string, error) {
	if len(versions) == 0 {
		return "", ErrNoVersion
	}
	if p.Order == OrderDesc {
		return slices.Min(versions), nil
	}
	return slices.Max(versions), nil
}

// Numerical picks by value as a float: asc picks the largest, desc the
// smallest. Every candidate must parse (strconv.ParseFloat): one that does
// not fails the policy, as Flux (filter or extract the numbers first).
type Numerical struct{ Order string }

// NewNumerical checks the order.
func NewNumerical(order string) (*Numerical, error) {
	o, err := checkOrder(order)
	return &Numerical{Order: o}, err
}

// Latest implements Policer.
func (p *Numerical) Latest(versions []string) (string, error) {
	if len(versions) == 0 {
		return "", ErrNoVersion
	}
	var best string
	var bestV float64
	for i, t := range versions {
		v, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return "", fmt.Errorf("tag %q is not a number: a numerical policy needs filterTags to keep (or extract) numbers only", t)
		}
		if i == 0 || (p.Order == OrderAsc && v > bestV) || (p.Order == OrderDesc && v < bestV) {
			best, bestV = t, v
		}
	}
	return best, nil
}

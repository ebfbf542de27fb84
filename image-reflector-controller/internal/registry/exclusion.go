package registry

import (
	"fmt"
	"regexp"
)

// DefaultExclusionList is ImageRepository spec.exclusionList's default
// (Flux): cosign signature tags.
var DefaultExclusionList = []string{`^.*\.sig$`}

// MaxExclusionList is the most items spec.exclusionList takes (Flux's CRD).
const MaxExclusionList = 25

// CompileExclusions compiles an exclusion list; a pattern that is not a Go
// regular expression is an error naming it.
func CompileExclusions(patterns []string) ([]*regexp.Regexp, error) {
	res := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("exclusionList pattern %q is not a regular expression: %w", p, err)
		}
		res = append(res, re)
	}
	return res, nil
}

// Exclude returns the tags no pattern matches, in their order.
func Exclude(tags []string, exclusions []*regexp.Regexp) []string {
	kept := make([]string, 0, len(tags))
next:
	for _, t := range tags {
		for _, re := range exclusions {
			if re.MatchString(t) {
				continue next
			}
		}
		kept = append(kept, t)
	}
	return kept
}

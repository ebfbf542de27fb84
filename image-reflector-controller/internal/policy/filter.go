package policy

import (
	"fmt"
	"regexp"
)

// Filter is spec.filterTags: keep the tags Pattern matches (anywhere, Go
// regexp syntax) and, when Extract is set, compare the value
// Regexp.ExpandString gives for it (`$ts`, `${1}`) instead of the tag.
type Filter struct {
	re      *regexp.Regexp
	extract string
}

// NewFilter compiles pattern ("" keeps every tag); an invalid pattern is an
// error quoting it.
func NewFilter(pattern, extract string) (*Filter, error) {
	if pattern == "" {
		pattern = ".*"
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("filterTags.pattern %q is not a regular expression: %w", pattern, err)
	}
	return &Filter{re: re, extract: extract}, nil
}

// Apply returns the candidate values, in the tags' order, and the tag each
// came from. Two tags with the same extracted value are one candidate, the
// later tag's (as Flux, whose candidates are map keys).
func (f *Filter) Apply(tags []string) ([]string, map[string]string) {
	values := make([]string, 0, len(tags))
	from := make(map[string]string, len(tags))
	for _, t := range tags {
		m := f.re.FindStringSubmatchIndex(t)
		if m == nil {
			continue
		}
		v := t
		if f.extract != "" {
			v = string(f.re.ExpandString(nil, f.extract, t, m))
		}
		if _, seen := from[v]; !seen {
			values = append(values, v)
		}
		from[v] = t
	}
	return values, from
}

// Select filters tags (f may be nil: every tag) and returns the tag whose
// candidate p picks.
func Select(p Policer, f *Filter, tags []string) (string, error) {
	if f == nil {
		f, _ = NewFilter("", "")
	}
	values, from := f.Apply(tags)
	v, err := p.Latest(values)
	if err != nil {
		return "", err
	}
	return from[v], nil
}

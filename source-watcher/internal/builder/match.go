package builder

import (
	"io/fs"
	"path"
	"strings"
)

// match reports whether name matches pattern, both slash-separated:
// path.Match per segment, and a "**" segment matches any number of
// segments (none included).
func match(pattern, name string) bool {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

// matchSegments matches with "**" backtracking remembered: each ("**"
// segment, name position) pair is tried once, so a pattern of many "**"
// costs O(len(pat)·len(name)²) path.Match calls, not exponential time.
func matchSegments(pat, name []string) bool {
	var failed map[[2]int]bool
	var m func(i, j int) bool
	m = func(i, j int) bool {
		for i < len(pat) {
			if pat[i] == "**" {
				for i+1 < len(pat) && pat[i+1] == "**" {
					i++
				}
				if i == len(pat)-1 {
					return true
				}
				key := [2]int{i, j}
				if failed[key] {
					return false
				}
				for n := j; n <= len(name); n++ {
					if m(i+1, n) {
						return true
					}
				}
				if failed == nil {
					failed = map[[2]int]bool{}
				}
				failed[key] = true
				return false
			}
			if j == len(name) {
				return false
			}
			if ok, err := path.Match(pat[i], name[j]); err != nil || !ok {
				return false
			}
			i, j = i+1, j+1
		}
		return j == len(name)
	}
	return m(0, 0)
}

// globRecursive returns the paths of fsys (files and directories, in
// lexical order) that match pattern with "**" spanning directories.
func globRecursive(fsys fs.FS, pattern string) ([]string, error) {
	if _, err := path.Match(strings.ReplaceAll(pattern, "**", "*"), ""); err != nil {
		return nil, err
	}
	root := selectionRoot(pattern)
	var out []string
	err := fs.WalkDir(fsys, root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return fs.SkipAll // a missing root matches nothing
			}
			return err
		}
		if match(pattern, p) {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// excluded reports whether the source path p matches an exclude pattern,
// relative to the source root or to base (the operation's selection
// root); a pattern without "/" also matches the file name at any depth.
func excluded(p, base string, patterns []string) bool {
	if len(patterns) == 0 {
		return false
	}
	names := []string{p}
	if base != "." && base != "" {
		if rel, ok := strings.CutPrefix(p, base+"/"); ok {
			names = append(names, rel)
		}
	}
	for _, pat := range patterns {
		for _, n := range names {
			if match(pat, n) {
				return true
			}
		}
		if !strings.Contains(pat, "/") && match(pat, path.Base(p)) {
			return true
		}
	}
	return false
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the checkout holding this module (cli/ is one level down).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Skipf("not in the Eddy checkout: %v", err)
	}
	return root
}

// markdownFiles are README.md and every page under docs/, as paths
// relative to root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestREADMEFitsOnAScreenOf150Lines(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 150 {
		t.Errorf("README.md has %d lines; at most 150 (move reference material to docs/)", n)
	}
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	fence     = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// other than '-' and '_' dropped, spaces turned into '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		out[anchor(strings.ReplaceAll(m[1], "`", ""))] = true
	}
	return out
}

func TestDocsRelativeLinksResolveToFilesAndHeadings(t *testing.T) {
	root := repoRoot(t)
	for _, f := range markdownFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text := fence.ReplaceAllString(string(b), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, frag, _ := strings.Cut(link, "#")
			path := filepath.Join(root, f)
			if target != "" {
				path = filepath.Join(filepath.Dir(path), target)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: no such file", f, link)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			page, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(page))[frag] {
				t.Errorf("%s: link %q: no heading with that anchor", f, link)
			}
		}
	}
}

// archPath is a path docs/architecture.md names in backquotes: a module's
// folder or file, or a controller's internal package or Go file.
var archPath = regexp.MustCompile("`((?:api|pkg|cli|config|tools|examples|[a-z]+-controller)/[A-Za-z0-9_./-]*|internal/[a-z/]+|[a-z0-9_]+\\.go)`")

// TestArchitecturePackagesExist checks that every package, folder and Go
// file docs/architecture.md names is in the tree, so the page cannot go on
// describing a renamed or removed package. A path from a module root must
// exist as written; an `internal/...` package under some module; a bare
// file name somewhere in the tree.
func TestArchitecturePackagesExist(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	goFiles := map[string]bool{}
	internal := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == ".git" || name == "bin" || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if i := strings.Index(rel+"/", "/internal/"); i >= 0 {
				internal[rel[i+1:]] = true
			}
		} else if strings.HasSuffix(name, ".go") {
			goFiles[name] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range archPath.FindAllStringSubmatch(string(b), -1) {
		p := strings.TrimSuffix(m[1], "/")
		if seen[p] || strings.HasSuffix(p, "...") {
			continue
		}
		seen[p] = true
		switch {
		case strings.HasPrefix(p, "internal/"):
			if !internal[p] {
				t.Errorf("docs/architecture.md names %s, which no module has", m[1])
			}
		case strings.HasSuffix(p, ".go") && !strings.Contains(p, "/"):
			if !goFiles[p] {
				t.Errorf("docs/architecture.md names %s, which is no Go file of the tree", m[1])
			}
		default:
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("docs/architecture.md names %s, which does not exist", m[1])
			}
		}
	}
	if len(seen) < 50 {
		t.Errorf("found only %d paths in docs/architecture.md: the pattern no longer matches how it names them", len(seen))
	}
}

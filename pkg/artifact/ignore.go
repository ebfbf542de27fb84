package artifact

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// IgnoreFile is the name of the per-directory ignore files of a source,
// in .gitignore syntax. Flux compatible.
const IgnoreFile = ".sourceignore"

// VCSPatterns are always excluded from an artifact. Flux compatible.
var VCSPatterns = []string{".git/", ".gitignore", ".gitmodules", ".gitattributes"}

// DefaultPatterns are excluded only when the source has no user pattern at
// all: no .sourceignore file anywhere and no spec.ignore. Flux compatible
// (fluxcd/pkg sourceignore defaults).
var DefaultPatterns = []string{
	"*.jpg", "*.jpeg", "*.gif", "*.png", "*.wmv", "*.flv", "*.tar.gz", "*.zip",
	".github/", ".circleci/", ".travis.yml", ".gitlab-ci.yml", "appveyor.yml", ".drone.yml",
	"cloudbuild.yaml", "codeship-services.yml", "codeship-steps.yml",
	"**/.goreleaser.yml", "**/.sops.yaml", "**/.flux.yaml",
}

// Ignore decides which paths of a source tree stay out of its artifact.
type Ignore struct {
	matcher gitignore.Matcher
}

// LoadIgnore reads the ignore rules of the tree at root: the VCS patterns,
// every .sourceignore file (each scoped to its own directory, found at any
// depth outside .git), then the patterns of spec (spec.ignore, may be nil),
// which take precedence. When neither .sourceignore files nor spec patterns
// exist, DefaultPatterns apply.
func LoadIgnore(root string, spec *string) (*Ignore, error) {
	user, err := userPatterns(root, spec)
	if err != nil {
		return nil, err
	}
	patterns := parsePatterns([]byte(strings.Join(VCSPatterns, "\n")), nil)
	if len(user) == 0 {
		patterns = append(patterns, parsePatterns([]byte(strings.Join(DefaultPatterns, "\n")), nil)...)
	}
	return &Ignore{matcher: gitignore.NewMatcher(append(patterns, user...))}, nil
}

// LoadSourceIgnore reads only the user's ignore rules of the tree at root:
// every .sourceignore file, then spec; no VCS or default patterns. Flux
// compatible: an OCIRepository's extracted layer is filtered this way
// (its artifact was filtered when it was built).
func LoadSourceIgnore(root string, spec *string) (*Ignore, error) {
	user, err := userPatterns(root, spec)
	if err != nil {
		return nil, err
	}
	return &Ignore{matcher: gitignore.NewMatcher(user)}, nil
}

// LoadGitIgnore reads the rules by which Git leaves files of the work tree
// at root untracked: every .gitignore (each scoped to its directory) and
// .git/info/exclude. A clone never holds such files, so a source read from
// a work tree must leave them out too (build outputs, vendored modules).
func LoadGitIgnore(root string) (*Ignore, error) {
	patterns, err := scopedPatterns(root, ".gitignore")
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return nil, err
	}
	// Git compatible: info/exclude ranks below every .gitignore.
	patterns = append(parsePatterns(data, nil), patterns...)
	return &Ignore{matcher: gitignore.NewMatcher(patterns)}, nil
}

// userPatterns are the patterns of the .sourceignore files under root
// (each scoped to its directory) followed by those of spec.
func userPatterns(root string, spec *string) ([]gitignore.Pattern, error) {
	user, err := scopedPatterns(root, IgnoreFile)
	if err != nil {
		return nil, err
	}
	if spec != nil {
		user = append(user, parsePatterns([]byte(*spec), nil)...)
	}
	return user, nil
}

// scopedPatterns are the patterns of the files named name under root
// (outside .git), each scoped to its own directory.
func scopedPatterns(root, name string) ([]gitignore.Pattern, error) {
	var user []gitignore.Pattern
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != name || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		user = append(user, parsePatterns(data, splitPath(rel))...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return user, nil
}

// NewIgnore returns the rules of patterns alone (.gitignore syntax, one
// pattern an element; blank elements and # comments skipped), relative to
// the tree's root: no VCS or default patterns, no .sourceignore file. It is
// how `flux build|push artifact` read --ignore-paths.
func NewIgnore(patterns []string) *Ignore {
	return &Ignore{matcher: gitignore.NewMatcher(parsePatterns([]byte(strings.Join(patterns, "\n")), nil))}
}

// Match reports whether rel, a slash- or OS-separated path relative to the
// tree's root, is excluded.
func (i *Ignore) Match(rel string, isDir bool) bool {
	return i.matcher.Match(splitPath(rel), isDir)
}

// parsePatterns reads one pattern a line. Lines are split by hand, not
// with a bufio.Scanner, whose 64 KiB line limit would silently drop every
// pattern after a longer line.
func parsePatterns(data []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

func splitPath(rel string) []string {
	rel = filepath.ToSlash(rel)
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// Package builder composes the files of an ArtifactGenerator's output
// artifact from its sources' extracted trees, by the copy operations of
// spec.artifacts[].copy, with the cp-like semantics Flux's source-watcher
// documents (docs/spec/v1beta1/artifactgenerators.md).
package builder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
)

// Compose applies ops in order to the directory dir (the artifact's root,
// which must exist), reading from sources (alias → extracted tree). Every
// read and write goes through an os.Root, so a "to" or "from" with ".."
// cannot leave its tree. It stops at the first failing operation.
func Compose(ctx context.Context, ops []swv1.CopyOperation, sources map[string]string, dir string) error {
	dst, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer dst.Close()
	for _, op := range ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := apply(ctx, op, sources, dst); err != nil {
			return fmt.Errorf("copy from '%s' to '%s': %w", op.From, op.To, err)
		}
	}
	return nil
}

// copyJob is one operation, parsed.
type copyJob struct {
	op      swv1.CopyOperation
	alias   string
	pattern string // path or glob in the source, slash-separated
	dest    string // path in the artifact; "" is its root
	intoDir bool   // "to" ends with "/"
	src     *os.Root
	dst     *os.Root
}

func apply(ctx context.Context, op swv1.CopyOperation, sources map[string]string, dst *os.Root) error {
	j, err := parse(op)
	if err != nil {
		return err
	}
	srcDir, ok := sources[j.alias]
	if !ok {
		return fmt.Errorf("source alias '%s' not found", j.alias)
	}
	for _, p := range op.Exclude {
		if _, err := path.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil {
			return fmt.Errorf("invalid exclude pattern '%s'", p)
		}
	}
	if j.src, err = os.OpenRoot(srcDir); err != nil {
		return err
	}
	defer j.src.Close()
	j.dst = dst
	if !hasGlob(j.pattern) {
		return j.copyPath(ctx)
	}
	return j.copyGlob(ctx)
}

func parse(op swv1.CopyOperation) (*copyJob, error) {
	from, ok := strings.CutPrefix(op.From, "@")
	alias, pattern, found := strings.Cut(from, "/")
	if !ok || !found || alias == "" {
		return nil, fmt.Errorf("source must have the form '@alias/pattern'")
	}
	dest, ok := strings.CutPrefix(op.To, "@artifact/")
	if !ok {
		return nil, fmt.Errorf("destination must start with '@artifact/'")
	}
	j := &copyJob{op: op, alias: alias, pattern: pattern, intoDir: strings.HasSuffix(op.To, "/")}
	if j.dest = path.Clean(dest); j.dest == "." {
		j.dest = ""
	}
	return j, nil
}

func hasGlob(p string) bool { return strings.ContainsAny(p, "*?[]") }

// copyPath copies a file or directory named without a glob, as cp does:
// a directory becomes a subdirectory of the destination (its contents when
// it is the source root, "@alias/"); a file goes to the destination, or
// into it when "to" ends with "/" or names a directory already there.
func (j *copyJob) copyPath(ctx context.Context) error {
	src := path.Clean(j.pattern)
	if src == "" {
		src = "."
	}
	info, err := j.src.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("source '%s' does not exist", src)
	}
	if err != nil {
		return err
	}
	if info.IsDir() {
		if j.op.Strategy == swv1.ExtractStrategy {
			return fmt.Errorf("the Extract strategy takes tarballs, '%s' is a directory", src)
		}
		dest := path.Join(j.dest, path.Base(src))
		if src == "." {
			dest = j.dest
		}
		return j.copyTree(ctx, src, dest, src)
	}
	if excluded(src, ".", j.op.Exclude) {
		return nil
	}
	if j.op.Strategy == swv1.ExtractStrategy {
		if !isTarball(src) {
			return fmt.Errorf("the Extract strategy takes .tar.gz or .tgz files, got '%s'", src)
		}
		return j.extract(src)
	}
	dest := j.dest
	if j.intoDir {
		dest = path.Join(dest, path.Base(src))
	} else if fi, err := j.dst.Stat(orDot(dest)); err == nil && fi.IsDir() {
		dest = path.Join(dest, path.Base(src))
	}
	return j.copyFile(src, dest, j.op.Strategy == swv1.MergeStrategy)
}

// copyGlob copies each match of a glob. Without Extract the glob is Go's
// path.Match per segment ("**" is "*"), as Flux's; a match that is a
// directory is copied whole. "dir/**" drops the "dir/" prefix of the
// matches. With Extract "**" spans directories and only tarballs count.
func (j *copyJob) copyGlob(ctx context.Context) error {
	var matches []string
	var err error
	if j.op.Strategy == swv1.ExtractStrategy {
		matches, err = globRecursive(j.src.FS(), j.pattern)
	} else {
		matches, err = fs.Glob(j.src.FS(), j.pattern)
	}
	if err != nil {
		return fmt.Errorf("invalid glob pattern '%s': %w", j.pattern, err)
	}
	if len(matches) == 0 {
		return fmt.Errorf("no files match pattern '%s' in source '%s'", j.pattern, j.alias)
	}
	base := selectionRoot(j.pattern)
	kept := matches[:0]
	for _, m := range matches {
		if m != "." && !excluded(m, base, j.op.Exclude) {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("all files matching pattern '%s' in source '%s' were excluded", j.pattern, j.alias)
	}
	prefix, strip := strings.CutSuffix(j.pattern, "/**")
	for _, m := range kept {
		if err := ctx.Err(); err != nil {
			return err
		}
		if j.op.Strategy == swv1.ExtractStrategy {
			if isTarball(m) {
				if err := j.extract(m); err != nil {
					return err
				}
			}
			continue
		}
		dest := path.Join(j.dest, m)
		if rel, ok := strings.CutPrefix(m, prefix+"/"); strip && ok {
			dest = path.Join(j.dest, rel)
		}
		info, err := j.src.Stat(m)
		if err != nil {
			return err
		}
		if info.IsDir() {
			err = j.copyTree(ctx, m, dest, base)
		} else {
			err = j.copyFile(m, dest, j.op.Strategy == swv1.MergeStrategy)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the directory src of the source to dest, leaving out
// what the excludes match (relative to the source root or to base).
func (j *copyJob) copyTree(ctx context.Context, src, dest, base string) error {
	return fs.WalkDir(j.src.FS(), src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, src), "/")
		if src == "." && p != "." {
			rel = p
		}
		target := path.Join(dest, rel)
		if p != src && excluded(p, base, j.op.Exclude) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return mkdirAll(j.dst, target)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return j.copyFile(p, target, false)
	})
}

// copyFile copies the source file src to dest, or with merge deep-merges
// its YAML into dest when dest exists.
func (j *copyJob) copyFile(src, dest string, merge bool) error {
	if dest == "" {
		return fmt.Errorf("cannot copy file '%s' over the artifact root", src)
	}
	if merge {
		if fi, err := j.dst.Stat(dest); err == nil && !fi.IsDir() {
			return mergeFile(j.src, src, j.dst, dest)
		}
	}
	if err := mkdirAll(j.dst, path.Dir(dest)); err != nil {
		return err
	}
	in, err := j.src.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := j.dst.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func mkdirAll(r *os.Root, dir string) error {
	if dir == "" || dir == "." {
		return nil
	}
	return r.MkdirAll(dir, 0o755)
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// selectionRoot is the part of a pattern before its first glob segment.
func selectionRoot(pattern string) string {
	var keep []string
	for _, s := range strings.Split(path.Clean(pattern), "/") {
		if hasGlob(s) {
			break
		}
		keep = append(keep, s)
	}
	if len(keep) == 0 {
		return "."
	}
	return path.Join(keep...)
}

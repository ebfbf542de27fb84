package dev

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/gitsync"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names of the objects `eddy dev up` creates, as `flux bootstrap` names them.
const (
	Namespace = "flux-system"
	SyncName  = "flux-system"
)

// Source is the repository the dev environment syncs from.
type Source struct {
	// URL is the GitRepository's spec.url.
	URL string
	// Branch is spec.ref.branch; Path the Kustomization's spec.path (./x).
	Branch, Path string
	// WorkTree is the local work tree whose commits are served; empty for a
	// remote URL.
	WorkTree string
	// Snapshot is true when WorkTree is a copy of a plain directory.
	Snapshot bool
	// Bare is true when WorkTree is a bare repository: it gets pushes, not
	// commits, and has no work tree for a post-commit hook.
	Bare bool
	// Name is the repository's path on the Git server.
	Name string
	// TargetNamespace is the Kustomization's spec.targetNamespace: the
	// namespace of objects that name none.
	TargetNamespace string
}

// SetServer sets URL for a served local repository from the Git server's
// base URL; a remote URL is left alone.
func (s *Source) SetServer(gitURL string) {
	if s.WorkTree != "" {
		s.URL = strings.TrimRight(gitURL, "/") + "/" + s.Name
	}
}

// IsURL reports whether repo names a remote repository rather than a directory.
func IsURL(repo string) bool {
	for _, p := range []string{"http://", "https://", "ssh://", "git@"} {
		if strings.HasPrefix(repo, p) {
			return true
		}
	}
	return false
}

// NormalizePath returns p as Flux writes Kustomization paths: "./x/y".
func NormalizePath(p string) string {
	c := path.Clean("/" + filepath.ToSlash(p))
	if c == "/" {
		return "./"
	}
	return "." + c
}

// PrepareSource checks repo, path and branch and makes a local repository
// servable below <stateDir>/git: a Git work tree (its top level) or a bare
// repository is served as it is, through a symlink, so new commits (or
// pushes) in it are picked up; any other directory is copied into a
// repository there and committed (a snapshot, refreshed on each call). Call
// SetServer to set the URL. Errors are one line and say what to fix.
func PrepareSource(stateDir, repo, p, branch string) (*Source, error) {
	src := &Source{Path: NormalizePath(p), Branch: branch}
	if IsURL(repo) {
		src.URL = repo
		if src.Branch == "" {
			src.Branch = "main"
		}
		return src, nil
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("--repo %s: no such directory", repo)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("--repo %s: not a directory", repo)
	}
	root := filepath.Join(stateDir, "git")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(abs))
	name := filepath.Base(abs) + "-" + hex.EncodeToString(sum[:4])
	served := filepath.Join(root, name)

	kind, err := repoKind(abs)
	if err != nil {
		return nil, fmt.Errorf("--repo %s: %v", repo, err)
	}
	switch kind {
	case gitDir:
		return nil, fmt.Errorf("--repo %s is the .git directory of a work tree: pass the work tree %s", repo, filepath.Dir(abs))
	case workTree, bareRepo:
		if err := serveLink(served, abs); err != nil {
			return nil, err
		}
		src.WorkTree, src.Bare = abs, kind == bareRepo
		if src.Branch == "" {
			b, err := gitserver.Git(abs, "symbolic-ref", "--short", "HEAD")
			if err != nil {
				return nil, fmt.Errorf("--repo %s is on a detached HEAD: pass --branch", repo)
			}
			src.Branch = b
		}
	default:
		if err := snapshot(abs, served); err != nil {
			return nil, fmt.Errorf("copying %s into a Git repository: %w", repo, err)
		}
		src.WorkTree, src.Snapshot = served, true
		if src.Branch == "" {
			src.Branch = "main"
		}
	}
	if _, err := gitserver.Git(src.WorkTree, "rev-parse", "--verify", "-q", "refs/heads/"+src.Branch); err != nil {
		if branch == "" {
			if src.Bare {
				return nil, fmt.Errorf("--repo %s: branch %s has no commit yet: push to it, or pass --branch", repo, src.Branch)
			}
			return nil, fmt.Errorf("--repo %s: branch %s has no commit yet: commit, or pass --branch", repo, src.Branch)
		}
		return nil, fmt.Errorf("--branch %s: no such branch in %s", src.Branch, repo)
	}
	if rel := strings.TrimPrefix(src.Path, "./"); rel != "" {
		if _, err := gitserver.Git(src.WorkTree, "cat-file", "-e", src.Branch+":"+rel); err != nil {
			return nil, fmt.Errorf("--path %s: no such directory in %s at branch %s (committed files only)", src.Path, repo, src.Branch)
		}
	}
	src.Name = name
	return src, nil
}

// Kinds of a local --repo directory.
const (
	plainDir = iota // not the top of a Git repository: snapshotted
	workTree        // the top level of a Git work tree
	bareRepo        // a bare repository
	gitDir          // the .git directory of a work tree
)

// repoKind tells what the directory abs is to Git.
func repoKind(abs string) (int, error) {
	if top, err := gitserver.Git(abs, "rev-parse", "--show-toplevel"); err == nil && top != "" {
		if sameDir(top, abs) {
			return workTree, nil
		}
		return plainDir, nil
	}
	gd, err := gitserver.Git(abs, "rev-parse", "--absolute-git-dir")
	if err != nil || !sameDir(gd, abs) {
		return plainDir, nil // not in a repository, or a directory inside a Git directory
	}
	bare, err := gitserver.Git(abs, "rev-parse", "--is-bare-repository")
	if err != nil {
		return 0, err
	}
	if bare == "true" {
		return bareRepo, nil
	}
	return gitDir, nil
}

// serveLink makes served (an entry of eddy's own git/ directory) a symlink
// to dir, replacing whatever was there: a previous symlink, or the snapshot
// directory of a plain directory that has since become a repository. It
// never follows a symlink, so nothing outside the state directory is removed.
func serveLink(served, dir string) error {
	if fi, err := os.Lstat(served); err == nil {
		if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
			err = os.Remove(served)
		} else {
			err = os.RemoveAll(served)
		}
		if err != nil {
			return fmt.Errorf("replacing %s: %w", served, err)
		}
	}
	return os.Symlink(dir, served)
}

// RemoveServed removes every entry of <stateDir>/git: symlinks to served
// repositories (never what they point to) and snapshots of plain directories.
func RemoveServed(stateDir string) error {
	root := filepath.Join(stateDir, "git")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var first error
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		if e.Type()&fs.ModeSymlink != 0 || !e.IsDir() {
			err = os.Remove(p)
		} else {
			err = os.RemoveAll(p)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sameDir reports whether a and b name the same existing file or directory
// (relative or absolute, through links).
func sameDir(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// snapshot makes dst a Git repository on branch main whose last commit holds
// exactly the files of src (a .git inside src is skipped).
func snapshot(src, dst string) error {
	// A destination inside the source would be copied into itself, again
	// and again, until a path is too long (and the disk maybe full).
	if inside(src, dst) {
		return fmt.Errorf("it holds eddy dev's state directory (%s): pass a directory that does not", filepath.Dir(filepath.Dir(dst)))
	}
	if fi, err := os.Lstat(dst); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if err := os.Remove(dst); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dst, ".git")); err != nil {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if _, err := gitserver.Git(dst, "init", "-q", "--initial-branch=main"); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := copyTree(src, dst); err != nil {
		return err
	}
	if _, err := gitserver.Git(dst, "add", "-A"); err != nil {
		return err
	}
	if out, _ := gitserver.Git(dst, "status", "--porcelain"); out == "" {
		if _, err := gitserver.Git(dst, "rev-parse", "-q", "--verify", "HEAD"); err == nil {
			return nil // unchanged
		}
	}
	_, err = gitserver.Git(dst, "commit", "-q", "--allow-empty", "-m", "Snapshot of "+filepath.Base(src))
	return err
}

// inside says whether path p is dir or below it.
func inside(dir, p string) bool {
	dir, err1 := filepath.Abs(dir)
	p, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncOptions are the sync pair of src as eddy dev writes it: bootstrap's
// pair (gitsync) named flux-system, without a Secret, the GitRepository
// fetching every 1m (flux bootstrap's default --interval).
func syncOptions(src *Source) gitsync.Options {
	return gitsync.Options{Name: SyncName, Namespace: Namespace, URL: src.URL, Branch: src.Branch,
		Interval: time.Minute, Path: src.Path, TargetNamespace: src.TargetNamespace}
}

// ApplySource creates or updates the flux-system Namespace and GitRepository
// for src (gitsync.SetRepository, interval 1m), and requests a reconcile so
// a changed source is fetched at once; and the Receiver HookReceiver the
// post-commit hook sends commits to.
func ApplySource(ctx context.Context, c client.Client, src *Source) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: SyncName, Namespace: Namespace}}
	if err := createOrUpdate(ctx, c, repo, func() {
		gitsync.SetRepository(repo, syncOptions(src))
		setAnnotation(repo, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
	}); err != nil {
		return fmt.Errorf("GitRepository %s/%s: %w", Namespace, SyncName, err)
	}
	return ApplyHookReceiver(ctx, c)
}

// ApplyKustomization creates or updates the flux-system Kustomization for
// src (gitsync.SetKustomization: interval 10m, prune), resumes it and
// requests a reconcile.
func ApplyKustomization(ctx context.Context, c client.Client, src *Source) error {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: SyncName, Namespace: Namespace}}
	if err := createOrUpdate(ctx, c, ks, func() {
		gitsync.SetKustomization(ks, syncOptions(src))
		ks.Spec.Suspend = false // SuspendKustomization's, while resync re-points the source
		setAnnotation(ks, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
	}); err != nil {
		return fmt.Errorf("Kustomization %s/%s: %w", Namespace, SyncName, err)
	}
	return nil
}

// SuspendKustomization suspends the flux-system Kustomization, if it exists,
// so it does not build the next repository's artifact at the previous path
// while the sync is re-pointed; ApplyKustomization resumes it.
func SuspendKustomization(ctx context.Context, c client.Client) error {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: SyncName, Namespace: Namespace}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	return createOrUpdate(ctx, c, ks, func() { ks.Spec.Suspend = true })
}

// ApplySync is ApplySource then ApplyKustomization.
func ApplySync(ctx context.Context, c client.Client, src *Source) error {
	if err := ApplySource(ctx, c, src); err != nil {
		return err
	}
	return ApplyKustomization(ctx, c, src)
}

func setAnnotation(obj client.Object, k, v string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	obj.SetAnnotations(a)
}

func createOrUpdate(ctx context.Context, c client.Client, obj client.Object, mutate func()) error {
	for range 5 {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			mutate()
			err = c.Create(ctx, obj)
		case err == nil:
			mutate()
			err = c.Update(ctx, obj)
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return errors.New("conflicting updates")
}

// IsBare reports whether dir is a bare Git repository.
func IsBare(dir string) bool {
	k, err := repoKind(dir)
	return err == nil && k == bareRepo
}

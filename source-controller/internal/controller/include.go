package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"
)

// includeIndex is the field index of GitRepositories by the names of the
// GitRepositories they include.
const includeIndex = ".spec.include.repository.name"

func indexIncludes(obj *sourcev1.GitRepository) []string {
	var names []string
	for _, inc := range obj.Spec.Include {
		names = append(names, inc.GitRepositoryRef.Name)
	}
	return names
}

// includedArtifacts gets the current artifact of each spec.include entry.
// Flux compatible: a missing object or artifact sets IncludeUnavailable with
// reason NotFound or NoArtifact, and is a wait, not a failure.
func (r *GitRepositoryReconciler) includedArtifacts(ctx context.Context, obj *sourcev1.GitRepository) ([]*meta.Artifact, *reconciler.Failure) {
	if r.includeCycle(ctx, obj) {
		e := &reconciler.Failure{Condition: sourcev1.IncludeUnavailableCondition, Reason: sourcev1.IllegalPathReason,
			Message: "spec.include forms a cycle back to this GitRepository"}
		e.Stalled = true
		return nil, e
	}
	var arts []*meta.Artifact
	for _, inc := range obj.Spec.Include {
		name := inc.GitRepositoryRef.Name
		dep := &sourcev1.GitRepository{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, dep); err != nil {
			msg := fmt.Sprintf("could not get resource for include '%s': %s", name, err)
			return nil, &reconciler.Failure{Condition: sourcev1.IncludeUnavailableCondition, Reason: sourcev1.NotFoundReason, Message: msg, Waiting: true}
		}
		// Checked before the file is looked at: the status, path included, may be forged.
		if dep.Status.Artifact != nil {
			if err := r.Signer.verify(ctx, sourcev1.GitRepositoryKind, dep, dep.Status.Artifact); err != nil {
				return nil, &reconciler.Failure{Condition: sourcev1.IncludeUnavailableCondition, Reason: sourcev1.NoArtifactReason,
					Message: fmt.Sprintf("include '%s': %s", name, err)}
			}
		}
		if dep.Status.Artifact == nil || !r.Storage.Exists(*dep.Status.Artifact) {
			return nil, &reconciler.Failure{Condition: sourcev1.IncludeUnavailableCondition, Reason: sourcev1.NoArtifactReason,
				Message: fmt.Sprintf("no artifact available for include '%s'", name), Waiting: true}
		}
		arts = append(arts, dep.Status.Artifact.DeepCopy())
	}
	return arts, nil
}

// includesChanged reports whether the included artifacts differ from those
// the current artifact was built with.
func includesChanged(cur, prev []*meta.Artifact) bool {
	if len(cur) != len(prev) {
		return true
	}
	for i := range cur {
		if prev[i] == nil || cur[i].Revision != prev[i].Revision || cur[i].Digest != prev[i].Digest {
			return true
		}
	}
	return false
}

// copyIncludes extracts each included artifact and copies its fromPath into
// the checkout at toPath (default: the included object's name), replacing
// what was there.
func (r *GitRepositoryReconciler) copyIncludes(obj *sourcev1.GitRepository, arts []*meta.Artifact, dir string) *reconciler.Failure {
	for i, inc := range obj.Spec.Include {
		to := inc.ToPath
		if to == "" {
			to = inc.GitRepositoryRef.Name
		}
		from, errFrom := cleanRel(inc.FromPath)
		to, errTo := cleanRel(to)
		if errFrom != nil || errTo != nil || to == "." {
			e := &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.IllegalPathReason,
				Message: fmt.Sprintf("include '%s': fromPath and toPath must be relative paths inside the artifact", inc.GitRepositoryRef.Name)}
			e.Stalled = true
			return e
		}
		fail := func(err error) *reconciler.Failure {
			return &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.CopyFailureReason,
				Message: fmt.Sprintf("failed to copy include '%s' to '%s': %s", inc.GitRepositoryRef.Name, to,
					strings.ReplaceAll(err.Error(), r.Storage.BasePath, ""))}
		}
		tmp, err := os.MkdirTemp("", "include-")
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(tmp)
		f, err := os.Open(r.Storage.LocalPath(*arts[i]))
		if err != nil {
			return fail(err)
		}
		err = artifact.Extract(f, tmp, artifact.DefaultLimits)
		f.Close()
		if err != nil {
			return fail(err)
		}
		src := filepath.Join(tmp, filepath.FromSlash(from))
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			return fail(fmt.Errorf("fromPath '%s' is not a directory of the included artifact", inc.FromPath))
		}
		// The checkout is untrusted: a symbolic link on the way to toPath
		// would make RemoveAll and the copy act outside it.
		if err := noSymlinks(dir, to); err != nil {
			e := fail(err)
			e.Stalled = true
			return e
		}
		dst := filepath.Join(dir, filepath.FromSlash(to))
		if err := os.RemoveAll(dst); err != nil {
			return fail(stripPath(err, dir))
		}
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			return fail(fmt.Errorf("copying files: %w", stripPath(stripPath(err, tmp), dir)))
		}
	}
	return nil
}

// cleanRel cleans a path that must stay inside its root: not absolute and
// not leaving it through "..".
func cleanRel(p string) (string, error) {
	c := path.Clean(filepath.ToSlash(p))
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q leaves its root", p)
	}
	return c, nil
}

// noSymlinks refuses a relative path whose existing components below dir
// include a symbolic link.
func noSymlinks(dir, rel string) error {
	cur := dir
	for _, part := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("toPath '%s' passes through a symbolic link of the repository", rel)
		}
	}
	return nil
}

// includeCycle reports whether following spec.include from obj leads back to it.
func (r *GitRepositoryReconciler) includeCycle(ctx context.Context, obj *sourcev1.GitRepository) bool {
	seen := map[string]bool{}
	queue := indexIncludes(obj)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if name == obj.Name {
			return true
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		dep := &sourcev1.GitRepository{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, dep); err == nil {
			queue = append(queue, indexIncludes(dep)...)
		}
	}
	return false
}

// stripPath removes dir from a path error, so messages stay stable.
func stripPath(err error, dir string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, strings.TrimPrefix(pe.Path, dir+"/"), pe.Err)
	}
	return err
}

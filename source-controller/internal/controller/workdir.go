package controller

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// WorkDirName is the directory under --storage-path that holds
// source-controller's temporary work (clones, downloads, chart packaging):
// the binary points TMPDIR at it, so a crash leaves nothing anywhere else,
// and empties it at start. The file server does not serve it.
const WorkDirName = ".work"

// PrepareWorkDir readies the storage tree at storagePath for a starting
// source-controller, the only process using it: it empties (or creates)
// <storagePath>/.work, which it returns, and deletes the temporary files of
// artifact writes a crash interrupted (dot-files holding ".tmp-"). It
// returns the storage-relative, slash-separated paths it removed, so the
// caller can log them. Errors are the file system's.
func PrepareWorkDir(storagePath string) (dir string, removed []string, err error) {
	dir = filepath.Join(storagePath, WorkDirName)
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", nil, err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return "", removed, err
		}
		removed = append(removed, WorkDirName+"/"+e.Name())
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", removed, err
	}
	err = filepath.WalkDir(storagePath, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == dir {
			return filepath.SkipDir
		}
		if name := d.Name(); !d.IsDir() && strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			rel, _ := filepath.Rel(storagePath, path)
			removed = append(removed, filepath.ToSlash(rel))
		}
		return nil
	})
	return dir, removed, err
}

// hideDotPaths is artifact.HideDotPaths.
func hideDotPaths(h http.Handler) http.Handler { return artifact.HideDotPaths(h) }

// orphanCollector removes, once source-controller leads, the storage
// directories of objects that no longer exist (`<kind>/<namespace>/<name>`,
// see artifact.ObjectDir): objects deleted while no source-controller ran,
// or whose finalizer was removed by hand. Only a directory nothing in was
// modified since before the process started is removed, so that an object
// created meanwhile keeps its new artifact.
type orphanCollector struct {
	reader  client.Reader
	storage string
	started time.Time
	log     logr.Logger
}

// NeedLeaderElection makes the collector run on the leader only, which
// owns the storage.
func (o *orphanCollector) NeedLeaderElection() bool { return true }

var _ manager.LeaderElectionRunnable = &orphanCollector{}

// Start runs one collection and returns; an error is logged, not returned,
// so that it never stops the manager.
func (o *orphanCollector) Start(ctx context.Context) error {
	kinds := map[string]func() client.Object{
		"gitrepository":  func() client.Object { return &sourcev1.GitRepository{} },
		"helmrepository": func() client.Object { return &sourcev1.HelmRepository{} },
		"helmchart":      func() client.Object { return &sourcev1.HelmChart{} },
		"ocirepository":  func() client.Object { return &sourcev1.OCIRepository{} },
		"bucket":         func() client.Object { return &sourcev1.Bucket{} },
	}
	for kind, newObj := range kinds {
		namespaces, _ := os.ReadDir(filepath.Join(o.storage, kind))
		for _, ns := range namespaces {
			names, _ := os.ReadDir(filepath.Join(o.storage, kind, ns.Name()))
			for _, name := range names {
				dir := filepath.Join(o.storage, kind, ns.Name(), name.Name())
				if !name.IsDir() || !o.untouched(dir) {
					continue
				}
				err := o.reader.Get(ctx, client.ObjectKey{Namespace: ns.Name(), Name: name.Name()}, newObj())
				if !apierrors.IsNotFound(err) {
					continue
				}
				if err := os.RemoveAll(dir); err != nil {
					o.log.Error(err, "removing the artifacts of a deleted object", "path", kind+"/"+ns.Name()+"/"+name.Name())
					continue
				}
				o.log.Info("removed the artifacts of a deleted object", "path", kind+"/"+ns.Name()+"/"+name.Name())
			}
			// Gone when the last object directory in it went.
			_ = os.Remove(filepath.Join(o.storage, kind, ns.Name()))
		}
	}
	return nil
}

// untouched tells whether nothing in dir was modified since the process
// started.
func (o *orphanCollector) untouched(dir string) bool {
	newer := errors.New("newer")
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.ModTime().Before(o.started) {
			return newer
		}
		return nil
	})
	return err == nil
}

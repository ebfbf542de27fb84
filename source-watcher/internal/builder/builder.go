package builder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/fluxcd/pkg/apis/meta"
)

// Build is Stage then Store.
func Build(ctx context.Context, storage *artifact.Storage, namespace string, oa swv1.OutputArtifact,
	sources map[string]string, work string) (*meta.Artifact, error) {
	dir, err := Stage(ctx, oa, sources, work)
	if err != nil {
		return nil, err
	}
	return Store(storage, namespace, oa.Name, dir, work)
}

// Stage composes the files of the output artifact oa from sources (alias →
// extracted tree) in a new directory under work and returns it. Nothing is
// stored: a reconcile stages every artifact before storing any, so one
// failing artifact leaves the storage as it was.
func Stage(ctx context.Context, oa swv1.OutputArtifact, sources map[string]string, work string) (string, error) {
	stage, err := os.MkdirTemp(work, "artifact-")
	if err != nil {
		return "", err
	}
	return stage, Compose(ctx, oa.Copy, sources, stage)
}

// Store archives the staged tree dir and stores it as the artifact of the
// ExternalArtifact namespace/name:
// `externalartifact/<namespace>/<name>/<sha256 hex>.tar.gz`, written to a
// temporary file and renamed (pkg/artifact), so a reader never sees a
// partial file. The revision is "latest@sha256:<hex>" of the archive's
// bytes, Flux's.
func Store(storage *artifact.Storage, namespace, name, dir, work string) (*meta.Artifact, error) {
	tmp, err := os.CreateTemp(work, "archive-*.tar.gz")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	if err := artifact.WriteArchive(io.MultiWriter(tmp, h), dir, nil); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	a, err := storage.Copy(artifact.ObjectDir(sourcev1.ExternalArtifactKind, namespace, name), sum+".tar.gz", "latest@sha256:"+sum, tmp)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return a, nil
}

// MkdirWork returns a new absolute work directory under parent ("" for
// the system's).
func MkdirWork(parent string) (string, error) {
	d, err := os.MkdirTemp(parent, "ag-")
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(d)
}

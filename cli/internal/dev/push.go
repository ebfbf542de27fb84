package dev

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pushConfig is the Git configuration eddy dev's server gives `git
// http-backend` (through its environment, never the user's config files)
// when it takes pushes: receive-pack without a REMOTE_USER, and a push to
// the checked-out branch of a work tree updates its files, or is refused
// with Git's own message when they have changes not committed.
var pushConfig = []string{"http.receivepack=true", "receive.denyCurrentBranch=updateInstead"}

// gitServerOptions returns the options of the environment's Git server on
// addr ("" for a free loopback port). It takes pushes only when the
// repository uses image automation (image-automation-controller is among
// the optional components): the server has no authentication, so a
// repository nothing pushes to stays read-only. Each push it takes asks
// for a reconcile of the synced GitRepository (requestPull).
func (e *Env) gitServerOptions(addr string) gitserver.Options {
	o := gitserver.Options{Root: filepath.Join(e.Opts.StateDir, "git"), Addr: addr}
	if slices.Contains(e.Opts.OptionalComponents, install.ImageAutomationController) {
		o.Config, o.OnPush = pushConfig, e.requestPull
	}
	return o
}

// requestPull asks source-controller to fetch the synced GitRepository
// at once (the reconcile.fluxcd.io/requestedAt annotation, as `eddy
// reconcile source git` does) when path, a repository below the server's
// root, is the one synced: a pushed commit is applied without waiting for
// the 1m interval. Failures are left to that interval.
func (e *Env) requestPull(path string) {
	src := readSync(e.Opts.StateDir)
	if src == nil || e.Client == nil || !strings.HasSuffix(src.URL, "/"+path) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	repo := &sourcev1.GitRepository{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: SyncName}, repo); err != nil {
		return
	}
	patch := client.MergeFrom(repo.DeepCopy())
	setAnnotation(repo, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
	_ = e.Client.Patch(ctx, repo, patch)
}

// printPushes says, when the environment s takes pushes (gitServerOptions)
// into the local repository src, where they go.
func printPushes(w io.Writer, s *State, src *Source) {
	if src == nil || src.WorkTree == "" || !slices.Contains(s.OptionalComponents, install.ImageAutomationController) {
		return
	}
	fmt.Fprintf(w, "Pushes to %s (image-automation-controller's commits) are taken into %s and fetched at once; "+
		"changes not committed there refuse them.\n", src.URL, src.WorkTree)
}

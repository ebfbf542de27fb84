package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/app"
	"github.com/eddyops/eddy/cli/internal/ui"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// warnNotReconciled prints app.NotReconciledMessage as a warning on
// stderr when a was never reconciled, so that get's and history's blank
// status is explained and their stdout stays parseable.
func warnNotReconciled(stderr *ui.UI, a *argov1.Application) {
	if app.NeverReconciled(a) {
		stderr.Warning("%s", app.NotReconciledMessage(a))
	}
}

// firstReconcile returns a once application-controller has reconciled
// it: at once when it has, else after reading it every appPollInterval
// for at most app.FirstReconcileWait; app.NotReconciledError when no
// status came by then, so that sync and wait do not wait their whole
// --timeout for a controller that will never answer.
func (s *appSession) firstReconcile(a *argov1.Application) (*argov1.Application, error) {
	if !app.NeverReconciled(a) {
		return a, nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, app.FirstReconcileWait)
	defer cancel()
	stop := s.u.Spin(fmt.Sprintf("waiting for application-controller to reconcile %s for the first time", app.QualifiedName(a)))
	defer stop()
	for {
		select {
		case <-ctx.Done():
			if s.ctx.Err() != nil {
				return a, s.ctx.Err()
			}
			return a, app.NotReconciledError(a)
		case <-time.After(appPollInterval):
		}
		b, err := s.get(ctx)
		switch {
		case err == nil && !app.NeverReconciled(b):
			return b, nil
		case err == nil:
			a = b
		case ctx.Err() == nil:
			return a, err
		}
	}
}

// refresh asks application-controller to compare the Application again
// (annotation argocd.argoproj.io/refresh: normal, argocd-contract §3.2) and
// waits, bounded by --timeout, until it wrote that comparison: what Argo
// CD's CLI does before it prints an Application after an operation, since
// the comparison made as the operation ended may predate it. A user who
// may not patch the Application gets it as it is.
func (s *appSession) refresh() (*argov1.Application, error) {
	a := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: s.key.Namespace, Name: s.key.Name}}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"normal"}}}`, argov1.AnnotationRefresh)
	switch err := s.c.Patch(s.ctx, a, client.RawPatch(types.MergePatchType, patch)); {
	case apierrors.IsForbidden(err):
		return s.get(s.ctx) // a user who may only read (app wait): the state as it is
	case err != nil:
		return nil, fmt.Errorf("requesting a refresh of %s: %w", s.key, err)
	}
	requested := a.ResourceVersion
	stop := s.u.Spin("waiting for application-controller to compare " + app.QualifiedName(a) + " again")
	defer stop()
	for {
		b, err := s.get(s.ctx)
		switch {
		case err == nil && app.Refreshed(b, requested):
			return b, nil
		case err != nil && s.ctx.Err() == nil:
			return nil, err
		}
		select {
		case <-s.ctx.Done():
			if errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("timed out waiting for application-controller to compare %s again (annotation %s is still set)",
					app.QualifiedName(a), argov1.AnnotationRefresh)
			}
			return nil, s.ctx.Err()
		case <-time.After(appPollInterval):
		}
	}
}

// dryRun is true for a dry-run sync operation, which changes nothing to
// compare again.
func dryRun(op *argov1.Operation) bool {
	return op != nil && op.Sync != nil && op.Sync.DryRun
}

package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/app"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newAppSyncCommand(g *globalFlags) *cobra.Command {
	var req app.SyncRequest
	var async bool
	cmd := &cobra.Command{
		Use:   "sync NAME",
		Short: "Sync an Application to its target state as argocd app sync",
		Long: "Request a sync as Argo CD's API server does: write the Application's operation field (the spec's source, " +
			"the revision, prune, dry run, the selected resources, the spec's sync options plus --sync-option, the strategy " +
			"and who asked), refused while another operation is in progress. Without --async, wait until the operation " +
			"ends and the controller has compared the Application again after it (as argocd, by a refresh: annotation " +
			"argocd.argoproj.io/refresh), print the result, and fail unless it Succeeded. An Application application-controller " +
			"has never reconciled fails within 15s, without a request, naming the likely cause.",
		Args: cobra.ExactArgs(1),
		Example: "  eddy app sync guestbook\n  eddy app sync guestbook --prune --revision v1.2.0\n" +
			"  eddy app sync guestbook --resource apps:Deployment:guestbook-ui --resource :Service:default/guestbook-ui\n" +
			"  eddy app sync guestbook --sync-option ServerSideApply=true --async",
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Username = g.kubeconfigUser()
			s, done, err := g.openApp(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			if err := s.awaitFirstReconcile(); err != nil {
				return err
			}
			requested, err := s.request(func(a *argov1.Application) (*argov1.Operation, error) {
				return app.SyncOperation(a, req)
			})
			if err != nil {
				return err
			}
			s.u.Success("sync of %s requested", app.QualifiedName(s.requested))
			if async {
				return nil
			}
			return s.awaitOperation(cmd, requested, len(req.Resources) > 0)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&req.Prune, "prune", false, "allow deleting objects Git no longer declares")
	f.BoolVar(&req.DryRun, "dry-run", false, "preview the sync without changing the cluster")
	f.StringVar(&req.Revision, "revision", "", "sync to this revision instead of the source's targetRevision")
	f.StringArrayVar(&req.Resources, "resource", nil, "sync only these objects, as GROUP:KIND:NAME or GROUP:KIND:NAMESPACE/NAME ('*' globs, a leading '!' excludes); repeatable")
	f.StringArrayVar(&req.SyncOptions, "sync-option", nil, "a sync option (e.g. Prune=false, ServerSideApply=true) added to the spec's for this sync; repeatable")
	f.StringVar(&req.Strategy, "strategy", "", "sync strategy: hook (default, runs hooks) or apply (skips hooks)")
	f.BoolVar(&req.Force, "force", false, "let the sync delete and re-create objects it cannot patch")
	f.BoolVar(&async, "async", false, "do not wait for the operation to end")
	return cmd
}

func newAppRollbackCommand(g *globalFlags) *cobra.Command {
	var prune, dryRun bool
	cmd := &cobra.Command{
		Use:   "rollback NAME [ID]",
		Short: "Roll an Application back to a history entry (by default the previous one) as argocd app rollback",
		Long: "Request a sync to the revision and source of a status.history entry, without hooks, as Argo CD's rollback; " +
			"refused while automated sync is on. Wait until the operation ends and the controller has compared the Application " +
			"again, print the result, and fail unless it Succeeded.",
		Args:    cobra.RangeArgs(1, 2),
		Example: "  eddy app rollback guestbook\n  eddy app rollback guestbook 3",
		RunE: func(cmd *cobra.Command, args []string) error {
			id := int64(-1)
			if len(args) == 2 {
				n, err := strconv.ParseInt(args[1], 10, 64)
				if err != nil || n < 0 {
					return fmt.Errorf("history ID %q: want a number from eddy app history", args[1])
				}
				id = n
			}
			user := g.kubeconfigUser()
			s, done, err := g.openApp(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			if err := s.awaitFirstReconcile(); err != nil {
				return err
			}
			var entry *argov1.RevisionHistory
			requested, err := s.request(func(a *argov1.Application) (*argov1.Operation, error) {
				h, err := app.FindHistory(a, id)
				if err != nil {
					return nil, err
				}
				entry = h
				return app.RollbackOperation(a, h, prune, dryRun, user)
			})
			if err != nil {
				return err
			}
			s.u.Success("rollback of %s to history %d (%s) requested", app.QualifiedName(s.requested), entry.ID, entry.Revision)
			return s.awaitOperation(cmd, requested, false)
		},
	}
	cmd.Flags().BoolVar(&prune, "prune", false, "allow deleting objects the history entry does not declare")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "preview the rollback without changing the cluster")
	return cmd
}

func newAppWaitCommand(g *globalFlags) *cobra.Command {
	var w app.WaitFor
	cmd := &cobra.Command{
		Use:   "wait NAME",
		Short: "Wait until an Application is synced, healthy and has no operation running, as argocd app wait",
		Long: "Wait until the Application meets the flags given (without any: --sync, --health and --operation), " +
			"bounded by --timeout, then print it as app get (after an operation seen while waiting, once the controller has " +
			"compared it again). Fails when, waiting for health, it turns Degraded, and within 15s when application-controller " +
			"has never reconciled it.",
		Args:    cobra.ExactArgs(1),
		Example: "  eddy app wait guestbook\n  eddy app wait guestbook --health --timeout 2m",
		RunE: func(cmd *cobra.Command, args []string) error {
			w = w.OrDefault()
			s, done, err := g.openApp(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			if err := s.awaitFirstReconcile(); err != nil {
				return err
			}
			sawOperation := false
			get := func(ctx context.Context) (*argov1.Application, error) {
				a, err := s.get(ctx)
				if err == nil && a.Operation != nil && !dryRun(a.Operation) {
					sawOperation = true
				}
				return a, err
			}
			a, err := app.Wait(s.ctx, get, w, s.u, appPollInterval, w.Describe())
			if err != nil {
				return err
			}
			if sawOperation { // as argocd app wait: the comparison after it
				if a, err = s.refresh(); err != nil {
					return err
				}
			}
			s.u.Success("%s: %s", app.QualifiedName(a), app.StateLine(a))
			fmt.Fprintln(cmd.OutOrStdout())
			return app.PrintApp(cmd.OutOrStdout(), a, w.Operation, time.Now())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&w.Sync, "sync", false, "wait for Synced")
	f.BoolVar(&w.Health, "health", false, "wait for Healthy")
	f.BoolVar(&w.Suspended, "suspended", false, "wait for Suspended")
	f.BoolVar(&w.Degraded, "degraded", false, "wait for Degraded")
	f.BoolVar(&w.Operation, "operation", false, "wait until no operation is pending or running")
	return cmd
}

// request writes the operation build makes of the Application, read anew
// after a conflict: ErrOperationInProgress while one is set. It returns
// when it was requested; s.requested holds the Application as written.
func (s *appSession) request(build func(*argov1.Application) (*argov1.Operation, error)) (time.Time, error) {
	for {
		a, err := s.get(s.ctx)
		if err != nil {
			return time.Time{}, err
		}
		if a.Operation != nil {
			return time.Time{}, app.ErrOperationInProgress
		}
		op, err := build(a)
		if err != nil {
			return time.Time{}, err
		}
		patch, err := app.OperationPatch(a, op)
		if err != nil {
			return time.Time{}, err
		}
		at := time.Now()
		err = s.c.Patch(s.ctx, a, client.RawPatch(types.MergePatchType, patch))
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("requesting the operation on %s: %w", s.key, err)
		}
		s.requested = a
		return at, nil
	}
}

// awaitOperation waits for the operation requested at requested to end
// (app wait --operation), then, unless it was a dry run, for a comparison
// made after it (refresh), prints the Application with the operation's
// result, and fails unless it Succeeded (app.CheckSyncResult).
func (s *appSession) awaitOperation(cmd *cobra.Command, requested time.Time, selective bool) error {
	w := app.WaitFor{Operation: true}
	a, err := app.Wait(s.ctx, s.get, w, s.u, appPollInterval, "the operation")
	if err != nil {
		return err
	}
	if st := a.Status.OperationState; st != nil && !dryRun(&st.Operation) {
		if a, err = s.refresh(); err != nil {
			return err
		}
	}
	if err := app.CheckSyncResult(a, requested, selective); err != nil {
		fmt.Fprintln(cmd.OutOrStdout())
		_ = app.PrintApp(cmd.OutOrStdout(), a, true, time.Now())
		return err
	}
	s.u.Success("operation %s: %s", a.Status.OperationState.Phase, app.AppState(a))
	fmt.Fprintln(cmd.OutOrStdout())
	return app.PrintApp(cmd.OutOrStdout(), a, true, time.Now())
}

// awaitFirstReconcile reads the Application and, when it was never
// reconciled, waits for its first status (firstReconcile).
func (s *appSession) awaitFirstReconcile() error {
	a, err := s.get(s.ctx)
	if err != nil {
		return err
	}
	_, err = s.firstReconcile(a)
	return err
}

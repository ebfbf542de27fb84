package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pollInterval is flux's: how often a waiting command re-reads the object.
var pollInterval = 2 * time.Second

func newReconcileCommand(g *globalFlags) *cobra.Command {
	rec := &cobra.Command{
		Use:   "reconcile",
		Short: "Ask a controller to reconcile an object now and wait for the result",
	}
	var withSource bool
	ks := &cobra.Command{
		Use:     "kustomization NAME",
		Aliases: []string{"ks"},
		Short:   "Reconcile a Kustomization (and, with --with-source, its source first)",
		Args:    exactName,
		Example: "  eddy reconcile kustomization flux-system --with-source",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			u := newUI(cmd.OutOrStdout())
			k := &kustomizev1.Kustomization{}
			key := types.NamespacedName{Namespace: g.namespace, Name: args[0]}
			if err := c.Get(ctx, key, k); err != nil {
				return notFound(err, "Kustomization", key)
			}
			if withSource {
				if k.Spec.SourceRef.Kind != sourcev1.GitRepositoryKind {
					return fmt.Errorf("source kind %s of Kustomization %s is not supported yet", k.Spec.SourceRef.Kind, key)
				}
				ns := k.Spec.SourceRef.Namespace
				if ns == "" {
					ns = k.Namespace
				}
				src := &sourcev1.GitRepository{}
				if err := reconcileObject(ctx, c, u, src, types.NamespacedName{Namespace: ns, Name: k.Spec.SourceRef.Name}); err != nil {
					return err
				}
				if src.Status.Artifact != nil {
					u.Success("fetched revision %s", src.Status.Artifact.Revision)
				}
			}
			if err := reconcileObject(ctx, c, u, k, key); err != nil {
				return err
			}
			u.Success("applied revision %s", k.Status.LastAppliedRevision)
			return nil
		},
	}
	ks.Flags().BoolVar(&withSource, "with-source", false, "reconcile the Kustomization's source first")
	rec.AddCommand(ks)

	source := &cobra.Command{Use: "source", Short: "Reconcile a source"}
	source.AddCommand(&cobra.Command{
		Use:   "git NAME",
		Short: "Reconcile a GitRepository: fetch the branch's last commit now",
		Args:  exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			u := newUI(cmd.OutOrStdout())
			src := &sourcev1.GitRepository{}
			if err := reconcileObject(ctx, c, u, src, types.NamespacedName{Namespace: g.namespace, Name: args[0]}); err != nil {
				return err
			}
			if src.Status.Artifact != nil {
				u.Success("fetched revision %s", src.Status.Artifact.Revision)
			}
			return nil
		},
	})
	rec.AddCommand(source)
	return rec
}

func exactName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s needs exactly one NAME", cmd.CommandPath())
	}
	return nil
}

func notFound(err error, kind string, key types.NamespacedName) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s not found in namespace %s", kind, key.Name, key.Namespace)
	}
	return err
}

// reconcilable is what reconcileObject reads from GitRepository and
// Kustomization: the API types' status accessors, and kind and suspend.
type reconcilable interface {
	client.Object
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
	GetLastHandledReconcileRequest() string
	kind() string
	suspended() bool
}

type gitRepo struct{ *sourcev1.GitRepository }

func (o gitRepo) kind() string    { return "GitRepository" }
func (o gitRepo) suspended() bool { return o.Spec.Suspend }

type kustomization struct{ *kustomizev1.Kustomization }

func (o kustomization) kind() string    { return "Kustomization" }
func (o kustomization) suspended() bool { return o.Spec.Suspend }

func wrap(obj client.Object) reconcilable {
	switch o := obj.(type) {
	case *sourcev1.GitRepository:
		return gitRepo{o}
	case *kustomizev1.Kustomization:
		return kustomization{o}
	}
	panic(fmt.Sprintf("cannot reconcile %T", obj))
}

// reconcileObject does what `flux reconcile` does: it sets
// reconcile.fluxcd.io/requestedAt to now (merge patch, retried on
// conflict), waits until status.lastHandledReconcileAt equals it, then until
// the object is Ready for its generation. It fails at once when the object
// is suspended, Stalled, or when the handled reconcile ended Ready=False
// (other than waiting for dependencies). obj holds the final object.
func reconcileObject(ctx context.Context, c client.Client, u *ui, obj client.Object, key types.NamespacedName) error {
	r := wrap(obj)
	if err := c.Get(ctx, key, obj); err != nil {
		return notFound(err, r.kind(), key)
	}
	if r.suspended() {
		return fmt.Errorf("%s %s is suspended: set spec.suspend to false first", r.kind(), key)
	}
	u.Action("annotating %s %s in %s namespace", r.kind(), key.Name, key.Namespace)
	token := time.Now().Format(time.RFC3339Nano)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
		return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
	if err != nil {
		return fmt.Errorf("annotating %s %s: %w", r.kind(), key, err)
	}
	u.Success("%s annotated", r.kind())
	stop := u.Spin(fmt.Sprintf("waiting for %s reconciliation", r.kind()))
	defer stop()
	return waitFor(ctx, c, obj, key, func() (bool, error) {
		if r.GetLastHandledReconcileRequest() != token {
			return false, nil
		}
		return readyForGeneration(r)
	}, r.kind()+" reconciliation")
}

// readyForGeneration is true when Ready=True for the current generation; an
// error when the object is Stalled or its last reconcile failed.
func readyForGeneration(r reconcilable) (bool, error) {
	conds := r.GetConditions()
	if s := apimeta.FindStatusCondition(conds, meta.StalledCondition); s != nil && s.Status == metav1.ConditionTrue {
		return false, fmt.Errorf("%s reconciliation stalled: %s: %s", r.kind(), s.Reason, s.Message)
	}
	ready := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	if ready == nil || ready.ObservedGeneration != r.GetGeneration() {
		return false, nil
	}
	switch {
	case ready.Status == metav1.ConditionTrue:
		return r.GetObservedGeneration() == r.GetGeneration(), nil
	case ready.Status == metav1.ConditionFalse && ready.Reason != meta.DependencyNotReadyReason && ready.Reason != meta.ProgressingReason:
		return false, fmt.Errorf("%s reconciliation failed: %s: %s", r.kind(), ready.Reason, oneLine(ready.Message))
	}
	return false, nil
}

// waitFor re-reads obj every pollInterval until cond is true or fails, or
// ctx ends (then the error names what was awaited and the last Ready message).
func waitFor(ctx context.Context, c client.Client, obj client.Object, key types.NamespacedName, cond func() (bool, error), what string) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		err := c.Get(ctx, key, obj)
		if err == nil {
			ok, cerr := cond()
			if cerr != nil {
				return cerr
			}
			if ok {
				return nil
			}
		} else if ctx.Err() == nil && !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-ctx.Done():
			msg := ""
			if ready := apimeta.FindStatusCondition(wrap(obj).GetConditions(), meta.ReadyCondition); ready != nil {
				msg = ": last status: " + ready.Reason + ": " + oneLine(ready.Message)
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("timed out waiting for %s%s", what, msg)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

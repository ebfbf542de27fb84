// Package status reads the status of the kinds of kinds.Flux the way the
// flux CLI shows and waits for it: the `get` table, and the
// request-and-wait of `reconcile`.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PollInterval is flux's: how often a waiting command re-reads the object.
const PollInterval = 2 * time.Second

// Row is one line of flux's `get` table.
type Row struct {
	Namespace, Name, Revision string
	Suspended                 bool
	Ready, Message            string
	// Shard is the object's sharding.fluxcd.io/key label, "" without one.
	Shard string
	// Cells are the cells of a kinds.CellColumns table's Headers.
	Cells []string
}

// ShardLabel is the label that assigns an object to a controller shard.
const ShardLabel = "sharding.fluxcd.io/key"

// ReadyOf returns the Ready status and message as flux prints them: "False"
// and "waiting to be reconciled" while there is no Ready condition.
func ReadyOf(conds []metav1.Condition) (string, string) {
	c := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	if c == nil {
		return "False", "waiting to be reconciled"
	}
	return string(c.Status), c.Message
}

// row is the row of one object named prefix+name: its revision, spec.suspend
// and Ready condition.
func row(prefix string, o metav1.Object, suspended bool, revision string, conds []metav1.Condition) Row {
	r := Row{Namespace: o.GetNamespace(), Name: prefix + o.GetName(), Suspended: suspended, Revision: revision, Shard: o.GetLabels()[ShardLabel]}
	r.Ready, r.Message = ReadyOf(conds)
	return r
}

// Rows are the rows of l's items, a list of kind k, each named
// prefix+name: spec.suspend, k's REVISION and the Ready condition. Objects
// without status (k.NoStatus) or never reconciled (k.Unreconciled) flux
// shows Ready with k.StaticMessage.
func Rows(k kinds.Kind, l client.ObjectList, prefix string) []Row {
	var rs []Row
	for _, o := range kinds.Items(l) {
		if k.NoStatus {
			rs = append(rs, Row{Namespace: o.GetNamespace(), Name: prefix + o.GetName(), Suspended: o.IsSuspended(),
				Ready: string(metav1.ConditionTrue), Message: k.StaticMessage, Shard: o.GetLabels()[ShardLabel]})
			continue
		}
		revision := ""
		if k.Revision != nil {
			revision = k.Revision(o)
		}
		r := row(prefix, o, o.IsSuspended(), revision, o.GetConditions())
		if k.Cells != nil {
			r.Cells = k.Cells(o)
		}
		if k.IsUnreconciled(o) {
			r.Ready, r.Message = string(metav1.ConditionTrue), k.StaticMessage
		}
		rs = append(rs, r)
	}
	return rs
}

// Print prints rs in kind k's `get` table (see PrintTable).
func Print(k kinds.Kind, w io.Writer, rs []Row, withNamespace, withShard bool) {
	switch k.Columns {
	case kinds.SuspendedColumns:
		PrintSuspendedTable(w, rs, withNamespace, withShard)
	case kinds.ReadyColumns:
		PrintReadyTable(w, rs, withNamespace, withShard)
	case kinds.CellColumns:
		printRows(w, rs, withNamespace, withShard, "NAME\t"+strings.Join(k.Headers, "\t")+"\tREADY", func(r Row) string {
			return r.Name + "\t" + strings.Join(r.Cells, "\t") + "\t" + r.Ready
		})
	default:
		PrintTable(w, rs, withNamespace, withShard)
	}
}

// NewTable returns a tabwriter with flux's column spacing that has written
// header, after a NAMESPACE column when withNamespace; Cell writes that
// column's cell of a row.
func NewTable(w io.Writer, withNamespace bool, header string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 0, 0, 3, ' ', 0), withNamespace: withNamespace}
	t.Row("NAMESPACE", "%s", header)
	return t
}

// Table is a table with an optional NAMESPACE column; see NewTable.
type Table struct {
	tw            *tabwriter.Writer
	withNamespace bool
}

// Row writes one line: namespace (when the table has that column), then
// the other cells as format and args say (tab-separated, no newline).
func (t *Table) Row(namespace, format string, args ...any) {
	if t.withNamespace {
		fmt.Fprintf(t.tw, "%s\t", namespace)
	}
	fmt.Fprintf(t.tw, format+"\n", args...)
}

// Flush writes the table out.
func (t *Table) Flush() error { return t.tw.Flush() }

// PrintTable prints rs as `flux get` does (SUSPENDED as "True"/"False",
// flux's capitalised booleans); withShard (`get -o wide`) adds a SHARD
// column before MESSAGE.
func PrintTable(w io.Writer, rs []Row, withNamespace, withShard bool) {
	printRows(w, rs, withNamespace, withShard, "NAME\tREVISION\tSUSPENDED\tREADY", func(r Row) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s", r.Name, r.Revision, suspendedOf(r), r.Ready)
	})
}

// PrintSuspendedTable prints rs as `flux get receivers` and `flux get
// alerts` do: NAME, SUSPENDED, READY, MESSAGE (no revision), SHARD before
// MESSAGE when withShard.
func PrintSuspendedTable(w io.Writer, rs []Row, withNamespace, withShard bool) {
	printRows(w, rs, withNamespace, withShard, "NAME\tSUSPENDED\tREADY", func(r Row) string {
		return fmt.Sprintf("%s\t%s\t%s", r.Name, suspendedOf(r), r.Ready)
	})
}

// PrintReadyTable prints rs as `flux get alert-providers` does: NAME,
// READY, MESSAGE, SHARD before MESSAGE when withShard.
func PrintReadyTable(w io.Writer, rs []Row, withNamespace, withShard bool) {
	printRows(w, rs, withNamespace, withShard, "NAME\tREADY", func(r Row) string {
		return fmt.Sprintf("%s\t%s", r.Name, r.Ready)
	})
}

// printRows prints a table of header's columns, then SHARD when withShard,
// then MESSAGE; cells gives a row's cells of header's columns.
func printRows(w io.Writer, rs []Row, withNamespace, withShard bool, header string, cells func(Row) string) {
	if withShard {
		header += "\tSHARD"
	}
	t := NewTable(w, withNamespace, header+"\tMESSAGE")
	for _, r := range rs {
		line := cells(r)
		if withShard {
			line += "\t" + r.Shard
		}
		t.Row(r.Namespace, "%s\t%s", line, ui.OneLine(r.Message))
	}
	_ = t.Flush()
}

func suspendedOf(r Row) string {
	if r.Suspended {
		return string(metav1.ConditionTrue)
	}
	return string(metav1.ConditionFalse)
}

// PrintSyncTable prints every source, Kustomization and HelmRelease (the
// kinds with a REVISION column) as `get -A` does, in the order of `get
// all`, each name prefixed with its kind in lower case; a kind that cannot
// be listed is left out.
func PrintSyncTable(ctx context.Context, w io.Writer, c client.Client) {
	var rs []Row
	for _, k := range kinds.Flux {
		if k.Columns != kinds.RevisionColumns {
			continue
		}
		l := k.NewList()
		if err := c.List(ctx, l); err == nil {
			rs = append(rs, Rows(k, l, strings.ToLower(k.Kind)+"/")...)
		}
	}
	if len(rs) > 0 {
		PrintTable(w, rs, true, false)
	}
}

// NotFound words a NotFound error of kind key as flux does; other errors
// are returned as they are.
func NotFound(err error, kind string, key types.NamespacedName) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s not found in namespace %s", kind, key.Name, key.Namespace)
	}
	return err
}

// wrap is obj as a kinds.Object with its row; obj must be of one of the
// kinds (a programming error otherwise).
func wrap(obj client.Object) (kinds.Object, kinds.Kind) {
	k, ok := kinds.Of(obj)
	if !ok {
		panic(fmt.Sprintf("cannot reconcile %T", obj))
	}
	return obj.(kinds.Object), k
}

// GetUnsuspended reads key into obj (a kind Reconcile takes): an error,
// worded as flux does, when it is not found or is suspended, which flux
// checks before it reconciles any source.
func GetUnsuspended(ctx context.Context, c client.Client, obj client.Object, key types.NamespacedName) error {
	r, k := wrap(obj)
	if err := c.Get(ctx, key, obj); err != nil {
		return NotFound(err, k.Kind, key)
	}
	if r.IsSuspended() {
		return fmt.Errorf("%s %s is suspended: set spec.suspend to false first", k.Kind, key)
	}
	return nil
}

// Reconcile does what `flux reconcile` does: it sets
// reconcile.fluxcd.io/requestedAt to now (merge patch, retried on
// conflict), and each of also (e.g. a HelmRelease's
// reconcile.fluxcd.io/forceAt) to the same token, waits until
// status.lastHandledReconcileAt equals it, then until the object is Ready
// for its generation. It fails at once when the object is suspended,
// Stalled, or when the handled reconcile ended Ready=False (other than
// waiting for dependencies). obj (a *GitRepository, *HelmRepository,
// *HelmChart, *Kustomization or *HelmRelease) holds the final object.
func Reconcile(ctx context.Context, c client.Client, u *ui.UI, obj client.Object, key types.NamespacedName, also ...string) error {
	if err := GetUnsuspended(ctx, c, obj, key); err != nil {
		return err
	}
	r, k := wrap(obj)
	u.Action("annotating %s %s in %s namespace", k.Kind, key.Name, key.Namespace)
	token := time.Now().Format(time.RFC3339Nano)
	annotations := map[string]string{meta.ReconcileRequestAnnotation: token}
	for _, a := range also {
		annotations[a] = token
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	})
	if err != nil {
		return fmt.Errorf("annotating %s %s: %w", k.Kind, key, err)
	}
	u.Success("%s annotated", k.Kind)
	stop := u.Spin(fmt.Sprintf("waiting for %s reconciliation", k.Kind))
	defer stop()
	return WaitFor(ctx, c, obj, key, PollInterval, func() (bool, error) {
		if r.GetLastHandledReconcileRequest() != token {
			return false, nil
		}
		return readyForGeneration(k, r)
	}, k.Kind+" reconciliation")
}

// readyForGeneration is true when Ready=True for the current generation; an
// error when the object is Stalled or its last reconcile failed.
func readyForGeneration(k kinds.Kind, r kinds.Object) (bool, error) {
	if s := apimeta.FindStatusCondition(r.GetConditions(), meta.StalledCondition); s != nil && s.Status == metav1.ConditionTrue {
		return false, fmt.Errorf("%s reconciliation stalled: %s: %s", k.Kind, s.Reason, s.Message)
	}
	ready, current := kinds.ReadyCondition(r)
	if !current {
		return false, nil
	}
	switch {
	case ready.Status == metav1.ConditionTrue:
		return r.GetObservedGeneration() == r.GetGeneration(), nil
	case ready.Status == metav1.ConditionFalse && ready.Reason != meta.DependencyNotReadyReason && ready.Reason != meta.ProgressingReason:
		return false, fmt.Errorf("%s reconciliation failed: %s: %s", k.Kind, ready.Reason, ui.OneLine(ready.Message))
	}
	return false, nil
}

// WaitFor reads obj (a kind Reconcile takes) every interval
// until cond is true or fails, or ctx ends: then the error names what was
// awaited and the last Ready message. An object not found yet is waited
// for; another read error ends the wait.
func WaitFor(ctx context.Context, c client.Client, obj client.Object, key types.NamespacedName, interval time.Duration,
	cond func() (bool, error), what string) error {
	var failed error // from cond or the read, not from ctx
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, obj)
		switch {
		case err == nil:
			ok, err := cond()
			failed = err
			return ok, err
		case ctx.Err() != nil || apierrors.IsNotFound(err):
			return false, nil
		}
		failed = err
		return false, err
	})
	if err == nil || failed != nil {
		return failed
	}
	msg := ""
	if ready := apimeta.FindStatusCondition(obj.(kinds.Object).GetConditions(), meta.ReadyCondition); ready != nil {
		msg = ": last status: " + ready.Reason + ": " + ui.OneLine(ready.Message)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out waiting for %s%s", what, msg)
	}
	return ctx.Err()
}

// EventTime is when a core/v1 Event last happened, whichever field its
// reporter set: the series' last observation, lastTimestamp, eventTime,
// firstTimestamp, else its creation.
func EventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

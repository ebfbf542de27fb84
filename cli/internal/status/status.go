// Package status reads the status of Eddy's sources (GitRepository,
// HelmRepository, HelmChart), Kustomizations, HelmReleases and
// notification objects (Receiver, Alert, Provider) the way the
// flux CLI shows and waits for it: the `get` table, and the
// request-and-wait of `reconcile`.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
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

// revisionOf is an artifact's revision, "" without one.
func revisionOf(a *meta.Artifact) string {
	if a == nil {
		return ""
	}
	return a.Revision
}

// GitRepositoryRows are the rows of l's items, each named prefix+name.
func GitRepositoryRows(l *sourcev1.GitRepositoryList, prefix string) []Row {
	return sourceRows(l.Items, prefix, func(o *sourcev1.GitRepository) (bool, *meta.Artifact, []metav1.Condition) {
		return o.Spec.Suspend, o.Status.Artifact, o.Status.Conditions
	})
}

// OCIRepositoryRows are the rows of l's items, each named prefix+name.
func OCIRepositoryRows(l *sourcev1.OCIRepositoryList, prefix string) []Row {
	return sourceRows(l.Items, prefix, func(o *sourcev1.OCIRepository) (bool, *meta.Artifact, []metav1.Condition) {
		return o.Spec.Suspend, o.Status.Artifact, o.Status.Conditions
	})
}

// sourceRows are the rows of a source kind's items: suspend, the
// artifact's revision and the Ready condition, as of reads them.
func sourceRows[T any, PT interface {
	*T
	metav1.Object
}](items []T, prefix string, of func(PT) (bool, *meta.Artifact, []metav1.Condition)) []Row {
	var rs []Row
	for i := range items {
		o := PT(&items[i])
		suspended, a, conds := of(o)
		rs = append(rs, row(prefix, o, suspended, revisionOf(a), conds))
	}
	return rs
}

// KustomizationRows are the rows of l's items, each named prefix+name.
func KustomizationRows(l *kustomizev1.KustomizationList, prefix string) []Row {
	var rs []Row
	for i := range l.Items {
		o := &l.Items[i]
		rs = append(rs, row(prefix, o, o.Spec.Suspend, o.Status.LastAppliedRevision, o.Status.Conditions))
	}
	return rs
}

// HelmRepositoryRows are the rows of l's items, each named prefix+name. An
// OCI HelmRepository has no artifact and is never reconciled: flux shows
// it Ready with "Helm repository is Ready".
func HelmRepositoryRows(l *sourcev1.HelmRepositoryList, prefix string) []Row {
	var rs []Row
	for i := range l.Items {
		o := &l.Items[i]
		r := row(prefix, o, o.Spec.Suspend, revisionOf(o.Status.Artifact), o.Status.Conditions)
		if o.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
			r.Ready, r.Message = string(metav1.ConditionTrue), "Helm repository is Ready"
		}
		rs = append(rs, r)
	}
	return rs
}

// HelmChartRows are the rows of l's items, each named prefix+name; the
// revision is the artifact's, the chart version.
func HelmChartRows(l *sourcev1.HelmChartList, prefix string) []Row {
	var rs []Row
	for i := range l.Items {
		o := &l.Items[i]
		rs = append(rs, row(prefix, o, o.Spec.Suspend, revisionOf(o.Status.Artifact), o.Status.Conditions))
	}
	return rs
}

// HelmReleaseRevision is the revision flux shows for a HelmRelease: the
// chart version of the newest release in status.history, else
// status.lastAttemptedRevision.
func HelmReleaseRevision(o *helmv2.HelmRelease) string {
	if len(o.Status.History) > 0 {
		return o.Status.History[0].ChartVersion
	}
	return o.Status.LastAttemptedRevision
}

// HelmReleaseRows are the rows of l's items, each named prefix+name.
func HelmReleaseRows(l *helmv2.HelmReleaseList, prefix string) []Row {
	var rs []Row
	for i := range l.Items {
		o := &l.Items[i]
		rs = append(rs, row(prefix, o, o.Spec.Suspend, HelmReleaseRevision(o), o.Status.Conditions))
	}
	return rs
}

// ReceiverRows are the rows of l's items, each named prefix+name.
func ReceiverRows(l *notificationv1.ReceiverList, prefix string) []Row {
	var rs []Row
	for i := range l.Items {
		o := &l.Items[i]
		rs = append(rs, row(prefix, o, o.Spec.Suspend, "", o.Status.Conditions))
	}
	return rs
}

// staticRow is the row of an object without status, which flux shows
// Ready with msg.
func staticRow(prefix string, o metav1.Object, suspended bool, msg string) Row {
	return Row{Namespace: o.GetNamespace(), Name: prefix + o.GetName(), Suspended: suspended,
		Ready: string(metav1.ConditionTrue), Message: msg, Shard: o.GetLabels()[ShardLabel]}
}

// AlertRows are the rows of l's items, each named prefix+name. An Alert
// has no status: flux shows it Ready with "Alert is Ready".
func AlertRows(l *notificationv1.AlertList, prefix string) []Row {
	var rs []Row
	for i := range l.Items {
		o := &l.Items[i]
		rs = append(rs, staticRow(prefix, o, o.Spec.Suspend, "Alert is Ready"))
	}
	return rs
}

// ProviderRows are the rows of l's items, each named prefix+name. A
// Provider has no status: flux shows it Ready with "Provider is Ready".
func ProviderRows(l *notificationv1.ProviderList, prefix string) []Row {
	var rs []Row
	for i := range l.Items {
		o := &l.Items[i]
		rs = append(rs, staticRow(prefix, o, o.Spec.Suspend, "Provider is Ready"))
	}
	return rs
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

// PrintSyncTable prints every source, Kustomization and HelmRelease as
// `get -A` does, each name prefixed with its kind in lower case; a kind
// that cannot be listed is left out.
func PrintSyncTable(ctx context.Context, w io.Writer, c client.Client) {
	var rs []Row
	ociRepos := &sourcev1.OCIRepositoryList{}
	if err := c.List(ctx, ociRepos); err == nil {
		rs = append(rs, OCIRepositoryRows(ociRepos, "ocirepository/")...)
	}
	repos := &sourcev1.GitRepositoryList{}
	if err := c.List(ctx, repos); err == nil {
		rs = append(rs, GitRepositoryRows(repos, "gitrepository/")...)
	}
	helmRepos := &sourcev1.HelmRepositoryList{}
	if err := c.List(ctx, helmRepos); err == nil {
		rs = append(rs, HelmRepositoryRows(helmRepos, "helmrepository/")...)
	}
	charts := &sourcev1.HelmChartList{}
	if err := c.List(ctx, charts); err == nil {
		rs = append(rs, HelmChartRows(charts, "helmchart/")...)
	}
	kss := &kustomizev1.KustomizationList{}
	if err := c.List(ctx, kss); err == nil {
		rs = append(rs, KustomizationRows(kss, "kustomization/")...)
	}
	hrs := &helmv2.HelmReleaseList{}
	if err := c.List(ctx, hrs); err == nil {
		rs = append(rs, HelmReleaseRows(hrs, "helmrelease/")...)
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

// reconcilable is what Reconcile reads from the reconciled kinds: the API
// types' status accessors, and kind and suspend.
type reconcilable interface {
	client.Object
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
	GetLastHandledReconcileRequest() string
	kind() string
	suspended() bool
}

type gitRepo struct{ *sourcev1.GitRepository }

func (o gitRepo) kind() string    { return sourcev1.GitRepositoryKind }
func (o gitRepo) suspended() bool { return o.Spec.Suspend }

type ociRepo struct{ *sourcev1.OCIRepository }

func (o ociRepo) kind() string    { return sourcev1.OCIRepositoryKind }
func (o ociRepo) suspended() bool { return o.Spec.Suspend }

type helmRepo struct{ *sourcev1.HelmRepository }

func (o helmRepo) kind() string    { return sourcev1.HelmRepositoryKind }
func (o helmRepo) suspended() bool { return o.Spec.Suspend }

type helmChart struct{ *sourcev1.HelmChart }

func (o helmChart) kind() string    { return sourcev1.HelmChartKind }
func (o helmChart) suspended() bool { return o.Spec.Suspend }

type kustomization struct{ *kustomizev1.Kustomization }

func (o kustomization) kind() string    { return kustomizev1.KustomizationKind }
func (o kustomization) suspended() bool { return o.Spec.Suspend }

type helmRelease struct{ *helmv2.HelmRelease }

func (o helmRelease) kind() string    { return helmv2.HelmReleaseKind }
func (o helmRelease) suspended() bool { return o.Spec.Suspend }

func wrap(obj client.Object) reconcilable {
	switch o := obj.(type) {
	case *sourcev1.GitRepository:
		return gitRepo{o}
	case *sourcev1.OCIRepository:
		return ociRepo{o}
	case *sourcev1.HelmRepository:
		return helmRepo{o}
	case *sourcev1.HelmChart:
		return helmChart{o}
	case *kustomizev1.Kustomization:
		return kustomization{o}
	case *helmv2.HelmRelease:
		return helmRelease{o}
	}
	panic(fmt.Sprintf("cannot reconcile %T", obj))
}

// GetUnsuspended reads key into obj (a kind Reconcile takes): an error,
// worded as flux does, when it is not found or is suspended, which flux
// checks before it reconciles any source.
func GetUnsuspended(ctx context.Context, c client.Client, obj client.Object, key types.NamespacedName) error {
	r := wrap(obj)
	if err := c.Get(ctx, key, obj); err != nil {
		return NotFound(err, r.kind(), key)
	}
	if r.suspended() {
		return fmt.Errorf("%s %s is suspended: set spec.suspend to false first", r.kind(), key)
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
	r := wrap(obj)
	u.Action("annotating %s %s in %s namespace", r.kind(), key.Name, key.Namespace)
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
		return fmt.Errorf("annotating %s %s: %w", r.kind(), key, err)
	}
	u.Success("%s annotated", r.kind())
	stop := u.Spin(fmt.Sprintf("waiting for %s reconciliation", r.kind()))
	defer stop()
	return WaitFor(ctx, c, obj, key, PollInterval, func() (bool, error) {
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
		return false, fmt.Errorf("%s reconciliation failed: %s: %s", r.kind(), ready.Reason, ui.OneLine(ready.Message))
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
	if ready := apimeta.FindStatusCondition(wrap(obj).GetConditions(), meta.ReadyCondition); ready != nil {
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

// Package kinds is the eddy command's one table of the kinds it serves:
// what `get`, `reconcile`, `suspend`, `resume`, `export`, `delete`,
// `tree`, `events`, the readiness waits and the web UI know of each kind.
// Serving a new kind takes its API package (with the accessors Object
// names) and one row in All.
package kinds

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	imagev1 "github.com/eddyops/eddy/api/image/v1"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object is what the command reads of every kind through the API types'
// accessors. A kind without status (Alert, Provider) answers nil, 0 and
// "", as does Argo CD's Application, whose status is not Flux's.
type Object interface {
	client.Object
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
	GetLastHandledReconcileRequest() string
	IsSuspended() bool
}

// Columns names which of flux's `get` tables a kind is printed in.
type Columns int

const (
	// RevisionColumns: NAME, REVISION, SUSPENDED, READY, MESSAGE (sources,
	// Kustomization, HelmRelease).
	RevisionColumns Columns = iota
	// SuspendedColumns: NAME, SUSPENDED, READY, MESSAGE (Receiver, Alert).
	SuspendedColumns
	// ReadyColumns: NAME, READY, MESSAGE (Provider).
	ReadyColumns
	// CellColumns: NAME, the kind's Headers (with its Cells), READY,
	// MESSAGE (the image kinds).
	CellColumns
)

// Kind is one row of the table: a kind and the names flux (or argocd)
// gives it.
type Kind struct {
	// Kind is the API kind, e.g. "Kustomization".
	Kind string
	// GroupVersion is the version the command reads and writes (the
	// storage version).
	GroupVersion schema.GroupVersion
	// Human is flux's human name, e.g. "source git", "alert provider".
	Human string
	// Use is the subcommand of suspend, resume, export and delete, e.g.
	// "git", "kustomization"; Aliases its aliases, e.g. "ks".
	Use     string
	Aliases []string
	// Plural is the `get` subcommand of a kind that is not a source, e.g.
	// "kustomizations" (its aliases: Use, then Aliases); a source's is Use.
	Plural string
	// Source: a subcommand of `source`, and an sourcev1.Source.
	Source bool
	// Image: an image automation kind (image.toolkit.fluxcd.io), a
	// subcommand of `image` (`get images`), as flux's are.
	Image bool
	// Applier: the kind applies objects and records them (a Kustomization's
	// status.inventory, a HelmRelease's release): it has a resource tree
	// (`tree`, the web UI's tree), and an applier in another's inventory is
	// walked into and drawn as an "applies" edge.
	Applier bool
	// ArgoCD: an Argo CD kind (argoproj.io), served by `eddy app`, `get
	// applications` and the web UI's Application pages with Argo CD's own
	// status (sync, health, operation); not one of Flux (see Flux).
	ArgoCD bool
	// Credentials, when set, is the name of the Secret of credentials an
	// object names (spec.secretRef; "" for none): `export
	// --with-credentials` exports it too.
	Credentials func(Object) string
	// NoStatus: the kind has no status (Alert, Provider): flux shows it
	// Ready with StaticMessage and takes it as ready once kstatus says
	// Current.
	NoStatus bool
	// Unreconciled, when set, is true of an object no controller
	// reconciles (an OCI HelmRepository): shown Ready with StaticMessage,
	// and `reconcile` has nothing to request.
	Unreconciled func(Object) bool
	// StaticMessage is the Ready message of NoStatus and Unreconciled
	// objects, e.g. "Alert is Ready".
	StaticMessage string
	// Columns is the kind's `get` table.
	Columns Columns
	// Headers are the columns of a CellColumns table between NAME and
	// READY; Cells gives an object's cells of those columns.
	Headers []string
	Cells   func(Object) []string
	// Done, when set, is flux's line after a reconcile (or resume) of an
	// object of a kind without Revision, e.g. "scan fetched 3 tags".
	Done func(Object) string
	// Revision is what `flux get` shows in REVISION (nil for the kinds
	// without that column).
	Revision func(Object) string
	// Attempted, when set, is the revision the controller last worked on,
	// applied or not: a source's artifact revision, an applier's
	// status.lastAttemptedRevision (what `bootstrap` waits for, as flux's).
	Attempted func(Object) string
	// SourceKinds are the source kinds an applier's source may be (a
	// Kustomization's spec.sourceRef, a HelmRelease's chart template's), in
	// the order flux's messages list them; `create` and `reconcile
	// --with-source` refuse others.
	SourceKinds []string
	// GetExample is the example of the kind's `get` subcommand, GetLong its
	// long help ("" for the short one).
	GetExample, GetLong string
	// EventsAlso, when set, names the object whose events `events --for`
	// shows beside an object's own (a Kustomization's source), as
	// kind, namespace and name; ok false for none.
	EventsAlso func(Object) (kind, namespace, name string, ok bool)
	// New returns an empty object; NewList an empty list.
	New     func() Object
	NewList func() client.ObjectList
}

// PluralKind is the kind's plural as its API resource spells it, e.g.
// "GitRepositories", "HelmReleases".
func (k Kind) PluralKind() string {
	if strings.HasSuffix(k.Kind, "y") {
		return strings.TrimSuffix(k.Kind, "y") + "ies"
	}
	return k.Kind + "s"
}

// GVK is the kind at GroupVersion.
func (k Kind) GVK() schema.GroupVersionKind { return k.GroupVersion.WithKind(k.Kind) }

// GVR is the kind's API resource at GroupVersion, e.g.
// source.toolkit.fluxcd.io/v1 gitrepositories.
func (k Kind) GVR() schema.GroupVersionResource {
	return k.GroupVersion.WithResource(strings.ToLower(k.PluralKind()))
}

// IsUnreconciled is true of an object no controller reconciles (see
// Kind.Unreconciled).
func (k Kind) IsUnreconciled(o Object) bool { return k.Unreconciled != nil && k.Unreconciled(o) }

// artifactRevision is a source's REVISION: its artifact's revision, ""
// without one.
func artifactRevision(o Object) string {
	if a := o.(sourcev1.Source).GetArtifact(); a != nil {
		return a.Revision
	}
	return ""
}

// HelmReleaseRevision is the REVISION flux shows for a HelmRelease (flux
// get helmreleases): the chart version of the newest release in
// status.history, else status.lastAttemptedRevision. After a failed
// upgrade that is the failed release's chart version.
func HelmReleaseRevision(o *helmv2.HelmRelease) string {
	if len(o.Status.History) > 0 {
		return o.Status.History[0].ChartVersion
	}
	return o.Status.LastAttemptedRevision
}

// secretRef is the name of a *meta.LocalObjectReference, "" for nil.
func secretRef(r *meta.LocalObjectReference) string {
	if r == nil {
		return ""
	}
	return r.Name
}

// boolCell is a boolean as flux prints it in tables: "True" or "False".
func boolCell(b bool) string {
	if b {
		return string(metav1.ConditionTrue)
	}
	return string(metav1.ConditionFalse)
}

// timeCell is t as flux prints a time in tables (RFC 3339), "" for nil.
func timeCell(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339)
}

// imageRows are the rows of the image automation kinds, in flux's order
// of `get images all`, with flux's tables and reconcile messages.
var imageRows = []Kind{
	{Kind: imagev1.ImageRepositoryKind, GroupVersion: imagev1.GroupVersion, Human: "image repository", Use: "repository", Image: true,
		Columns: CellColumns, Headers: []string{"LAST SCAN", "SUSPENDED"},
		Cells: func(o Object) []string {
			r := o.(*imagev1.ImageRepository)
			var scan *metav1.Time
			if r.Status.LastScanResult != nil {
				scan = &r.Status.LastScanResult.ScanTime
			}
			return []string{timeCell(scan), boolCell(r.Spec.Suspend)}
		},
		Done: func(o Object) string {
			n := 0
			if r := o.(*imagev1.ImageRepository).Status.LastScanResult; r != nil {
				n = r.TagCount
			}
			return fmt.Sprintf("scan fetched %d tags", n)
		},
		GetExample: "  eddy get images repository\n  eddy get images repository --all-namespaces",
		New:        func() Object { return &imagev1.ImageRepository{} }, NewList: func() client.ObjectList { return &imagev1.ImageRepositoryList{} }},
	{Kind: imagev1.ImagePolicyKind, GroupVersion: imagev1.GroupVersion, Human: "image policy", Use: "policy", Image: true,
		Columns: CellColumns, Headers: []string{"IMAGE", "TAG"},
		Cells: func(o Object) []string {
			if ref := o.(*imagev1.ImagePolicy).Status.LatestRef; ref != nil {
				return []string{ref.Name, ref.Tag}
			}
			return []string{"", ""}
		},
		Done: func(o Object) string {
			ref := o.(*imagev1.ImagePolicy).Status.LatestRef
			if ref == nil {
				return "selected ref none"
			}
			return "selected ref " + ref.String()
		},
		GetExample: "  eddy get images policy\n  eddy get images policy --all-namespaces",
		New:        func() Object { return &imagev1.ImagePolicy{} }, NewList: func() client.ObjectList { return &imagev1.ImagePolicyList{} }},
	{Kind: imagev1.ImageUpdateAutomationKind, GroupVersion: imagev1.GroupVersion, Human: "image update automation", Use: "update", Image: true,
		Columns: CellColumns, Headers: []string{"LAST RUN", "SUSPENDED"},
		Cells: func(o Object) []string {
			a := o.(*imagev1.ImageUpdateAutomation)
			return []string{timeCell(a.Status.LastAutomationRunTime), boolCell(a.Spec.Suspend)}
		},
		Done: func(o Object) string {
			a := o.(*imagev1.ImageUpdateAutomation)
			if c := apimeta.FindStatusCondition(a.Status.Conditions, meta.ReadyCondition); c != nil {
				return c.Message
			}
			if a.Status.LastAutomationRunTime != nil {
				return "last run " + timeCell(a.Status.LastAutomationRunTime)
			}
			return "automation not yet run"
		},
		GetExample: "  eddy get images update\n  eddy get images update --all-namespaces",
		New:        func() Object { return &imagev1.ImageUpdateAutomation{} }, NewList: func() client.ObjectList { return &imagev1.ImageUpdateAutomationList{} }},
}

// kustomizationSource is a Kustomization's spec.sourceRef, in its
// namespace unless the reference names one.
func kustomizationSource(o Object) (string, string, string, bool) {
	ks := o.(*kustomizev1.Kustomization)
	ns := ks.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	return ks.Spec.SourceRef.Kind, ns, ks.Spec.SourceRef.Name, true
}

// All are the kinds, Flux's in flux's order of `get all` (the sources
// first, then the image kinds, then the appliers, then notification), then
// Argo CD's.
var All = append(append(sourceRows, imageRows...), otherRows...)

// sourceRows are the rows of the source kinds, in flux's order.
var sourceRows = []Kind{
	{Kind: sourcev1.OCIRepositoryKind, GroupVersion: sourcev1.GroupVersion, Attempted: artifactRevision, Human: "source oci", Use: "oci", Source: true,
		Credentials: func(o Object) string { return secretRef(o.(*sourcev1.OCIRepository).Spec.SecretRef) },
		Revision:    artifactRevision, GetExample: "  eddy get sources oci\n  eddy get sources oci --all-namespaces",
		New: func() Object { return &sourcev1.OCIRepository{} }, NewList: func() client.ObjectList { return &sourcev1.OCIRepositoryList{} }},
	{Kind: sourcev1.BucketKind, GroupVersion: sourcev1.GroupVersion, Attempted: artifactRevision, Human: "source bucket", Use: "bucket", Source: true,
		Credentials: func(o Object) string { return secretRef(o.(*sourcev1.Bucket).Spec.SecretRef) },
		Revision:    artifactRevision, GetExample: "  eddy get sources bucket\n  eddy get sources bucket --all-namespaces",
		New: func() Object { return &sourcev1.Bucket{} }, NewList: func() client.ObjectList { return &sourcev1.BucketList{} }},
	{Kind: sourcev1.GitRepositoryKind, GroupVersion: sourcev1.GroupVersion, Attempted: artifactRevision, Human: "source git", Use: "git", Source: true,
		Credentials: func(o Object) string { return secretRef(o.(*sourcev1.GitRepository).Spec.SecretRef) },
		Revision:    artifactRevision, GetExample: "  eddy get sources git\n  eddy get sources git flux-system -o yaml",
		New: func() Object { return &sourcev1.GitRepository{} }, NewList: func() client.ObjectList { return &sourcev1.GitRepositoryList{} }},
	{Kind: sourcev1.HelmRepositoryKind, GroupVersion: sourcev1.GroupVersion, Human: "source helm", Use: "helm", Source: true,
		Attempted:     artifactRevision,
		Unreconciled:  func(o Object) bool { return o.(*sourcev1.HelmRepository).Spec.Type == sourcev1.HelmRepositoryTypeOCI },
		StaticMessage: "Helm repository is Ready",
		Credentials:   func(o Object) string { return secretRef(o.(*sourcev1.HelmRepository).Spec.SecretRef) },
		Revision:      artifactRevision, GetExample: "  eddy get sources helm\n  eddy get sources helm -A",
		New: func() Object { return &sourcev1.HelmRepository{} }, NewList: func() client.ObjectList { return &sourcev1.HelmRepositoryList{} }},
	{Kind: sourcev1.HelmChartKind, GroupVersion: sourcev1.GroupVersion, Attempted: artifactRevision, Human: "source chart", Use: "chart", Source: true,
		Revision: artifactRevision, GetExample: "  eddy get sources chart\n  eddy get sources chart flux-system-podinfo -o yaml",
		New: func() Object { return &sourcev1.HelmChart{} }, NewList: func() client.ObjectList { return &sourcev1.HelmChartList{} }},
}

// otherRows are the rows of the appliers and notification kinds, then
// Argo CD's.
var otherRows = []Kind{
	{Kind: helmv2.HelmReleaseKind, GroupVersion: helmv2.GroupVersion, Human: "helmrelease", Use: "helmrelease", Aliases: []string{"hr"},
		Plural: "helmreleases", Applier: true, SourceKinds: []string{sourcev1.HelmRepositoryKind, sourcev1.GitRepositoryKind},
		Attempted:  func(o Object) string { return o.(*helmv2.HelmRelease).Status.LastAttemptedRevision },
		Revision:   func(o Object) string { return HelmReleaseRevision(o.(*helmv2.HelmRelease)) },
		GetExample: "  eddy get helmreleases\n  eddy get hr -A\n  eddy get hr podinfo -o yaml",
		GetLong:    "Show the status of HelmReleases; REVISION is the chart version of the newest release (else the one last attempted), as flux shows it.",
		New:        func() Object { return &helmv2.HelmRelease{} }, NewList: func() client.ObjectList { return &helmv2.HelmReleaseList{} }},
	{Kind: kustomizev1.KustomizationKind, GroupVersion: kustomizev1.GroupVersion, Human: "kustomization", Use: "kustomization", Aliases: []string{"ks"},
		Plural: "kustomizations", Applier: true, SourceKinds: []string{sourcev1.OCIRepositoryKind, sourcev1.GitRepositoryKind, sourcev1.BucketKind},
		Attempted:  func(o Object) string { return o.(*kustomizev1.Kustomization).Status.LastAttemptedRevision },
		Revision:   func(o Object) string { return o.(*kustomizev1.Kustomization).Status.LastAppliedRevision },
		GetExample: "  eddy get kustomizations\n  eddy get ks -A\n  eddy get ks flux-system -o json",
		EventsAlso: kustomizationSource,
		New:        func() Object { return &kustomizev1.Kustomization{} }, NewList: func() client.ObjectList { return &kustomizev1.KustomizationList{} }},
	{Kind: notificationv1.ReceiverKind, GroupVersion: notificationv1.GroupVersion, Human: "receiver", Use: "receiver",
		Plural: "receivers", Columns: SuspendedColumns, GetExample: "  eddy get receivers\n  eddy get receiver github -o yaml",
		New: func() Object { return &notificationv1.Receiver{} }, NewList: func() client.ObjectList { return &notificationv1.ReceiverList{} }},
	{Kind: notificationv1.ProviderKind, GroupVersion: notificationv1.GroupVersion, Human: "alert provider", Use: "alert-provider",
		Plural: "alert-providers", NoStatus: true, StaticMessage: "Provider is Ready", Columns: ReadyColumns,
		GetExample: "  eddy get alert-providers -A",
		New:        func() Object { return &notificationv1.Provider{} }, NewList: func() client.ObjectList { return &notificationv1.ProviderList{} }},
	{Kind: notificationv1.AlertKind, GroupVersion: notificationv1.GroupVersion, Human: "alert", Use: "alert",
		Plural: "alerts", NoStatus: true, StaticMessage: "Alert is Ready", Columns: SuspendedColumns,
		GetExample: "  eddy get alerts -n apps",
		New:        func() Object { return &notificationv1.Alert{} }, NewList: func() client.ObjectList { return &notificationv1.AlertList{} }},
	{Kind: argov1.ApplicationKind, GroupVersion: argov1.GroupVersion, Human: "application", Use: "apps", Aliases: []string{"app"},
		Plural: "applications", ArgoCD: true,
		GetExample: "  eddy get apps\n  eddy get apps -A -o wide\n  eddy get app guestbook -o yaml",
		GetLong: "Show Argo CD Applications in argocd app list's table (NAME, CLUSTER, NAMESPACE of the destination, " +
			"PROJECT, STATUS, HEALTH, SYNCPOLICY, CONDITIONS; -o wide adds REPO, PATH and TARGET). " +
			"Without -n the Applications of the argocd namespace; a name outside it reads namespace/name.",
		New: func() Object { return &argov1.Application{} }, NewList: func() client.ObjectList { return &argov1.ApplicationList{} }},
}

// Flux are the rows of All that are Flux's kinds (not ArgoCD), in All's
// order: the kinds of `get <kind>`, `get all`, `suspend`, `resume`,
// `export`, `delete` and the web UI's list of Flux objects.
var Flux = func() []Kind {
	var out []Kind
	for _, k := range All {
		if !k.ArgoCD {
			out = append(out, k)
		}
	}
	return out
}()

// ByKind is the row of the API kind kind, false for a kind not served.
func ByKind(kind string) (Kind, bool) {
	for _, k := range All {
		if k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// ByGroupKind is the row of the API group and kind gk (any version), false
// for a kind not served.
func ByGroupKind(gk schema.GroupKind) (Kind, bool) {
	for _, k := range All {
		if k.Kind == gk.Kind && k.GroupVersion.Group == gk.Group {
			return k, true
		}
	}
	return Kind{}, false
}

// Of is the row of obj's Go type (e.g. *sourcev1.GitRepository), false
// for another type.
func Of(obj client.Object) (Kind, bool) {
	t := reflect.TypeOf(obj)
	for _, k := range All {
		if reflect.TypeOf(k.New()) == t {
			return k, true
		}
	}
	return Kind{}, false
}

// Items are the objects of l, a list of one of the kinds filled by a List.
func Items(l client.ObjectList) []Object {
	items, _ := apimeta.ExtractList(l) // fails only for a type that is no list
	out := make([]Object, 0, len(items))
	for _, it := range items {
		out = append(out, it.(Object))
	}
	return out
}

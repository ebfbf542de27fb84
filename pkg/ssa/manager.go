// Package ssa compares desired objects with live ones and makes the live
// ones match, with server-side apply, the way Flux's kustomize-controller
// does (contract §4.3–4.4): in stages, validating the whole set with
// server-side dry-runs before writing, writing only objects that are new
// or drifted, and deleting objects that left the set. A file per job:
// apply.go (ApplyAll), plan.go (the dry-run of one object), diff.go
// (Manager.Diff and field drift), wait.go (waits on object status),
// delete.go (DeleteStale).
package ssa

import (
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Annotations and labels that steer the applier; matched case-insensitively
// as label or annotation. Flux compatible.
const (
	ReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile" // "disabled": never applied nor pruned
	SSAAnnotation       = "kustomize.toolkit.fluxcd.io/ssa"       // "IfNotPresent", "Ignore", "Merge"
	ForceAnnotation     = "kustomize.toolkit.fluxcd.io/force"     // "enabled": recreate on immutable-field errors
	PruneAnnotation     = "kustomize.toolkit.fluxcd.io/prune"     // "disabled": never pruned
)

// Action is what the applier did to an object.
type Action string

// Actions of a change set. Flux compatible.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	Deleted    Action = "deleted"
	Skipped    Action = "skipped"
	// Replaced (beyond Flux): the object was deleted and created again, with
	// force, because the API server kept a field that the desired object no
	// longer has (see ApplyAll).
	Replaced Action = "replaced"
)

// Change is one object's entry of a change set.
type Change struct {
	Meta    ObjMeta
	Version string
	Action  Action
	// Drift lists, for an existing object that was configured, the fields
	// in which the live object differed from the desired one because
	// another field manager changed them: the live field has a value, set
	// by that manager, and the desired object has another. A change in Git
	// is not drift, nor is a field the applier adds (an owner label on an
	// object it adopts), nor anything on an object the applier had never
	// applied before (its first apply over one made with `kubectl apply`:
	// no Apply entry of the applier, kubectl's last-applied-configuration).
	Drift []FieldDrift
	// Removed lists, sorted, the fields the apply deletes from the live
	// object, like `.data.OLD` or `.spec.ports[port=9090,protocol=TCP]`
	// (a list item by its key; never a value): removed from the desired
	// object (a change in Git), or set by kubectl before the applier
	// adopted the object. A field the server keeps or defaults again is
	// not listed.
	Removed []string
}

// String is `<Kind>/<ns>/<name> <action>`. Flux compatible.
func (c Change) String() string { return c.Meta.String() + " " + string(c.Action) }

// Manager applies and deletes objects as one field manager.
type Manager struct {
	Client client.Client
	// Owner is the field manager, e.g. "kustomize-controller".
	Owner string
	// StageTimeout bounds the wait for CRDs and Namespaces of the first
	// stage (Flux: 60s); Poll is the wait's interval (Flux: 2s).
	StageTimeout, Poll time.Duration
	// Concurrency is the number of dry-runs in flight (Flux's
	// --concurrent-ssa, 4); 0 means 4. Writes stay sequential.
	Concurrency int
	// Memo, when set, skips the dry-run of an object planned Unchanged
	// before against the same live version (see UnchangedMemo); MemoScope
	// names what else the outcome depends on and keys the entries, e.g.
	// the Kustomization and the identity it applies as.
	Memo      *UnchangedMemo
	MemoScope string
	// ListLabels, with a Memo, are label keys whose values on the desired
	// objects select them (e.g. the Kustomization's owner labels): an
	// unchanged reconcile reads the objects that share a kind, a namespace
	// and these values with one LIST instead of a GET each. Empty: a GET
	// each.
	ListLabels []string
	// KeepManagers leaves the fields other field managers hold alone,
	// kubectl's included: a label or key someone added out of band that the
	// desired object does not declare survives every apply, as Argo CD's
	// apply keeps it (argocd-contract §10.5). False is Flux's cleanup
	// (cleanup.go), which takes kubectl's fields over so that the apply
	// removes what Git does not declare.
	KeepManagers bool
}

// ApplyOptions modify ApplyAll.
type ApplyOptions struct {
	// Force recreates objects whose change fails on an immutable field
	// (spec.force); the force annotation does it per object.
	Force bool
	// Ignore leaves fields out of drift detection; an ignored field that
	// another field manager owns (an HPA through the scale subresource, an
	// operator, kubectl) is also left out of the apply, so its value stays
	// theirs.
	Ignore []IgnoreRule
	// BeforeWrite, when set, runs once before the set's first write (after
	// the dry-runs that precede it), e.g. to finish a status write that
	// must land before anything is applied.
	BeforeWrite func()
}

func flag(u *unstructured.Unstructured, key string) string {
	if v, ok := u.GetAnnotations()[key]; ok {
		return strings.ToLower(v)
	}
	return strings.ToLower(u.GetLabels()[key])
}

// reason is the API server's message without the request's object prefix.
func reason(err error) string {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		if msg := s.Status().Message; msg != "" {
			return msg
		}
	}
	return err.Error()
}

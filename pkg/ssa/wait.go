package ssa

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitFirstStage waits until the set's CRDs are Established. Its
// Namespaces exist once applied (the apply's answer says so) or planned
// unchanged.
func (m *Manager) waitFirstStage(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		if stage(u) > 0 || flag(u, ReconcileAnnotation) == "disabled" || flag(u, SSAAnnotation) == "ignore" {
			continue
		}
		if u.GetKind() == "CustomResourceDefinition" {
			err := m.poll(ctx, func() (bool, error) { return m.crdReady(ctx, u), nil })
			if err != nil {
				return fmt.Errorf("%s is not Established: %w", MetaOf(u), err)
			}
		}
	}
	return nil
}

// crdReady reports whether the CRD named like u is Established and its
// kind is mapped by the client's REST mapper. The CRD is read as
// unstructured, so the wait works whatever the client's scheme registers
// (a controller's scheme need not know apiextensions.k8s.io).
func (m *Manager) crdReady(ctx context.Context, u *unstructured.Unstructured) bool {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := m.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd); err != nil {
		return false
	}
	// kstatus reads a CRD as Current once it is Established.
	if res, err := status.Compute(crd); err != nil || res.Status != status.CurrentStatus {
		return false
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	var versions []string
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range vs {
		v, _ := v.(map[string]any)
		if name, _ := v["name"].(string); name != "" && v["served"] == true {
			versions = append(versions, name)
		}
	}
	// The kind must also be mapped before its objects are applied. Naming
	// the versions makes a lazy mapper that already knows the group (from
	// an earlier CRD of it) fetch them, instead of answering from the
	// group's cached version list.
	_, err := m.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind}, versions...)
	return err == nil
}

// crdGVK is the kind of CustomResourceDefinitions (apiextensions.k8s.io/v1).
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

func (m *Manager) poll(ctx context.Context, done func() (bool, error)) error {
	timeout, interval := m.StageTimeout, m.Poll
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	if interval <= 0 {
		interval = 2 * time.Second
	}
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) { return done() })
	if wait.Interrupted(err) {
		return fmt.Errorf("timeout after %s", timeout)
	}
	return err
}

// ObjectStatus is the kstatus status of one object of a set, as WaitForSet
// read it.
type ObjectStatus struct {
	Meta   ObjMeta
	Status status.Status
	// Message is kstatus's message, e.g. a Failed Job's "Job Failed.
	// failed: 1/1".
	Message string
	// Err is why the status could not be read or computed (Status is then
	// Unknown); nil when it was, or when the reader keeps it to itself.
	Err error
	// Object is the object as last read (nil when not found or not kept;
	// WaitForSet keeps none of a Current one), for SetWait.Explain.
	Object *unstructured.Unstructured
	// Detail is SetWait.Explain's answer for an object left Failed or
	// pending, e.g. why its pods are not ready; not part of String.
	Detail string
}

// String is `Kind/namespace/name status: '<status>'`, followed by
// `: <Err>` when Err is set. Flux compatible (fluxcd/pkg ssa WaitForSet).
func (s ObjectStatus) String() string {
	out := fmt.Sprintf("%s status: '%s'", s.Meta, s.Status)
	if s.Err != nil {
		out += ": " + s.Err.Error()
	}
	return out
}

// SetStatus is where WaitForSet left a set: Failed (decided unhealthy) or
// Pending (undecided when its context ended); both empty when every object
// is Current.
type SetStatus struct {
	// Failed lists, in target order, the objects found Failed once every
	// object had a status.
	Failed []ObjectStatus
	// Pending lists, in target order, the objects neither Current nor
	// Failed when the context ended; an object never read is Unknown.
	Pending []ObjectStatus
	// Complete reports whether every object was read at least once.
	Complete bool
}

// TimeoutMessage is "timeout waiting for: [<lines>]", the lines sorted (in
// place) and comma-separated. Flux compatible (fluxcd/pkg ssa WaitForSet).
func TimeoutMessage(lines []string) string {
	sort.Strings(lines)
	return "timeout waiting for: [" + strings.Join(lines, ", ") + "]"
}

// StatusLines are the String of each status.
func StatusLines(ss []ObjectStatus) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return out
}

// SetWait is how WaitForSet reads a set.
type SetWait struct {
	// Poll is the time between rounds; a round reads each object once,
	// the first one at once.
	Poll time.Duration
	// Read reads the status of one object. A read that ends with the
	// context decides nothing; any other error ends the wait with it.
	Read func(ctx context.Context, target ObjMeta) (ObjectStatus, error)
	// FirstRound, when set, is called once every object has been read and
	// the set is still undecided.
	FirstRound func()
	// Explain, when set, says why an object is not Current (Detail), e.g.
	// what its pods show. It is called once per Failed or pending object
	// when the set is decided Failed or ctx's deadline passes (not when ctx
	// is canceled), so its reads cost nothing while the set is polled; after
	// the deadline it gets a context of its own, bounded by ExplainTimeout.
	Explain func(ctx context.Context, s ObjectStatus) string
	// Wake, when set, starts the next round before Poll has passed, e.g.
	// when a watch saw an object change.
	Wake <-chan struct{}
}

// ExplainTimeout bounds the reads of SetWait.Explain for one set.
const ExplainTimeout = 10 * time.Second

// DetailMessage is msg followed by ": " and the Detail of each status that
// has one, as `Kind/namespace/name: <detail>` separated by "; "; msg alone
// when none has. Beyond Flux: Flux's message is msg.
func DetailMessage(msg string, ss []ObjectStatus) string {
	var details []string
	size, more := 0, 0
	for _, s := range ss {
		if s.Detail == "" {
			continue
		}
		d := fmt.Sprintf("%s: %s", s.Meta, s.Detail)
		if size+len(d) > MaxDetail {
			more++
			continue
		}
		size += len(d)
		details = append(details, d)
	}
	if more > 0 {
		details = append(details, fmt.Sprintf("%d more object(s) not explained", more))
	}
	if len(details) == 0 {
		return msg
	}
	return msg + ": " + strings.Join(details, "; ")
}

// MaxDetail bounds, in bytes, the details DetailMessage adds to Flux's
// message: a condition's message holds at most 32768 (the CRDs' maxLength),
// and a longer one makes the API server refuse the whole status.
const MaxDetail = 8192

// explain fills the Detail of each of ss with w.Explain, under ctx (or,
// when ctx's deadline has passed, a context of its own); nothing when ctx
// was canceled.
func (w SetWait) explain(ctx context.Context, ss []ObjectStatus) {
	if w.Explain == nil || len(ss) == 0 {
		return
	}
	if err := ctx.Err(); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return
		}
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, ExplainTimeout)
	defer cancel()
	for i := range ss {
		ss[i].Detail = w.Explain(ctx, ss[i])
	}
}

// WaitForSet reads the status of targets every w.Poll until each is
// Current (an empty SetStatus), one is Failed once every object has a
// status (SetStatus.Failed: all the Failed ones), or ctx ends
// (SetStatus.Pending, and ctx.Err()). The set is judged after each read
// from the latest status of every object. An error of w.Read (not of the
// context) ends the wait with that error. kustomize-controller's health
// checks and helm-controller's kstatus waiter use it; each words the
// outcome (TimeoutMessage, ObjectStatus.String).
func WaitForSet(ctx context.Context, targets []ObjMeta, w SetWait) (SetStatus, error) {
	if len(targets) == 0 {
		return SetStatus{Complete: true}, nil
	}
	latest := make([]*ObjectStatus, len(targets))
	read := 0
	tick := time.NewTicker(w.Poll)
	defer tick.Stop()
	for {
		for i, t := range targets {
			if ctx.Err() != nil {
				return w.pending(ctx, targets, latest, read)
			}
			s, err := w.Read(ctx, t)
			if ctx.Err() != nil { // a read cut by the context decides nothing
				return w.pending(ctx, targets, latest, read)
			}
			if err != nil {
				return SetStatus{}, err
			}
			if latest[i] == nil {
				read++
			} else if s.Object == nil && s.Status == status.UnknownStatus {
				// A failed read (e.g. the client's rate limiter refusing to
				// wait past the deadline) keeps the object last read for
				// Explain.
				s.Object = latest[i].Object
			}
			if s.Status == status.CurrentStatus {
				s.Object = nil // never explained: a large healthy set keeps none
			}
			s.Meta = t
			latest[i] = &s
			if read == len(targets) {
				if st, decided := verdict(latest); decided {
					w.explain(ctx, st.Failed)
					return st, nil
				}
			}
		}
		if w.FirstRound != nil {
			w.FirstRound()
			w.FirstRound = nil
		}
		select {
		case <-ctx.Done():
			return w.pending(ctx, targets, latest, read)
		case <-tick.C:
		case <-w.Wake:
		}
	}
}

// verdict judges a set whose every object has a status: Failed ones, or
// all Current; decided false while some are neither.
func verdict(latest []*ObjectStatus) (SetStatus, bool) {
	st := SetStatus{Complete: true}
	pending := false
	for _, s := range latest {
		switch s.Status {
		case status.CurrentStatus:
		case status.FailedStatus:
			st.Failed = append(st.Failed, *s)
		default:
			pending = true
		}
	}
	return st, len(st.Failed) > 0 || !pending
}

// pending is the set's status when ctx ended, explained when its deadline
// passed, and ctx's error.
func (w SetWait) pending(ctx context.Context, targets []ObjMeta, latest []*ObjectStatus, read int) (SetStatus, error) {
	st := pendingOf(targets, latest, read)
	w.explain(ctx, st.Pending)
	return st, ctx.Err()
}

func pendingOf(targets []ObjMeta, latest []*ObjectStatus, read int) SetStatus {
	st := SetStatus{Complete: read == len(targets)}
	for i, s := range latest {
		switch {
		case s == nil:
			st.Pending = append(st.Pending, ObjectStatus{Meta: targets[i], Status: status.UnknownStatus})
		case s.Status != status.CurrentStatus && s.Status != status.FailedStatus:
			st.Pending = append(st.Pending, *s)
		}
	}
	return st
}

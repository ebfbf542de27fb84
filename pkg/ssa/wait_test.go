package ssa_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func waitTarget(name string) ssa.ObjMeta {
	return ssa.ObjMeta{Namespace: "ns", Name: name, GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}}
}

// statuses reads each object's next status from its script, repeating the
// last one.
func statuses(script map[string][]status.Status) func(context.Context, ssa.ObjMeta) (ssa.ObjectStatus, error) {
	reads := map[string]int{}
	return func(_ context.Context, t ssa.ObjMeta) (ssa.ObjectStatus, error) {
		s := script[t.Name]
		n := min(reads[t.Name], len(s)-1)
		reads[t.Name]++
		return ssa.ObjectStatus{Status: s[n], Message: "m-" + t.Name}, nil
	}
}

func TestWaitForSetEndsWhenEveryObjectIsCurrent(t *testing.T) {
	read := statuses(map[string][]status.Status{
		"a": {status.InProgressStatus, status.CurrentStatus},
		"b": {status.CurrentStatus},
	})
	var first atomic.Int32
	st, err := ssa.WaitForSet(context.Background(), []ssa.ObjMeta{waitTarget("a"), waitTarget("b")},
		ssa.SetWait{Poll: time.Millisecond, Read: read, FirstRound: func() { first.Add(1) }})
	if err != nil || len(st.Failed) > 0 || len(st.Pending) > 0 {
		t.Fatalf("got %+v, %v; want all Current", st, err)
	}
	if first.Load() != 1 {
		t.Errorf("FirstRound called %d times, want once", first.Load())
	}
}

func TestWaitForSetListsEveryFailedObjectOnceAllAreRead(t *testing.T) {
	read := statuses(map[string][]status.Status{
		"a": {status.FailedStatus}, "b": {status.InProgressStatus}, "c": {status.FailedStatus},
	})
	st, err := ssa.WaitForSet(context.Background(), []ssa.ObjMeta{waitTarget("a"), waitTarget("b"), waitTarget("c")},
		ssa.SetWait{Poll: time.Millisecond, Read: read})
	if err != nil || len(st.Failed) != 2 || st.Failed[0].Meta.Name != "a" || st.Failed[1].Meta.Name != "c" || st.Failed[0].Message != "m-a" {
		t.Fatalf("got %+v, %v; want a and c Failed", st, err)
	}
}

func TestWaitForSetTimeoutListsPendingObjectsSorted(t *testing.T) {
	read := statuses(map[string][]status.Status{"b": {status.InProgressStatus}, "a": {status.CurrentStatus}, "c": {status.NotFoundStatus}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	st, err := ssa.WaitForSet(ctx, []ssa.ObjMeta{waitTarget("c"), waitTarget("b"), waitTarget("a")}, ssa.SetWait{Poll: 5 * time.Millisecond, Read: read})
	if !errors.Is(err, context.DeadlineExceeded) || !st.Complete {
		t.Fatalf("got %+v, %v; want a complete set at the deadline", st, err)
	}
	want := "timeout waiting for: [Deployment/ns/b status: 'InProgress', Deployment/ns/c status: 'NotFound']"
	if got := ssa.TimeoutMessage(ssa.StatusLines(st.Pending)); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestWaitForSetObjectNeverReadIsUnknown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	read := func(ctx context.Context, o ssa.ObjMeta) (ssa.ObjectStatus, error) {
		if o.Name == "b" {
			cancel() // the read is cut: it decides nothing
			return ssa.ObjectStatus{Status: status.UnknownStatus, Err: ctx.Err()}, nil
		}
		return ssa.ObjectStatus{Status: status.InProgressStatus}, nil
	}
	st, err := ssa.WaitForSet(ctx, []ssa.ObjMeta{waitTarget("a"), waitTarget("b")}, ssa.SetWait{Poll: time.Hour, Read: read})
	if !errors.Is(err, context.Canceled) || st.Complete || len(st.Pending) != 2 {
		t.Fatalf("got %+v, %v", st, err)
	}
	if got, want := st.Pending[1].String(), "Deployment/ns/b status: 'Unknown'"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWaitForSetStopsOnAReadError(t *testing.T) {
	boom := errors.New("boom")
	read := func(context.Context, ssa.ObjMeta) (ssa.ObjectStatus, error) { return ssa.ObjectStatus{}, boom }
	if _, err := ssa.WaitForSet(context.Background(), []ssa.ObjMeta{waitTarget("a")}, ssa.SetWait{Poll: time.Hour, Read: read}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
}

func TestObjectStatusStringAddsTheReadError(t *testing.T) {
	s := ssa.ObjectStatus{Meta: ssa.ObjMeta{Name: "x", GroupKind: schema.GroupKind{Kind: "Namespace"}}, Status: status.UnknownStatus, Err: errors.New("no CEL")}
	if got, want := s.String(), "Namespace/x status: 'Unknown': no CEL"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// explainer counts its calls and answers "why <name>" with a live context.
func explainer(calls *atomic.Int32) func(context.Context, ssa.ObjectStatus) string {
	return func(ctx context.Context, s ssa.ObjectStatus) string {
		calls.Add(1)
		if ctx.Err() != nil {
			return "dead context"
		}
		return "why " + s.Meta.Name
	}
}

func TestWaitForSetExplainsPendingObjectsAtTheDeadlineOnly(t *testing.T) {
	var calls atomic.Int32
	read := statuses(map[string][]status.Status{"b": {status.InProgressStatus}, "a": {status.CurrentStatus}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	st, err := ssa.WaitForSet(ctx, []ssa.ObjMeta{waitTarget("b"), waitTarget("a")},
		ssa.SetWait{Poll: 5 * time.Millisecond, Read: read, Explain: explainer(&calls)})
	if !errors.Is(err, context.DeadlineExceeded) || len(st.Pending) != 1 {
		t.Fatalf("got %+v, %v", st, err)
	}
	// Once, for the pending object, at the report: not in each round.
	if calls.Load() != 1 {
		t.Errorf("Explain called %d times, want once", calls.Load())
	}
	got := ssa.DetailMessage(ssa.TimeoutMessage(ssa.StatusLines(st.Pending)), st.Pending)
	if want := "timeout waiting for: [Deployment/ns/b status: 'InProgress']: Deployment/ns/b: why b"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestWaitForSetExplainsFailedObjects(t *testing.T) {
	var calls atomic.Int32
	read := statuses(map[string][]status.Status{"a": {status.FailedStatus}, "b": {status.CurrentStatus}})
	st, err := ssa.WaitForSet(context.Background(), []ssa.ObjMeta{waitTarget("a"), waitTarget("b")},
		ssa.SetWait{Poll: time.Hour, Read: read, Explain: explainer(&calls)})
	if err != nil || len(st.Failed) != 1 || st.Failed[0].Detail != "why a" || calls.Load() != 1 {
		t.Fatalf("got %+v, %v, %d calls", st, err, calls.Load())
	}
}

func TestWaitForSetCanceledExplainsNothing(t *testing.T) {
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	read := func(context.Context, ssa.ObjMeta) (ssa.ObjectStatus, error) {
		cancel()
		return ssa.ObjectStatus{Status: status.InProgressStatus}, nil
	}
	if _, err := ssa.WaitForSet(ctx, []ssa.ObjMeta{waitTarget("a")}, ssa.SetWait{Poll: time.Hour, Read: read, Explain: explainer(&calls)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if calls.Load() != 0 {
		t.Errorf("Explain called %d times after a cancel", calls.Load())
	}
}

func TestDetailMessageWithoutDetailIsFluxs(t *testing.T) {
	if got := ssa.DetailMessage("m", []ssa.ObjectStatus{{Meta: waitTarget("a")}}); got != "m" {
		t.Errorf("got %q", got)
	}
}

func TestWaitForSetKeepsTheLastObjectReadForExplainAfterAFailedRead(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"kind": "Deployment"}}
	reads := 0
	read := func(context.Context, ssa.ObjMeta) (ssa.ObjectStatus, error) {
		reads++
		if reads == 1 {
			return ssa.ObjectStatus{Status: status.InProgressStatus, Object: obj}, nil
		}
		return ssa.ObjectStatus{Status: status.UnknownStatus, Err: errors.New("rate limiter")}, nil
	}
	var explained *unstructured.Unstructured
	explain := func(_ context.Context, s ssa.ObjectStatus) string { explained = s.Object; return "" }
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	st, _ := ssa.WaitForSet(ctx, []ssa.ObjMeta{waitTarget("a")}, ssa.SetWait{Poll: 5 * time.Millisecond, Read: read, Explain: explain})
	if reads < 2 || explained != obj || len(st.Pending) != 1 || st.Pending[0].Status != status.UnknownStatus {
		t.Errorf("after %d reads: explained %v, pending %+v; want the object of the first read, status Unknown", reads, explained, st.Pending)
	}
}

// The details of 100 workloads, each as long as PodsDetail makes them,
// stay within a condition's maxLength (32768) beside Flux's own message;
// the objects past the bound are counted.
func TestDetailMessageOfManyObjectsIsBounded(t *testing.T) {
	var ss []ssa.ObjectStatus
	for i := 0; i < 100; i++ {
		ss = append(ss, ssa.ObjectStatus{Meta: waitTarget(fmt.Sprintf("w%03d", i)), Detail: strings.Repeat("x", 600)})
	}
	got := ssa.DetailMessage("m", ss)
	if len(got) > 8192+200 || !strings.HasSuffix(got, " more object(s) not explained") {
		t.Errorf("%d bytes, ends %q", len(got), got[len(got)-60:])
	}
}

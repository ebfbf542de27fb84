package controller

import (
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRetryWaitGrowsByFactorUpToMaxDuration(t *testing.T) {
	three := int64(3)
	cases := []struct {
		name string
		s    argov1.RetryStrategy
		n    int64
		want time.Duration
	}{
		{"default first", argov1.RetryStrategy{}, 0, 5 * time.Second},
		{"default third", argov1.RetryStrategy{}, 2, 20 * time.Second},
		{"default capped at 3m", argov1.RetryStrategy{}, 10, 3 * time.Minute},
		{"bare seconds", argov1.RetryStrategy{Backoff: &argov1.Backoff{Duration: "2", Factor: &three, MaxDuration: "60"}}, 2, 18 * time.Second},
		{"durations", argov1.RetryStrategy{Backoff: &argov1.Backoff{Duration: "1s", Factor: &three, MaxDuration: "5s"}}, 2, 5 * time.Second},
	}
	for _, c := range cases {
		if got := retryWait(c.s, c.n); got != c.want {
			t.Errorf("%s: retryWait(%d) = %s, want %s", c.name, c.n, got, c.want)
		}
	}
}

func TestWaveGateWaitsTheDelayAfterAStepOfTheSameOperation(t *testing.T) {
	var g waveGate
	now := time.Unix(1_700_000_000, 0)
	app := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "a"}}
	st := &argov1.OperationState{StartedAt: metav1.NewTime(now)}
	key := waveKey(app, st)
	if w := g.remaining(key, 2*time.Second, now); w != 0 {
		t.Errorf("before any step: wait %s", w)
	}
	g.mark(key, now)
	if w := g.remaining(key, 2*time.Second, now.Add(500*time.Millisecond)); w != 1500*time.Millisecond {
		t.Errorf("0.5s after a step: wait %s, want 1.5s", w)
	}
	other := waveKey(app, &argov1.OperationState{StartedAt: metav1.NewTime(now.Add(time.Minute))})
	if w := g.remaining(other, 2*time.Second, now); w != 0 {
		t.Errorf("another operation of the app waits %s", w)
	}
	g.forget(key)
	if w := g.remaining(key, 2*time.Second, now); w != 0 {
		t.Errorf("after forget: wait %s", w)
	}
}

func TestFailedMessageListsReasons(t *testing.T) {
	if got := failedMessage("one or more objects failed to apply", nil); got != "one or more objects failed to apply" {
		t.Errorf("no reasons: %q", got)
	}
	if got := failedMessage("one or more objects failed to apply", []string{"a", "b"}); got != "one or more objects failed to apply, reason: a,b" {
		t.Errorf("two reasons: %q", got)
	}
}

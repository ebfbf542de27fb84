package app

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func manual() *argov1.Application {
	a := seed()
	a.Spec.SyncPolicy.Automated = nil
	a.Spec.SyncPolicy.Retry = &argov1.RetryStrategy{Limit: 3}
	return a
}

// The patch is what Argo CD's API server writes: operation.sync with the
// spec's source, the options, the strategy, the initiator; operationState
// cleared; the resourceVersion as a precondition.
func TestSyncOperationPatch(t *testing.T) {
	a := manual()
	op, err := SyncOperation(a, SyncRequest{Revision: "v2", Prune: true, DryRun: true,
		Resources:   []string{"apps:Deployment:payment-api", ":ConfigMap:production/payment-config"},
		SyncOptions: []string{"PruneLast=false", "ServerSideApply=true"}, Username: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	patch, err := OperationPatch(a, op)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(`{
		"metadata": {"resourceVersion": "42"},
		"status": {"operationState": null},
		"operation": {
			"initiatedBy": {"username": "alice"},
			"retry": {"limit": 3},
			"sync": {
				"revision": "v2", "prune": true, "dryRun": true,
				"source": {"repoURL": "https://github.com/acme/infra-k8s.git", "targetRevision": "main", "path": "apps/payment-api"},
				"syncOptions": ["CreateNamespace=true", "PruneLast=false", "ServerSideApply=true"],
				"syncStrategy": {"hook": {}},
				"resources": [
					{"group": "apps", "kind": "Deployment", "namespace": "production", "name": "payment-api"},
					{"kind": "ConfigMap", "namespace": "production", "name": "payment-config"}
				]
			}
		}}`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("patch:\n%s", g)
	}
}

func TestSyncOperationRefusals(t *testing.T) {
	auto := seed()
	if _, err := SyncOperation(auto, SyncRequest{Revision: "v2"}); err == nil || err.Error() != "Cannot sync to v2: auto-sync currently set to main" {
		t.Errorf("sync of an automated app to another revision: %v", err)
	}
	if _, err := SyncOperation(auto, SyncRequest{Revision: "main"}); err != nil {
		t.Errorf("sync of an automated app to its target: %v", err)
	}
	if _, err := SyncOperation(auto, SyncRequest{Revision: "v2", DryRun: true}); err != nil {
		t.Errorf("dry-run sync of an automated app to another revision: %v", err)
	}
	if _, err := SyncOperation(manual(), SyncRequest{Strategy: "replace"}); err == nil {
		t.Error("an unknown strategy was accepted")
	}
	if _, err := SyncOperation(manual(), SyncRequest{Resources: []string{"apps:StatefulSet:x"}}); err == nil ||
		!strings.Contains(err.Error(), "no resource of the application matches apps:StatefulSet:x") {
		t.Errorf("a --resource matching nothing: %v", err)
	}
	busy := manual()
	busy.Operation = &argov1.Operation{Sync: &argov1.SyncOperation{}}
	if _, err := OperationPatch(busy, &argov1.Operation{}); err != ErrOperationInProgress || err.Error() != "another operation is already in progress" {
		t.Errorf("patch while an operation is set: %v", err)
	}
	deleting := manual()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if _, err := SyncOperation(deleting, SyncRequest{}); err == nil {
		t.Error("sync of an app being deleted was accepted")
	}
}

func TestSyncStrategy(t *testing.T) {
	op, err := SyncOperation(manual(), SyncRequest{Strategy: "apply", Force: true})
	if err != nil || op.Sync.SyncStrategy.Apply == nil || !op.Sync.SyncStrategy.Apply.Force || op.Sync.SyncStrategy.Hook != nil {
		t.Errorf("--strategy apply --force = %+v, %v", op.Sync.SyncStrategy, err)
	}
}

func TestSelectResources(t *testing.T) {
	a := seed()
	for _, c := range []struct {
		specs []string
		want  []string
	}{
		{[]string{":Service:payment-api"}, []string{"Service/payment-api"}},
		{[]string{"*:*:payment-api"}, []string{"Service/payment-api", "Deployment/payment-api"}},
		{[]string{"!apps:Deployment:*"}, []string{"Service/payment-api", "ConfigMap/payment-config"}},
		{[]string{":*:production/*", "!:ConfigMap:*"}, []string{"Service/payment-api"}},
		{[]string{"apps:Deployment:other/payment-api"}, nil},
	} {
		got, err := SelectResources(a, c.specs)
		var names []string
		for _, r := range got {
			names = append(names, r.Kind+"/"+r.Name)
		}
		if !reflect.DeepEqual(names, c.want) || (c.want == nil) != (err != nil) {
			t.Errorf("SelectResources(%q) = %q, %v; want %q", c.specs, names, err, c.want)
		}
	}
	for _, bad := range []string{"Deployment:x", "a:b:c:d", "a:b:ns/x/y"} {
		if _, err := ParseResource(bad); err == nil {
			t.Errorf("ParseResource(%q) accepted", bad)
		}
	}
}

func TestMergeSyncOptions(t *testing.T) {
	got := MergeSyncOptions([]string{"CreateNamespace=true", "Prune=true"}, []string{"Prune=false", "Validate=false"})
	want := []string{"CreateNamespace=true", "Prune=false", "Validate=false"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MergeSyncOptions = %q, want %q", got, want)
	}
}

func TestRollbackOperation(t *testing.T) {
	if _, err := RollbackOperation(seed(), &seed().Status.History[0], false, false, "alice"); err == nil ||
		err.Error() != "rollback cannot be initiated when auto-sync is enabled" {
		t.Errorf("rollback of an automated app: %v", err)
	}
	a := manual()
	h, _ := FindHistory(a, -1)
	op, err := RollbackOperation(a, h, true, false, "alice")
	if err != nil {
		t.Fatal(err)
	}
	s := op.Sync
	if s.Revision != "1111111aaaa" || s.Source == nil || s.Source.RepoURL != "https://github.com/acme/infra-k8s.git" || !s.Prune ||
		s.SyncStrategy.Apply == nil || s.SyncStrategy.Hook != nil || op.InitiatedBy.Username != "alice" ||
		!reflect.DeepEqual(s.SyncOptions, []string{"CreateNamespace=true", "PruneLast=true"}) {
		t.Errorf("rollback operation = %+v", s)
	}
}

func TestReadyAndDone(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(5 * time.Second))
	later := metav1.NewTime(end.Add(time.Second))
	op := argov1.Operation{Sync: &argov1.SyncOperation{}}
	for _, c := range []struct {
		name      string
		change    func(a *argov1.Application)
		w         WaitFor
		wantReady bool
		wantDone  bool
	}{
		{"synced and healthy, no operation", func(*argov1.Application) {}, WaitFor{}.OrDefault(), true, true},
		{"operation requested", func(a *argov1.Application) { a.Operation = &op }, WaitFor{Operation: true}, false, false},
		{"operation running", func(a *argov1.Application) {
			a.Status.OperationState = &argov1.OperationState{Phase: "Running", StartedAt: start}
		}, WaitFor{Operation: true}, true, false},
		{"operation ended, not compared since", func(a *argov1.Application) {
			a.Status.OperationState = &argov1.OperationState{Phase: "Succeeded", StartedAt: start, FinishedAt: &end}
			a.Status.ReconciledAt = &start
		}, WaitFor{Operation: true}, true, false},
		{"operation ended, compared since", func(a *argov1.Application) {
			a.Status.OperationState = &argov1.OperationState{Phase: "Succeeded", StartedAt: start, FinishedAt: &end}
			a.Status.ReconciledAt = &later
		}, WaitFor{Operation: true}, true, true},
		{"dry run ended", func(a *argov1.Application) {
			a.Status.OperationState = &argov1.OperationState{Phase: "Succeeded", StartedAt: start, FinishedAt: &end,
				Operation: argov1.Operation{Sync: &argov1.SyncOperation{DryRun: true}}}
		}, WaitFor{Operation: true}, true, true},
		{"out of sync", func(a *argov1.Application) { a.Status.Sync.Status = "OutOfSync" }, WaitFor{Sync: true}, false, false},
		{"degraded wanted", func(a *argov1.Application) { a.Status.Health.Status = "Degraded" }, WaitFor{Degraded: true, Suspended: true}, true, true},
		{"healthy, suspended wanted", func(*argov1.Application) {}, WaitFor{Suspended: true}, false, false},
	} {
		a := seed()
		c.change(a)
		ready, _ := Ready(a, c.w)
		if ready != c.wantReady || Done(a, c.w) != c.wantDone {
			t.Errorf("%s: Ready %v, Done %v; want %v, %v", c.name, ready, Done(a, c.w), c.wantReady, c.wantDone)
		}
	}
}

func TestCheckSyncResult(t *testing.T) {
	requested := time.Date(2026, 1, 2, 4, 0, 0, 500_000_000, time.UTC)
	started := metav1.NewTime(requested.Truncate(time.Second))
	for _, c := range []struct {
		name   string
		st     *argov1.OperationState
		status string
		want   string
	}{
		{"succeeded", &argov1.OperationState{Phase: "Succeeded", StartedAt: started}, "Synced", ""},
		{"no state", nil, "Synced", "the operation ended without a result in status.operationState"},
		{"older state", &argov1.OperationState{Phase: "Succeeded", StartedAt: metav1.NewTime(started.Add(-time.Second))}, "Synced", "the operation ended without a result in status.operationState"},
		{"failed", &argov1.OperationState{Phase: "Failed", Message: "one or more objects failed to apply", StartedAt: started}, "OutOfSync",
			"Operation has completed with phase: Failed: one or more objects failed to apply"},
		{"unpruned", &argov1.OperationState{Phase: "Succeeded", StartedAt: started, SyncResult: &argov1.SyncOperationResult{Resources: []*argov1.ResourceResult{
			{Kind: "ConfigMap", Name: "old", Status: "PruneSkipped"}, {Kind: "ConfigMap", Name: "new", Status: "Synced"}}}}, "OutOfSync", "1 resources require pruning"},
	} {
		a := seed()
		a.Status.OperationState, a.Status.Sync.Status = c.st, c.status
		err := CheckSyncResult(a, requested, false)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%s: no error, want %q", c.name, c.want)
		}
	}
}

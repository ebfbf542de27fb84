package e2e

import (
	"fmt"
	"slices"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestSyncOrderOfHooksAndWaves runs helm-hooks, pre-post-sync and
// sync-waves of argocd-example-apps and checks, from watch events ordered
// by resourceVersion, the order argocd-contract §9 lists: phases, waves
// and kinds, the generated hook name <generateName><sha7>-presync-<unix>,
// a workload of an early wave available before the next wave's first
// object exists, HookSucceeded Jobs deleted at the end, and for
// sync-waves, a second sync that recreates the named Jobs and adds a
// generated-name one.
func TestSyncOrderOfHooksAndWaves(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := exampleRepo(t)
	sha7 := repo.MustGit(t, "rev-parse", "HEAD")[:7]
	presync := func(app *argov1.Application) string {
		return fmt.Sprintf("Job/upgrade-sql-schema%s-presync-%d", sha7, app.Status.OperationState.StartedAt.Unix())
	}
	t.Run("helm-hooks", func(t *testing.T) {
		t.Parallel()
		ns := uniqueName("hooks")
		rec := record(t, ns)
		app := exampleApp(uniqueName("helm-hooks"), repo.URL(), "helm-hooks", ns, nil)
		create(t, app)
		waitApp(t, app, "Synced, Healthy, operation Succeeded", func() bool {
			return syncedHealthy(app)() && opPhase(app, argov1.OperationSucceeded)()
		})
		checkSteps(t, rec.created(), [][]string{{presync(app)}, {"Job/maint-page-up"}, {"ReplicaSet/frontend"},
			{"Service/frontend"}, {"Job/maint-page-down"}})
		if a, s := rec.rvOf("ReplicaSet/frontend", watch.Modified, true), rec.rvOf("Service/frontend", watch.Added, false); a == 0 || a > s {
			t.Errorf("Service/frontend (wave 2) created before ReplicaSet/frontend (wave 0) was available: %d > %d", a, s)
		}
		want := []string{"maint-page-down", "maint-page-up", presync(app)[len("Job/"):]}
		slices.Sort(want)
		if got := jobNames(t, ns); !slices.Equal(got, want) {
			t.Errorf("Jobs %v, want %v (the hooks stay)", got, want)
		}
	})
	t.Run("pre-post-sync", func(t *testing.T) {
		t.Parallel()
		ns := uniqueName("prepost")
		rec := record(t, ns)
		app := exampleApp(uniqueName("pre-post-sync"), repo.URL(), "pre-post-sync", ns, nil)
		create(t, app)
		waitApp(t, app, "Synced, Healthy, operation Succeeded", func() bool {
			return syncedHealthy(app)() && opPhase(app, argov1.OperationSucceeded)()
		})
		checkSteps(t, rec.created(), [][]string{{"Job/pre-post-sync-before"},
			{"Service/pre-post-sync-kustomize-guestbook-ui", "Deployment/pre-post-sync-kustomize-guestbook-ui"},
			{"Job/pre-post-sync-after"}})
		if a, s := rec.rvOf("Deployment/pre-post-sync-kustomize-guestbook-ui", watch.Modified, true), rec.rvOf("Job/pre-post-sync-after", watch.Added, false); a == 0 || a > s {
			t.Errorf("the PostSync Job was created before the Deployment was available: %d > %d", a, s)
		}
		if got := jobNames(t, ns); len(got) != 0 {
			t.Errorf("Jobs %v left: HookSucceeded hooks are deleted when the operation succeeds", got)
		}
		for _, name := range []string{"pre-post-sync-before", "pre-post-sync-after"} {
			if r := resultOf(app, "Job", name); r == nil || r.HookPhase != argov1.OperationSucceeded {
				t.Errorf("result of Job %s: %+v, want hookPhase Succeeded", name, r)
			}
		}
	})
	t.Run("sync-waves", func(t *testing.T) {
		t.Parallel()
		ns := uniqueName("waves")
		rec := record(t, ns)
		app := exampleApp(uniqueName("sync-waves"), repo.URL(), "sync-waves", ns, nil)
		create(t, app)
		waitApp(t, app, "Synced, Healthy, operation Succeeded", func() bool {
			return syncedHealthy(app)() && opPhase(app, argov1.OperationSucceeded)()
		})
		first := presync(app)
		checkSteps(t, rec.created(), [][]string{{first}, {"Service/backend", "ReplicaSet/backend"}, {"Job/maint-page-up"},
			{"Service/frontend", "ReplicaSet/frontend"}, {"Job/maint-page-down"}})
		if a, s := rec.rvOf("ReplicaSet/backend", watch.Modified, true), rec.rvOf("Job/maint-page-up", watch.Added, false); a == 0 || a > s {
			t.Errorf("wave 1 created before ReplicaSet/backend (wave 0) was available: %d > %d", a, s)
		}
		var rs appsv1.ReplicaSetList
		var svcs corev1.ServiceList
		if err := env.Client.List(t.Context(), &rs, inNS(ns)); err != nil || len(rs.Items) != 2 {
			t.Errorf("%d ReplicaSets, want 2 (%v)", len(rs.Items), err)
		}
		if err := env.Client.List(t.Context(), &svcs, inNS(ns)); err != nil || len(svcs.Items) != 2 {
			t.Errorf("%d Services, want 2 (%v)", len(svcs.Items), err)
		}
		if got := jobNames(t, ns); len(got) != 3 {
			t.Fatalf("Jobs %v, want 3", got)
		}
		uid := func(name string) string {
			j := &batchv1.Job{}
			if !exists(t, j, ns, name) {
				return ""
			}
			return string(j.UID)
		}
		up, down := uid("maint-page-up"), uid("maint-page-down")

		requestSync(t, app, syncOp("CreateNamespace=true"))
		waitApp(t, app, "a second operation Succeeded", func() bool {
			return opPhase(app, argov1.OperationSucceeded)() && presync(app) != first
		})
		second := presync(app)
		want := []string{"maint-page-down", "maint-page-up", first[len("Job/"):], second[len("Job/"):]}
		slices.Sort(want)
		if got := jobNames(t, ns); !slices.Equal(got, want) {
			t.Errorf("Jobs after the second sync %v, want %v", got, want)
		}
		if uid("maint-page-up") == up || uid("maint-page-down") == down {
			t.Errorf("the BeforeHookCreation Jobs were not recreated by the second sync")
		}
		if len(app.Status.History) != 2 {
			t.Errorf("%d history entries, want 2", len(app.Status.History))
		}
	})
}

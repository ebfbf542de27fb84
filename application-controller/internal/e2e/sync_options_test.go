package e2e

import (
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncedApp creates a manual Application of files' app/ directory and
// syncs it once; it returns the app, its namespace and repository.
func syncedApp(t *testing.T, prefix string, files map[string]string, edit func(*argov1.Application)) (*argov1.Application, string, func(map[string]string) string) {
	t.Helper()
	repo := gitSrv.NewRepo(t, files)
	ns := uniqueName(prefix)
	app := manualApp(uniqueName(prefix), repo.URL(), "app", ns)
	if edit != nil {
		edit(app)
	}
	create(t, app)
	waitApp(t, app, "OutOfSync", func() bool { return app.Status.Sync.Status == argov1.SyncStatusOutOfSync })
	requestSync(t, app, syncOp("CreateNamespace=true"))
	waitApp(t, app, "Synced", func() bool {
		return opPhase(app, argov1.OperationSucceeded)() && app.Status.Sync.Status == argov1.SyncStatusSynced
	})
	commit := func(files map[string]string) string {
		sha := repo.MustCommit(t, files, "change")
		refresh(t, app)
		waitApp(t, app, "OutOfSync at the new commit", func() bool {
			return app.Status.Sync.Status == argov1.SyncStatusOutOfSync && app.Status.Sync.Revision == sha
		})
		return sha
	}
	return app, ns, commit
}

// syncWith requests a sync with opts and waits until it succeeded (a new
// history entry: start times have a one-second resolution).
func syncWith(t *testing.T, app *argov1.Application, opts ...string) {
	t.Helper()
	n := len(app.Status.History)
	requestSync(t, app, syncOp(append([]string{"CreateNamespace=true"}, opts...)...))
	waitApp(t, app, "operation Succeeded", func() bool {
		return opPhase(app, argov1.OperationSucceeded)() && len(app.Status.History) == n+1
	})
}

func getCM(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if !exists(t, cm, ns, name) {
		t.Fatalf("ConfigMap %s missing", name)
	}
	return cm
}

// TestSyncOptions checks the sync options of argocd-contract §1.9 that
// change how a sync writes, each read from the operation's syncOptions.
func TestSyncOptions(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	t.Run("ApplyOutOfSyncOnly writes only the OutOfSync object", func(t *testing.T) {
		t.Parallel()
		ignore := func(app *argov1.Application) {
			app.Spec.IgnoreDifferences = []argov1.ResourceIgnoreDifferences{{Kind: "ConfigMap", Name: "a", JSONPointers: []string{"/data/v"}}}
		}
		app, ns, commit := syncedApp(t, "oosonly", map[string]string{"app/a.yaml": configMapDoc("a", "0", "one"), "app/b.yaml": configMapDoc("b", "0", "one")}, ignore)
		// An ignored difference: a stays Synced, but a full apply would undo it.
		a := getCM(t, ns, "a")
		a.Data["v"] = "edited"
		if err := env.Client.Update(t.Context(), a, client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
		commit(map[string]string{"app/b.yaml": configMapDoc("b", "0", "two")})
		rv := getCM(t, ns, "a").ResourceVersion
		syncWith(t, app, "ApplyOutOfSyncOnly=true")
		if b := getCM(t, ns, "b"); b.Data["v"] != "two" {
			t.Errorf("b %v, want the new commit's value", b.Data)
		}
		if a := getCM(t, ns, "a"); a.ResourceVersion != rv || a.Data["v"] != "edited" {
			t.Errorf("a was written (resourceVersion %s → %s, data %v)", rv, a.ResourceVersion, a.Data)
		}
		if resultOf(app, "ConfigMap", "a") != nil || resultOf(app, "ConfigMap", "b") == nil {
			t.Errorf("results: %s, want only b", describeResults(app))
		}
	})
	t.Run("PruneLast prunes after the last wave", func(t *testing.T) {
		t.Parallel()
		app, ns, commit := syncedApp(t, "prunelast", map[string]string{"app/old.yaml": configMapDoc("old", "0", "one")}, nil)
		rec := record(t, ns)
		commit(map[string]string{"app/old.yaml": "", "app/w0.yaml": configMapDoc("w0", "0", "one"), "app/w1.yaml": configMapDoc("w1", "1", "one")})
		syncWith(t, app, "PruneLast=true")
		pruned, w1 := rec.waitEvent(t, "ConfigMap/old", watch.Deleted), rec.waitEvent(t, "ConfigMap/w1", watch.Added)
		if pruned < w1 {
			t.Errorf("ConfigMap old pruned (rv %d) before wave 1 was applied (rv %d)", pruned, w1)
		}
		if r := resultOf(app, "ConfigMap", "old"); r == nil || r.Status != argov1.ResultPruned {
			t.Errorf("results: %s", describeResults(app))
		}
	})
	t.Run("Replace=true replaces the object whole", func(t *testing.T) {
		t.Parallel()
		app, ns, commit := syncedApp(t, "replace", map[string]string{"app/r.yaml": configMapDoc("r", "0", "one")}, nil)
		r := getCM(t, ns, "r")
		r.Data["extra"] = "added by hand" // an apply keeps it, a replace does not
		if err := env.Client.Update(t.Context(), r, client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
		commit(map[string]string{"app/r.yaml": configMapDoc("r", "0", "two")})
		syncWith(t, app, "Replace=true")
		if r := getCM(t, ns, "r"); r.Data["v"] != "two" || r.Data["extra"] != "" {
			t.Errorf("data %v, want only v: two", r.Data)
		}
		if res := resultOf(app, "ConfigMap", "r"); res == nil || res.Message != "configmap/r replaced" {
			t.Errorf("results: %s", describeResults(app))
		}
	})
	t.Run("Validate=false is accepted", func(t *testing.T) {
		t.Parallel()
		app, ns, commit := syncedApp(t, "novalidate", map[string]string{"app/c.yaml": configMapDoc("c", "0", "one")}, nil)
		commit(map[string]string{"app/c.yaml": configMapDoc("c", "0", "two")})
		syncWith(t, app, "Validate=false")
		if c := getCM(t, ns, "c"); c.Data["v"] != "two" {
			t.Errorf("data %v", c.Data)
		}
	})
	t.Run("FailOnSharedResource fails on an object another app tracks", func(t *testing.T) {
		t.Parallel()
		files := map[string]string{"app/shared.yaml": configMapDoc("shared", "0", "one")}
		owner, ns, _ := syncedApp(t, "shared", files, nil)
		repo := gitSrv.NewRepo(t, map[string]string{"app/shared.yaml": configMapDoc("shared", "0", "two")})
		other := manualApp(uniqueName("sharing"), repo.URL(), "app", ns)
		create(t, other)
		waitApp(t, other, "SharedResourceWarning", func() bool { return condition(other, argov1.ConditionSharedResourceWarning) != "" })
		requestSync(t, other, syncOp("FailOnSharedResource=true"))
		waitApp(t, other, "operation Failed", opPhase(other, argov1.OperationFailed))
		msg := other.Status.OperationState.Message
		if want := "Shared resource found: ConfigMap/shared is part of applications"; !strings.HasPrefix(msg, want) || !strings.Contains(msg, owner.Name) {
			t.Errorf("message %q, want %q… naming %s", msg, want, owner.Name)
		}
		cm := getCM(t, ns, "shared")
		if cm.Data["v"] != "one" || !strings.HasPrefix(cm.Annotations[argov1.AnnotationTrackingID], owner.Name+":") {
			t.Errorf("the shared object was taken over: %v %v", cm.Data, cm.Annotations)
		}
	})
}

package e2e

import (
	"slices"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestSyncResumesAfterControllerKilled kills application-controller
// (SIGKILL) in the middle of a multi-step sync, while a generated-name
// PreSync hook runs after a named one completed. While it is down,
// source-controller goes on (it fetches a new commit). Restarted, the
// controller resumes the operation from its recorded results: neither
// hook is created again (same UIDs, no second generated-name Job), the
// operation stays on the revision it started with, and completes once the
// hook does. Not parallel: the kill stops every Application's reconciling.
func TestSyncResumesAfterControllerKilled(t *testing.T) {
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/prepare.yaml": job("prepare", []string{"argocd.argoproj.io/hook: PreSync", `argocd.argoproj.io/sync-wave: "-1"`}, false),
		"app/migrate.yaml": job("migrate-", []string{"argocd.argoproj.io/hook: PreSync"}, true),
		"app/cm.yaml":      configMapDoc("settings", "0", "one"),
	})
	first := repo.MustGit(t, "rev-parse", "HEAD")
	app, ns := startSync(t, repo, "killed")
	waitApp(t, app, "waiting for the generated-name hook", running(app, "waiting for completion of hook batch/Job/migrate-"))
	jobs := jobNames(t, ns)
	uids := jobUIDs(t, ns, jobs)
	if len(jobs) != 2 {
		t.Fatalf("Jobs %v, want prepare and one migrate-…", jobs)
	}

	ctrls.Proc("application-controller").Kill()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			restart(t, "application-controller") // for the tests after this one
		}
	})
	second := repo.MustCommit(t, map[string]string{"app/cm.yaml": configMapDoc("settings", "0", "two")}, "two")
	git := appGitRepository(t, repo.URL())
	testenv.RequestReconcile(t, env.Client, git, func() string { return git.Status.LastHandledReconcileAt })
	testenv.WaitForTimeout(t, env.Client, git, "source-controller fetched the new commit", appTimeout, func() bool {
		return git.Status.Artifact != nil && strings.HasSuffix(git.Status.Artifact.Revision, second)
	})

	restart(t, "application-controller")
	restarted = true
	// The restarted controller works again (a refresh is handled) and the
	// operation still waits for the same hook.
	refresh(t, app)
	waitApp(t, app, "refreshed by the restarted controller", func() bool {
		_, ok := app.Annotations[argov1.AnnotationRefresh]
		return !ok && running(app, "waiting for completion of hook batch/Job/migrate-")()
	})
	if got := jobNames(t, ns); !slices.Equal(got, jobs) {
		t.Fatalf("Jobs after the restart %v, want %v", got, jobs)
	}
	migrate := jobs[slices.IndexFunc(jobs, func(n string) bool { return strings.HasPrefix(n, "migrate-") })]
	releaseJobPods(t, ns, migrate)
	waitApp(t, app, "operation Succeeded", opPhase(app, argov1.OperationSucceeded))
	if got := jobUIDs(t, ns, jobs); !slices.Equal(got, uids) {
		t.Errorf("hooks recreated after the restart: UIDs %v, then %v", uids, got)
	}
	if got := jobNames(t, ns); !slices.Equal(got, jobs) {
		t.Errorf("Jobs %v, want %v", got, jobs)
	}
	cm := &corev1.ConfigMap{}
	if !exists(t, cm, ns, "settings") || cm.Data["v"] != "one" {
		t.Errorf("ConfigMap settings %v: want the started revision's value one", cm.Data)
	}
	if h := app.Status.History; len(h) != 1 || h[0].Revision != first {
		t.Errorf("history %+v, want one entry at %s", h, first)
	}
	for _, name := range jobs {
		j := &batchv1.Job{}
		if exists(t, j, ns, name) && slices.Contains(j.Finalizers, argov1.FinalizerHook) {
			t.Errorf("Job %s keeps the hook finalizer after the operation", name)
		}
	}
}

// jobUIDs are the UIDs of Jobs names in ns.
func jobUIDs(t *testing.T, ns string, names []string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		j := &batchv1.Job{}
		if !exists(t, j, ns, n) {
			t.Fatalf("Job %s missing", n)
		}
		out = append(out, string(j.UID))
	}
	return out
}

// appGitRepository is the GitRepository application-controller made for url.
func appGitRepository(t *testing.T, url string) *sourcev1.GitRepository {
	t.Helper()
	var list sourcev1.GitRepositoryList
	if err := env.Client.List(t.Context(), &list, inNS(argocd)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if strings.TrimSuffix(list.Items[i].Spec.URL, ".git") == strings.TrimSuffix(url, ".git") {
			return &list.Items[i]
		}
	}
	t.Fatalf("no GitRepository for %s", url)
	return nil
}

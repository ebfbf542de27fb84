package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// application is Application i of a run with n, as an Argo CD user writes
// it: a directory source on apps/<i> at main, automated with prune and
// self-heal, CreateNamespace, into the namespace dest.
func application(n, i int, url, dest string) *argov1.Application {
	yes := true
	return &argov1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: appName(n, i), Namespace: argocd},
		Spec: argov1.ApplicationSpec{
			Project:     "default",
			Source:      &argov1.ApplicationSource{RepoURL: url, TargetRevision: "main", Path: fmt.Sprintf("apps/%d", i)},
			Destination: argov1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: dest},
			SyncPolicy: &argov1.SyncPolicy{
				Automated:   &argov1.SyncPolicyAutomated{Prune: &yes, SelfHeal: &yes},
				SyncOptions: []string{"CreateNamespace=true"},
			},
		},
	}
}

// runApplications creates n Applications on repo, starts
// application-controller, waits until all are Synced and Healthy at sha,
// runs the no-change refresh, measures self-heal and stops the controller.
func runApplications(b *testing.B, n int, repo *testenv.Repo, sha, exe string, sc *testenv.Process, work string) (phase, refresh) {
	url := repo.URL()
	fetches0 := gitSrv.Fetches(repo.Name)
	ctx := context.Background()
	fast := fastClient(b)
	// The destination namespace is left to CreateNamespace, and unique per
	// run (the API profile has no namespace controller to empty one).
	dest := fmt.Sprintf("bench-apps-%d-%d", n, time.Now().Unix())
	parallel(b, n, 8, func(i int) error { return fast.Create(ctx, application(n, i, url, dest)) })
	w, all := track(b, &argov1.Application{}, argocd, n, func(a *argov1.Application) bool {
		return a.Status.Sync.Status == argov1.SyncStatusSynced && a.Status.Health.Status == argov1.HealthHealthy &&
			a.Status.Sync.Revision == sha
	})
	addr := metricsAddr(b)
	profDir := os.Getenv("EDDY_BENCH_PROFILE_DIR")
	prefix := filepath.Join(profDir, fmt.Sprintf("application-controller-n%d", n))
	var ac *testenv.Process
	p := measureFromStart(b, sc, func() *testenv.Process {
		ac = start(b, exe, filepath.Join(work, "application-controller.log"), "--namespace="+argocd,
			"--metrics-addr="+addr, fmt.Sprintf("--app-resync=%d", resync))
		if profDir != "" {
			secs := 30
			if v, err := strconv.Atoi(os.Getenv("EDDY_BENCH_PROFILE_SECONDS")); err == nil && v > 0 {
				secs = v
			}
			go saveProfile(b, addr, fmt.Sprintf("profile?seconds=%d", secs), prefix+".rollout.cpu.pprof")
		}
		return ac
	}, func() { waitAll(b, w, all, "Applications Synced and Healthy", phaseTimeout(n)) })
	defer ac.Stop()
	p.requests = scrapeController(b, addr).byLabels("rest_client_requests_total", nil, "method", "code")
	p.fetches = gitSrv.Fetches(repo.Name) - fetches0
	if profDir != "" {
		saveProfile(b, addr, "heap", prefix+".heap.pprof")
	}
	ref := noChangeRefresh(b, n, ac, addr, profDir, prefix)
	ref.heal, ref.drained = selfHeal(b, n, dest, addr)
	return p, ref
}

// noChangeRefresh sets argocd.argoproj.io/refresh: normal on the n
// Applications and waits until the controller has removed it from each,
// then counts for trailing more; it returns the controller's requests, the
// API server's writes and the controller's CPU over that window.
func noChangeRefresh(b *testing.B, n int, ac *testenv.Process, addr, profDir, prefix string) refresh {
	// An Application has handled the refresh once it was seen with the
	// annotation and then without it (the tracker calls this under its
	// lock, in watch order).
	seen := map[string]bool{}
	w, all := track(b, &argov1.Application{}, argocd, n, func(a *argov1.Application) bool {
		if _, pending := a.Annotations[argov1.AnnotationRefresh]; pending {
			seen[a.Name] = true
			return false
		}
		return seen[a.Name]
	})
	m0, api0, cpu0 := scrapeController(b, addr), scrapeAPIServer(b), procUsage(b, ac.PID()).cpu
	cpuProf := make(chan struct{})
	if profDir != "" {
		go func() {
			defer close(cpuProf)
			saveProfile(b, addr, "profile?seconds=20", prefix+".refresh.cpu.pprof")
		}()
	} else {
		close(cpuProf)
	}
	t0 := time.Now()
	patchAll(b, fastClient(b), n, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"normal"}}}`, argov1.AnnotationRefresh))
	waitAll(b, w, all, "Applications refreshed", phaseTimeout(n))
	var r refresh
	r.time = time.Since(t0)
	time.Sleep(trailing)
	m1, api1, cpu1 := scrapeController(b, addr), scrapeAPIServer(b), procUsage(b, ac.PID()).cpu
	<-cpuProf
	r.cpu = cpu1 - cpu0
	r.client = m1.minus(m0).byLabels("rest_client_requests_total", nil, "method", "code")
	r.apiWrites = apiWrites(api0, api1)
	r.ownPatches = float64(n)
	return r
}

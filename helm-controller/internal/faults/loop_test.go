package faults

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/faultpoint"
	"github.com/eddyops/eddy/pkg/localcluster"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// figures are what a run did and found, printed at its end.
type figures struct {
	kills       map[string]int // SIGKILLs by controller instance
	leaderKills int            // of them, kustomize-controller leaders
	pointExits  map[string]int // exits at an armed fault point, by point
	otherExits  map[string]int // exits the suite did not cause (e.g. at start with the apiserver down)
	restarts    map[string]int // kube-apiserver, etcd
	gitHangs    int
	commits     int
	upgrades    int
	faultPhase  time.Duration
	converge    time.Duration
	checked     []string
	goroutines  map[string][2]int // at convergence and one interval later
	workDirs    map[string]int    // entries left in each controller's TMPDIR
}

// inject runs the fault phase: s.kills kills spread over time, with the
// restarts of kube-apiserver and etcd and the Git hangs at random kill
// indices, a commit before each kill and a HelmRelease upgrade every third.
func (r *run) inject(t *testing.T) {
	f := &r.figures
	f.kills, f.pointExits, f.otherExits, f.restarts = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	at := func(n int) map[int]int {
		m := map[int]int{}
		for range n {
			m[r.rng.IntN(r.s.kills)]++
		}
		return m
	}
	apiAt, etcdAt, hangAt := at(r.s.apiRestarts), at(r.s.etcdRestarts), at(r.s.gitHangs)
	ctx := context.Background()
	for i := range r.s.kills {
		if err := r.work.commit(); err != nil {
			t.Fatal(err)
		}
		f.commits++
		if i%3 == 0 && len(r.hrValues) > 0 {
			r.upgrade(t)
		}
		for range hangAt[i] {
			r.proxy.armed.Store(true)
		}
		r.pause(jitter(r.rng, r.s.gap))
		for range apiAt[i] {
			r.restartComponent(t, ctx, localcluster.KubeAPIServer)
		}
		for range etcdAt[i] {
			r.restartComponent(t, ctx, localcluster.Etcd)
		}
		victim := r.pickVictim()
		victim.kill()
		f.kills[victim.label]++
		r.pause(time.Duration(r.rng.IntN(1000)) * time.Millisecond)
		var fault []string
		if r.rng.IntN(2) == 0 {
			fault = []string{faultpoint.EnvVar + "=" + pointOf(victim.name) + ":" + fmt.Sprint(1+r.rng.IntN(2))}
		}
		if err := victim.start(false, fault...); err != nil {
			t.Fatal(err)
		}
	}
	f.gitHangs = int(r.proxy.hangs.Load())
	// The fault phase ends: a controller still armed is started clean,
	// and a last commit is what must converge.
	for _, c := range r.controllers() {
		if c.faulted {
			c.stop()
			if err := c.start(false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.work.commit(); err != nil {
		t.Fatal(err)
	}
	f.commits++
}

// restartComponent restarts a control-plane component in place.
func (r *run) restartComponent(t *testing.T, ctx context.Context, name string) {
	if err := env.Restart(ctx, name); err != nil {
		t.Fatal(err)
	}
	r.figures.restarts[name]++
}

// pause sleeps d, restarting (as a kubelet would) each controller that
// exited on its own meanwhile; exits at a fault point are counted by point.
func (r *run) pause(d time.Duration) {
	end := time.Now().Add(d)
	for {
		for _, c := range r.controllers() {
			done, code := c.exited()
			if !done || c.isDown() {
				continue
			}
			if code == faultpoint.ExitCode {
				r.figures.pointExits[pointOf(c.name)]++
			} else {
				r.figures.otherExits[fmt.Sprintf("%s (status %d)", c.label, code)]++
			}
			_ = c.start(false)
		}
		if time.Now().After(end) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pickVictim picks a controller to kill; with two kustomize-controller
// replicas, a kustomize-controller kill goes to the leader when it is known.
func (r *run) pickVictim() *controller {
	switch r.rng.IntN(3) {
	case 0:
		return r.src
	case 2:
		return r.hc
	}
	if len(r.kcs) == 1 {
		return r.kcs[0]
	}
	for _, kc := range r.kcs {
		if m, err := kc.metricSums("leader_election_master_status"); err == nil && m["leader_election_master_status"] > 0 {
			r.figures.leaderKills++
			return kc
		}
	}
	return r.kcs[r.rng.IntN(len(r.kcs))]
}

func (r *run) controllers() []*controller {
	return append([]*controller{r.src, r.hc}, r.kcs...)
}

// pointOf is the fault point of controller name.
func pointOf(name string) string {
	switch name {
	case "source-controller":
		return faultpoint.SourceMidArtifactWrite
	case "helm-controller":
		return faultpoint.HelmMidUpgrade
	}
	return faultpoint.KustomizeAfterApply
}

// upgrade sets a new greeting in a random HelmRelease's values.
func (r *run) upgrade(t *testing.T) {
	names := make([]string, 0, len(r.hrValues))
	for n := range r.hrValues {
		names = append(names, n)
	}
	sort.Strings(names)
	name := names[r.rng.IntN(len(names))]
	r.figures.upgrades++
	greeting := fmt.Sprintf("g%d", r.figures.upgrades)
	patch := fmt.Appendf(nil, `{"spec":{"values":{"greeting":%q}}}`, greeting)
	hr := newHelmRelease(r.ns, name, "charts")
	if err := env.Client.Patch(context.Background(), hr, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Logf("upgrading %s: %v (the apiserver may be restarting)", name, err)
		return
	}
	r.hrValues[name] = greeting
}

// jitter is a random duration in [d/2, 3d/2).
func jitter(rng interface{ Int64N(int64) int64 }, d time.Duration) time.Duration {
	return d/2 + time.Duration(rng.Int64N(int64(d)))
}

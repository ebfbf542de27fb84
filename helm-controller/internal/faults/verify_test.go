package faults

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Owner labels of a Kustomization's objects (flux-contract: kustomize.toolkit.fluxcd.io/name, /namespace).
const (
	nameLabel      = "kustomize.toolkit.fluxcd.io/name"
	namespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// waitConverged polls until everything is converged (problems returns
// none) or d passes; then it fails t listing what is not.
func (r *run) waitConverged(t *testing.T, d time.Duration, final bool) time.Duration {
	t.Helper()
	begin := time.Now()
	var last []string
	for time.Since(begin) < d {
		if last = r.problems(final); len(last) == 0 {
			return time.Since(begin)
		}
		r.pause(time.Second)
	}
	t.Fatalf("not converged %s after the faults (seed above):\n%s", d, strings.Join(last, "\n"))
	return 0
}

// problems lists what is not converged: the source not at HEAD; a
// Kustomization not Ready at HEAD, or whose owner-labelled objects,
// inventory and build (HEAD's directory) differ; a HelmRelease not Ready
// or not at its last values; a release pending-*. With final, also the
// objects' content.
func (r *run) problems(final bool) []string {
	ctx := context.Background()
	rev, desired := r.work.desired()
	var out []string
	src := &sourcev1.GitRepository{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "repo"}, src); err != nil || src.Status.Artifact == nil || src.Status.Artifact.Revision != rev {
		return []string{fmt.Sprintf("GitRepository not at %s", rev)}
	}
	var cms corev1.ConfigMapList
	if err := env.Client.List(ctx, &cms, client.InNamespace(r.ns)); err != nil {
		return []string{err.Error()}
	}
	for i, want := range desired {
		k := &kustomizev1.Kustomization{}
		name := fmt.Sprintf("k%d", i)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: name}, k); err != nil {
			out = append(out, err.Error())
			continue
		}
		if !readyAt(k, rev) {
			out = append(out, fmt.Sprintf("Kustomization %s not Ready at %s (applied %s)", name, rev, k.Status.LastAppliedRevision))
			continue
		}
		out = append(out, r.compareSets(k, want, cms.Items, final)...)
	}
	for name, greeting := range r.hrValues {
		hr := &helmv2.HelmRelease{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: name}, hr); err != nil || !hrReady(hr) {
			out = append(out, "HelmRelease "+name+" not Ready")
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: name}, cm); err != nil || cm.Data["greeting"] != greeting {
			out = append(out, fmt.Sprintf("HelmRelease %s: greeting %q, want %q", name, cm.Data["greeting"], greeting))
		}
	}
	if p := pendingReleases(r.ns); len(p) > 0 {
		out = append(out, "releases pending: "+strings.Join(p, ", "))
	}
	return out
}

// compareSets compares k's owner-labelled ConfigMaps, its inventory and
// its build (want, object names): no orphan, no duplicate, none missing.
func (r *run) compareSets(k *kustomizev1.Kustomization, want []string, cms []corev1.ConfigMap, final bool) []string {
	var labelled, inventory []string
	for _, cm := range cms {
		if cm.Labels[nameLabel] == k.Name && cm.Labels[namespaceLabel] == k.Namespace {
			labelled = append(labelled, cm.Name)
			if final && cm.Data["k"] != "v" {
				return []string{fmt.Sprintf("Kustomization %s: ConfigMap %s half-applied: %v", k.Name, cm.Name, cm.Data)}
			}
		}
	}
	if k.Status.Inventory != nil {
		for _, e := range k.Status.Inventory.Entries {
			inventory = append(inventory, strings.TrimSuffix(strings.TrimPrefix(e.ID, k.Namespace+"_"), "__ConfigMap"))
		}
	}
	sort.Strings(labelled)
	sort.Strings(inventory)
	if !slices.Equal(labelled, want) || !slices.Equal(inventory, want) {
		return []string{fmt.Sprintf("Kustomization %s: labelled %v, inventory %v, build %v", k.Name, labelled, inventory, want)}
	}
	return nil
}

// verify waits for convergence within two intervals of the end of the
// fault phase, then checks events, goroutines and work directories.
func (r *run) verify(t *testing.T) {
	f := &r.figures
	f.converge = r.waitConverged(t, 2*r.s.interval, true)
	f.checked = append(f.checked, "source at HEAD", "every Kustomization Ready at HEAD",
		"owner-labelled objects = inventory = build for each Kustomization (no orphan, no duplicate, content whole)",
		"every HelmRelease Ready at its last values", "no Helm release pending-*")

	since := time.Now()
	for _, kc := range r.kcs {
		if kc.started.Before(since) {
			since = kc.started
		}
	}
	deadline := time.Now().Add(r.s.interval)
	for r.sink.errorsSince("Kustomization", r.ns, "broken", since) == 0 && time.Now().Before(deadline) {
		r.pause(time.Second)
	}
	if n := r.sink.errorsSince("Kustomization", r.ns, "broken", since); n == 0 {
		t.Errorf("no error event about the broken Kustomization since the last kustomize-controller start: an error Alert delivers nothing")
	}
	f.checked = append(f.checked, "a failing Kustomization's error event delivered after the last kustomize-controller start")

	f.goroutines = map[string][2]int{}
	first := map[*controller]int{}
	for _, c := range r.controllers() {
		first[c], _ = c.goroutines()
	}
	r.pause(min(r.s.interval, 15*time.Second))
	for _, c := range r.controllers() {
		n, err := c.goroutines()
		if err != nil {
			t.Errorf("%s goroutines: %v", c.label, err)
			continue
		}
		f.goroutines[c.label] = [2]int{first[c], n}
		if n > first[c]+first[c]/4+10 {
			t.Errorf("%s: %d goroutines, %d a while before: a leak", c.label, n, first[c])
		}
	}
	f.checked = append(f.checked, "goroutines (from /debug/pprof) not growing once converged")

	f.workDirs = map[string]int{}
	for c, dir := range r.tmpDirs {
		entries, _ := os.ReadDir(dir)
		var known, other []string
		for _, e := range entries {
			if knownLeak(c.name, e.Name()) {
				known = append(known, e.Name())
			} else {
				other = append(other, e.Name())
			}
		}
		f.workDirs[c.label] = len(entries)
		if len(known) > 0 {
			t.Logf("%s: known leaks left in its TMPDIR by killed processes (see knownLeaks): %v", c.label, known)
		}
		if len(other) > 0 {
			t.Errorf("%s: work directories left in its TMPDIR: %v", c.label, other)
		}
	}
	f.checked = append(f.checked, "no work directory left in any controller's TMPDIR but the known leaks (counted)")
}

// print writes the figures, for the README.
func (r *run) print() {
	f := r.figures
	sum := func(m map[string]int) int {
		n := 0
		for _, v := range m {
			n += v
		}
		return n
	}
	rev, desired := r.work.desired()
	objects := 0
	for _, d := range desired {
		objects += len(d)
	}
	fmt.Printf("faults: %s form: %d Kustomizations (%d objects at HEAD %s), %d HelmReleases, %d kustomize-controller replica(s)\n",
		r.s.name, r.s.kustomizations, objects, rev, r.s.helmReleases, r.s.replicas)
	fmt.Printf("faults: SIGKILLs %d %v (leader kills %d); exits at fault points %d %v; other exits %d %v\n",
		sum(f.kills), f.kills, f.leaderKills, sum(f.pointExits), f.pointExits, sum(f.otherExits), f.otherExits)
	fmt.Printf("faults: restarts in place %v; Git hangs mid-pack %d; commits %d (%d objects added, %d removed); HelmRelease upgrades %d\n",
		f.restarts, f.gitHangs, f.commits, r.work.counts.adds, r.work.counts.removes, f.upgrades)
	fmt.Printf("faults: fault phase %s; converged %s after it (limit: two intervals, %s)\n",
		f.faultPhase.Round(time.Second), f.converge.Round(100*time.Millisecond), 2*r.s.interval)
	fmt.Printf("faults: goroutines at convergence and later %v; work directory entries left %v\n", f.goroutines, f.workDirs)
	fmt.Printf("faults: checked: %s\n", strings.Join(f.checked, "; "))
}

// knownLeaks are the work files and directories a killed controller is
// known to leave in its TMPDIR, by controller: counted in the figures and
// logged, not failed. Remove an entry once its controller cleans up at
// start or stops writing there.
var knownLeaks = map[string][]string{
	// pkg/artifact's Fetcher downloads into a temporary file.
	"helm-controller":      {"artifact-"},
	"kustomize-controller": {"artifact-"},
	// Clone and build directories, not yet purged at start.
	"source-controller": {"gitrepository-", "helmchart-", "ocirepository-", "include-"},
}

func knownLeak(controller, name string) bool {
	for _, prefix := range knownLeaks[controller] {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

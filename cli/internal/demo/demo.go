// Package demo is `eddy dev demo`, the scripted tour that `make demo` runs.
package demo

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/process"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pollInterval is how often the tour re-reads an object it waits for:
// shorter than flux's, to keep the tour short.
const pollInterval = 250 * time.Millisecond

// demo is the state of one run of the tour.
type demo struct {
	u       *ui.UI
	out     io.Writer
	ctx     context.Context
	env     *dev.Env
	c       client.Client
	work    string // the repository's work tree
	exe     string // this eddy binary, run as the user would
	kcfg    string
	stopped bool // the environment was stopped by the teardown step
}

type demoStep struct {
	title string
	run   func() (string, error)
}

// stepResult is a row of the summary: what a step observed and how long it took.
type stepResult struct {
	title, observed string
	took            time.Duration
}

// Run is `eddy dev demo` (what `make demo` runs): a scripted tour of Eddy on
// the example repository examples/platform-config, in a local environment
// of its own, each step observed in the cluster, then a summary table. It
// stops everything it started and checks that no process or port is left;
// the error names the first step not observed. Progress goes to out, build
// output to errOut.
func Run(ctx context.Context, out, errOut io.Writer) error {
	u := ui.New(out)
	begin := time.Now()
	root, err := dev.FindRoot()
	if err != nil {
		return err
	}
	if err := dev.EnsureBinaries(root, u, errOut); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// Its own state directory: the tour never touches a running `eddy dev up`.
	dir, err := os.MkdirTemp("", "eddy-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, stopSignals := signal.NotifyContext(ctx, dev.StopSignals()...)
	defer stopSignals()

	fmt.Fprintln(out, u.Paint("1", "Eddy demo: the example repository examples/platform-config on a local cluster"))
	// The alerts sink gives the example's Provider an address; its lines go
	// to the demo's logs/alerts.log only, not between the steps' output.
	env, err := dev.Start(ctx, dev.Options{Root: root, K8sBinDir: dev.K8sBinDir(root), StateDir: dir, Nodes: 1, Fast: true,
		Progress: func(s string) { u.Action("%s", s) }, AlertsSink: true})
	if err != nil {
		return dev.OneLineErr(err)
	}
	d := &demo{u: u, out: out, ctx: ctx, env: env, c: env.Client, exe: exe, kcfg: env.Cluster.KubeconfigPath}
	defer func() {
		if !d.stopped {
			env.Stop()
		}
	}()
	if err := d.syncExample(root, dir); err != nil {
		return err
	}
	results, err := d.runSteps()
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "\n%s\n", u.Paint("1", "── Teardown ──"))
	t := time.Now()
	obs, err := d.teardown()
	if err != nil {
		return err
	}
	u.Success("observed: %s (%s)", obs, time.Since(t).Round(100*time.Millisecond))
	return d.summary(results, begin)
}

// syncExample copies the example repository into the state directory dir,
// serves it from the environment's Git server and syncs the cluster to its
// ./clusters/dev.
func (d *demo) syncExample(root, dir string) error {
	src, err := dev.PrepareSource(dir, filepath.Join(root, "examples", "platform-config"), "./clusters/dev", "")
	if err != nil {
		return err
	}
	src.SetServer(d.env.Git.URL)
	d.work = src.WorkTree
	return dev.SyncSource(d.ctx, d.c, d.u, src)
}

// runSteps runs the tour's steps in order, each under its heading; on the
// first that fails it prints the controllers' last log lines and returns
// an error naming it.
func (d *demo) runSteps() ([]stepResult, error) {
	steps := []demoStep{
		{"first sync", d.firstSync},
		{"drift corrected", d.drift},
		{"commit: scale cart-api 2 → 4", d.scale},
		{"commit: remove a file ⇒ pruned", d.prune},
		{"git revert ⇒ object back", d.revert},
		{"kustomize-controller killed", d.kill},
		{"HelmRelease installed", d.helmInstall},
		{"commit: values change ⇒ Helm upgrade", d.helmUpgrade},
		{"failed upgrade ⇒ rolled back", d.helmRollback},
		{"Helm drift corrected", d.helmDrift},
	}
	var results []stepResult
	for i, s := range steps {
		fmt.Fprintf(d.out, "\n%s\n", d.u.Paint("1", fmt.Sprintf("── Step %d/%d: %s ──", i+1, len(steps), s.title)))
		t := time.Now()
		obs, err := s.run()
		if err != nil {
			d.u.Failure("step %d (%s) failed: %v", i+1, s.title, err)
			fmt.Fprintln(d.out, "\nlast controller logs:")
			for _, p := range d.env.Sup.Status() {
				fmt.Fprintf(d.out, "----- %s -----\n%s\n", p.Name, process.TailFile(p.LogPath, 15))
			}
			return nil, fmt.Errorf("demo step %d (%s) failed: %w", i+1, s.title, err)
		}
		d.u.Success("observed: %s (%s)", obs, time.Since(t).Round(100*time.Millisecond))
		results = append(results, stepResult{s.title, obs, time.Since(t)})
	}
	return results, nil
}

// teardown stops the environment and checks that none of its processes
// still runs and all its ports are free.
func (d *demo) teardown() (string, error) {
	st := d.env.State()
	d.env.Stop()
	d.stopped = true
	var alive []string
	n := 0
	check := func(name string, pid int) {
		n++
		if dev.Alive(pid) {
			alive = append(alive, name)
		}
	}
	for _, p := range st.Cluster {
		check(p.Name, p.PID)
	}
	for _, p := range d.env.Sup.Status() {
		check(p.Name, p.PID)
	}
	var busy []int
	for _, p := range st.Ports {
		if !localcluster.PortFree(p) {
			busy = append(busy, p)
		}
	}
	if len(alive) > 0 || len(busy) > 0 {
		return "", fmt.Errorf("left behind: processes %v, ports %v", alive, busy)
	}
	return fmt.Sprintf("%d processes stopped, %d ports free, Git server, event recorder and alerts sink closed", n, len(st.Ports)), nil
}

// summary prints the table of the steps observed and the closing line,
// with the time since begin.
func (d *demo) summary(results []stepResult, begin time.Time) error {
	fmt.Fprintf(d.out, "\n%s\n", d.u.Paint("1", "── Summary ──"))
	table := [][]string{{"STEP", "RESULT", "TIME", "OBSERVED"}}
	for i, r := range results {
		table = append(table, []string{fmt.Sprintf("%d %s", i+1, r.title), d.u.Paint("32", "ok"), r.took.Round(100 * time.Millisecond).String(), r.observed})
	}
	if err := ui.WriteTable(d.out, table, 2); err != nil {
		return err
	}
	d.u.Success("all %d steps observed; everything the demo started is stopped (total %s)", len(results), time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// did prints what the demo does, as a shell user would do it.
func (d *demo) did(format string, args ...any) { d.u.Action(format, args...) }

func (d *demo) saw(format string, args ...any) { d.u.Info("  "+format, args...) }

// git runs git in the work tree.
func (d *demo) git(args ...string) (string, error) {
	d.did("git %s", strings.Join(args, " "))
	return gitserver.Git(d.work, args...)
}

// head returns the Flux revision of the work tree's HEAD.
func (d *demo) head() (string, error) {
	h, err := gitserver.Git(d.work, "rev-parse", "HEAD")
	return "main@sha1:" + h, err
}

func short(rev string) string {
	if i := strings.Index(rev, "sha1:"); i >= 0 && len(rev) >= i+5+7 {
		return rev[:i+5+7]
	}
	return rev
}

// eddy runs this eddy binary against the demo cluster and shows its output.
func (d *demo) eddy(args ...string) error {
	d.did("eddy %s", strings.Join(args, " "))
	cmd := exec.CommandContext(d.ctx, d.exe, append(args, "--kubeconfig="+d.kcfg, "--timeout=2m")...)
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		fmt.Fprintf(d.out, "    │ %s\n", l)
	}
	if err != nil {
		return fmt.Errorf("eddy %s: %v", strings.Join(args, " "), err)
	}
	return nil
}

// commit writes files in the work tree ("" removes one) and commits them.
func (d *demo) commit(msg string, files map[string]string) (string, error) {
	for name, content := range files {
		p := filepath.Join(d.work, filepath.FromSlash(name))
		if content == "" {
			d.did("git rm %s", name)
			if err := os.Remove(p); err != nil {
				return "", err
			}
			continue
		}
		d.did("edit %s", name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	if _, err := gitserver.Git(d.work, "add", "-A"); err != nil {
		return "", err
	}
	if _, err := d.git("commit", "-q", "-m", msg); err != nil {
		return "", err
	}
	return d.head()
}

// applied takes the result of a commit (its revision, or an error), asks
// for a reconcile of Kustomization apps with its source and waits until it
// applied that revision.
func (d *demo) applied(rev string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if err := d.eddy("reconcile", "ks", "apps", "--with-source"); err != nil {
		return "", err
	}
	_, err = d.waitApplied("apps", rev)
	return rev, err
}

func (d *demo) read(name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(d.work, filepath.FromSlash(name)))
	return string(data), err
}

// waitKustomization reads Kustomization flux-system/name every
// pollInterval until cond holds for it and its Ready condition (nil when
// it has none), for at most timeout; what names the wait in the error.
func (d *demo) waitKustomization(name string, timeout time.Duration, what string,
	cond func(k *kustomizev1.Kustomization, ready *metav1.Condition) bool) (*kustomizev1.Kustomization, error) {
	k := &kustomizev1.Kustomization{}
	ctx, cancel := context.WithTimeout(d.ctx, timeout)
	defer cancel()
	err := status.WaitFor(ctx, d.c, k, types.NamespacedName{Namespace: dev.Namespace, Name: name}, pollInterval, func() (bool, error) {
		return cond(k, apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)), nil
	}, what)
	return k, err
}

// waitApplied waits until Kustomization flux-system/name is Ready for rev.
func (d *demo) waitApplied(name, rev string) (*kustomizev1.Kustomization, error) {
	return d.waitKustomization(name, 3*time.Minute, "Kustomization "+name+" to apply "+rev, func(k *kustomizev1.Kustomization, ready *metav1.Condition) bool {
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == k.Generation &&
			k.Status.LastAppliedRevision == rev
	})
}

// kustomization reads Kustomization flux-system/name.
func (d *demo) kustomization(name string) (*kustomizev1.Kustomization, error) {
	k := &kustomizev1.Kustomization{}
	err := d.c.Get(d.ctx, types.NamespacedName{Namespace: dev.Namespace, Name: name}, k)
	return k, err
}

func (d *demo) deployment(name string) (*appsv1.Deployment, error) {
	dep := &appsv1.Deployment{}
	err := d.c.Get(d.ctx, types.NamespacedName{Namespace: "production", Name: name}, dep)
	return dep, err
}

// configValue reads .data[field] of ConfigMap production/name.
func (d *demo) configValue(name, field string) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: "production", Name: name}, cm); err != nil {
		return "", err
	}
	return cm.Data[field], nil
}

// kubectlEdit sets .data[field] of ConfigMap production/name to value as
// field manager kubectl-edit, as `kubectl edit` would, outside Git. Before
// the write it calls say with the old value, which it returns.
func (d *demo) kubectlEdit(name, field, value string, say func(old string)) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: "production", Name: name}, cm); err != nil {
		return "", err
	}
	old := cm.Data[field]
	cm.Data[field] = value
	say(old)
	return old, d.c.Update(d.ctx, cm, client.FieldOwner("kubectl-edit"))
}

// waitAvailable waits until the Deployment has replicas available pods (the
// pods its selector matches), all scheduled on fake nodes; it returns the
// node names.
func (d *demo) waitAvailable(name string, replicas int32) ([]string, error) {
	dep := &appsv1.Deployment{}
	var nodes []string
	err := d.poll(2*time.Minute, func() (bool, error) {
		var err error
		dep, err = d.deployment(name)
		if err != nil || dep.Status.ObservedGeneration != dep.Generation || dep.Status.AvailableReplicas != replicas ||
			dep.Status.UpdatedReplicas != replicas || *dep.Spec.Replicas != replicas {
			return false, nil
		}
		pods := &corev1.PodList{}
		if err := d.c.List(d.ctx, pods, client.InNamespace("production"), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return false, err
		}
		on := map[string]bool{}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
				on[p.Spec.NodeName] = true
			}
		}
		nodes = slices.Sorted(maps.Keys(on))
		return running == int(replicas), nil
	})
	if err != nil && wait.Interrupted(err) && d.ctx.Err() == nil {
		return nil, fmt.Errorf("Deployment production/%s: %d of %d replicas available after 2m", name, dep.Status.AvailableReplicas, replicas)
	}
	return nodes, err
}

// poll calls cond every pollInterval until it is true or fails, for at
// most timeout; wait.Interrupted(err) tells a timeout.
func (d *demo) poll(timeout time.Duration, cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(d.ctx, pollInterval, timeout, true, func(context.Context) (bool, error) { return cond() })
}

// events returns the Kubernetes Events of Kustomization flux-system/name
// with reason, keyed by UID and count so a repeated event counts anew.
func (d *demo) events(name, reason string) (map[string]corev1.Event, error) {
	return d.eventsOf("Kustomization", name, reason)
}

// eventsOf is events for an object of kind in flux-system.
func (d *demo) eventsOf(kind, name, reason string) (map[string]corev1.Event, error) {
	l := &corev1.EventList{}
	if err := d.c.List(d.ctx, l, client.InNamespace(dev.Namespace)); err != nil {
		return nil, err
	}
	out := map[string]corev1.Event{}
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			out[fmt.Sprintf("%s/%d", e.UID, e.Count)] = e
		}
	}
	return out, nil
}

// newEvent waits for an event of Kustomization name not in before whose
// message contains substr.
func (d *demo) newEvent(name, reason, substr string, before map[string]corev1.Event) (string, error) {
	return d.newEventOf("Kustomization", name, reason, substr, before)
}

// newEventOf is newEvent for an object of kind in flux-system.
func (d *demo) newEventOf(kind, name, reason, substr string, before map[string]corev1.Event) (string, error) {
	msg := ""
	err := d.poll(time.Minute, func() (bool, error) {
		now, err := d.eventsOf(kind, name, reason)
		if err != nil {
			return false, err
		}
		for k, e := range now {
			if _, old := before[k]; !old && strings.Contains(e.Message, substr) {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil && wait.Interrupted(err) && d.ctx.Err() == nil {
		return "", fmt.Errorf("no %s event of %s %s mentioning %q within 1m", reason, kind, name, substr)
	}
	return msg, err
}

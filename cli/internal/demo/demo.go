// Package demo is `eddy dev demo`, the scripted tour that `make demo` runs.
package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	u    *ui.UI
	out  io.Writer
	ctx  context.Context
	env  *dev.Env
	c    client.Client
	work string // the repository's work tree
	exe  string // this eddy binary, run as the user would
	kcfg string
}

type demoStep struct {
	title string
	run   func() (string, error)
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
	stopped := false
	teardown := func() (string, error) {
		st := env.State()
		env.Stop()
		stopped = true
		var alive []string
		n := 0
		for _, p := range st.Cluster {
			n++
			if dev.Alive(p.PID) {
				alive = append(alive, p.Name)
			}
		}
		for _, p := range env.Sup.Status() {
			n++
			if dev.Alive(p.PID) {
				alive = append(alive, p.Name)
			}
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
	defer func() {
		if !stopped {
			env.Stop()
		}
	}()

	src, err := dev.PrepareSource(dir, filepath.Join(root, "examples", "platform-config"), "./clusters/dev", "")
	if err != nil {
		return err
	}
	src.SetServer(env.Git.URL)
	d.work = src.WorkTree
	if err := dev.SyncSource(ctx, d.c, u, src); err != nil {
		return err
	}

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
	type result struct {
		title, observed string
		took            time.Duration
	}
	var results []result
	for i, s := range steps {
		fmt.Fprintf(out, "\n%s\n", u.Paint("1", fmt.Sprintf("── Step %d/%d: %s ──", i+1, len(steps), s.title)))
		t := time.Now()
		obs, err := s.run()
		if err != nil {
			u.Failure("step %d (%s) failed: %v", i+1, s.title, err)
			fmt.Fprintln(out, "\nlast controller logs:")
			for _, p := range env.Sup.Status() {
				fmt.Fprintf(out, "----- %s -----\n%s\n", p.Name, process.TailFile(p.LogPath, 15))
			}
			return fmt.Errorf("demo step %d (%s) failed: %w", i+1, s.title, err)
		}
		u.Success("observed: %s (%s)", obs, time.Since(t).Round(100*time.Millisecond))
		results = append(results, result{s.title, obs, time.Since(t)})
	}

	fmt.Fprintf(out, "\n%s\n", u.Paint("1", "── Teardown ──"))
	t := time.Now()
	obs, err := teardown()
	if err != nil {
		return err
	}
	u.Success("observed: %s (%s)", obs, time.Since(t).Round(100*time.Millisecond))

	fmt.Fprintf(out, "\n%s\n", u.Paint("1", "── Summary ──"))
	table := [][]string{{"STEP", "RESULT", "TIME", "OBSERVED"}}
	for i, r := range results {
		table = append(table, []string{fmt.Sprintf("%d %s", i+1, r.title), u.Paint("32", "ok"), r.took.Round(100 * time.Millisecond).String(), r.observed})
	}
	if err := ui.WriteTable(out, table, 2); err != nil {
		return err
	}
	u.Success("all %d steps observed; everything the demo started is stopped (total %s)", len(steps), time.Since(begin).Round(100*time.Millisecond))
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

// waitApplied waits until Kustomization flux-system/name is Ready for rev.
func (d *demo) waitApplied(name, rev string) (*kustomizev1.Kustomization, error) {
	k := &kustomizev1.Kustomization{}
	ctx, cancel := context.WithTimeout(d.ctx, 3*time.Minute)
	defer cancel()
	err := status.WaitFor(ctx, d.c, k, types.NamespacedName{Namespace: dev.Namespace, Name: name}, pollInterval, func() (bool, error) {
		ready := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == k.Generation &&
			k.Status.LastAppliedRevision == rev, nil
	}, "Kustomization "+name+" to apply "+rev)
	return k, err
}

func (d *demo) deployment(name string) (*appsv1.Deployment, error) {
	dep := &appsv1.Deployment{}
	err := d.c.Get(d.ctx, types.NamespacedName{Namespace: "production", Name: name}, dep)
	return dep, err
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

func (d *demo) firstSync() (string, error) {
	rev, err := d.head()
	if err != nil {
		return "", err
	}
	d.did("waiting for Kustomizations flux-system (path ./clusters/dev) and apps (path ./apps) to apply %s", rev)
	if _, err := d.waitApplied(dev.SyncName, rev); err != nil {
		return "", err
	}
	apps, err := d.waitApplied("apps", rev)
	if err != nil {
		return "", err
	}
	if apps.Status.Inventory == nil {
		return "", errors.New("Kustomization apps has no inventory")
	}
	d.saw("Kustomization apps applied revision %s; inventory:", apps.Status.LastAppliedRevision)
	for _, e := range apps.Status.Inventory.Entries {
		if f := strings.Split(e.ID, "_"); len(f) == 4 {
			d.saw("  %s %s/%s", f[3], f[0], f[1])
		}
	}
	var avail []string
	for _, name := range []string{"payment-api", "cart-api"} {
		nodes, err := d.waitAvailable(name, 2)
		if err != nil {
			return "", err
		}
		avail = append(avail, fmt.Sprintf("%s 2/2 available on %s", name, strings.Join(nodes, ",")))
	}
	d.saw("%s", strings.Join(avail, "; "))
	return fmt.Sprintf("%d objects applied at %s; %s", len(apps.Status.Inventory.Entries), short(rev), strings.Join(avail, "; ")), nil
}

func short(rev string) string {
	if i := strings.Index(rev, "sha1:"); i >= 0 && len(rev) >= i+5+7 {
		return rev[:i+5+7]
	}
	return rev
}

func (d *demo) drift() (string, error) {
	before, err := d.events("apps", "DriftCorrected")
	if err != nil {
		return "", err
	}
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: "production", Name: "payment-config"}
	if err := d.c.Get(d.ctx, key, cm); err != nil {
		return "", err
	}
	old := cm.Data["MAX_RETRIES"]
	cm.Data["MAX_RETRIES"] = "10"
	d.did("edit ConfigMap production/payment-config: .data.MAX_RETRIES %q → \"10\", as field manager kubectl-edit (what `kubectl edit` does)", old)
	if err := d.c.Update(d.ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
		return "", err
	}
	d.did("request a reconcile of Kustomization apps instead of waiting for its 1m interval")
	if err := d.eddy("reconcile", "ks", "apps"); err != nil {
		return "", err
	}
	msg, err := d.newEvent("apps", "DriftCorrected", "payment-config", before)
	if err != nil {
		return "", err
	}
	d.saw("event DriftCorrected: %s", msg)
	if err := d.c.Get(d.ctx, key, cm); err != nil {
		return "", err
	}
	if cm.Data["MAX_RETRIES"] != old {
		return "", fmt.Errorf("ConfigMap still has MAX_RETRIES %q, want %q", cm.Data["MAX_RETRIES"], old)
	}
	d.saw("ConfigMap production/payment-config has MAX_RETRIES %q again", old)
	for _, want := range []string{"MAX_RETRIES", "kubectl-edit"} {
		if !strings.Contains(msg, want) {
			return "", fmt.Errorf("the drift event does not name %s: %s", want, msg)
		}
	}
	return msg, nil
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

func (d *demo) scale() (string, error) {
	dep, err := d.read("apps/cart-api/deployment.yaml")
	if err != nil {
		return "", err
	}
	if !strings.Contains(dep, "replicas: 2") {
		return "", errors.New("apps/cart-api/deployment.yaml has no `replicas: 2`")
	}
	rev, err := d.applied(d.commit("cart-api: scale to 4 replicas", map[string]string{
		"apps/cart-api/deployment.yaml": strings.Replace(dep, "replicas: 2", "replicas: 4", 1)}))
	if err != nil {
		return "", err
	}
	nodes, err := d.waitAvailable("cart-api", 4)
	if err != nil {
		return "", err
	}
	d.saw("Deployment production/cart-api: 4/4 replicas available on %s; Kustomization apps Ready (health checked) at %s", strings.Join(nodes, ","), short(rev))
	return fmt.Sprintf("cart-api 4/4 available, apps Ready at %s", short(rev)), nil
}

func (d *demo) inventoryHas(id string) (bool, error) {
	k := &kustomizev1.Kustomization{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: dev.Namespace, Name: "apps"}, k); err != nil {
		return false, err
	}
	if k.Status.Inventory == nil {
		return false, nil
	}
	for _, e := range k.Status.Inventory.Entries {
		if e.ID == id {
			return true, nil
		}
	}
	return false, nil
}

const serviceID = "production_payment-api__Service"

func (d *demo) prune() (string, error) {
	svc := &corev1.Service{}
	key := types.NamespacedName{Namespace: "production", Name: "payment-api"}
	if err := d.c.Get(d.ctx, key, svc); err != nil {
		return "", fmt.Errorf("Service production/payment-api before the commit: %w", err)
	}
	kz, err := d.read("apps/payment-api/kustomization.yaml")
	if err != nil {
		return "", err
	}
	before, err := d.events("apps", "Progressing")
	if err != nil {
		return "", err
	}
	if _, err := d.applied(d.commit("payment-api: remove the Service", map[string]string{
		"apps/payment-api/service.yaml":       "",
		"apps/payment-api/kustomization.yaml": strings.Replace(kz, "  - service.yaml\n", "", 1),
	})); err != nil {
		return "", err
	}
	err = d.c.Get(d.ctx, key, &corev1.Service{})
	if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("Service production/payment-api still exists after the prune (get: %v)", err)
	}
	if in, err := d.inventoryHas(serviceID); err != nil || in {
		return "", fmt.Errorf("the inventory still lists %s (%v)", serviceID, err)
	}
	msg, err := d.newEvent("apps", "Progressing", "Service/production/payment-api deleted", before)
	if err != nil {
		return "", err
	}
	d.saw("event Progressing: %s", strings.ReplaceAll(msg, "\n", "; "))
	d.saw("Service production/payment-api: not found (uid %s gone); the inventory no longer lists it", svc.UID)
	return "Service production/payment-api deleted and gone from the inventory", nil
}

func (d *demo) revert() (string, error) {
	if _, err := d.git("revert", "--no-edit", "HEAD"); err != nil {
		return "", err
	}
	rev, err := d.applied(d.head())
	if err != nil {
		return "", err
	}
	svc := &corev1.Service{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: "production", Name: "payment-api"}, svc); err != nil {
		return "", fmt.Errorf("Service production/payment-api after the revert: %w", err)
	}
	if in, err := d.inventoryHas(serviceID); err != nil || !in {
		return "", fmt.Errorf("the inventory does not list %s after the revert (%v)", serviceID, err)
	}
	d.saw("Service production/payment-api exists again (new uid %s, created %s) and is in the inventory, at %s",
		svc.UID, svc.CreationTimestamp.Format(time.TimeOnly), short(rev))
	return fmt.Sprintf("Service production/payment-api back at %s", short(rev)), nil
}

func (d *demo) kill() (string, error) {
	const kc = "kustomize-controller"
	apps := &kustomizev1.Kustomization{}
	appsKey := types.NamespacedName{Namespace: dev.Namespace, Name: "apps"}
	if err := d.c.Get(d.ctx, appsKey, apps); err != nil {
		return "", err
	}
	applied := apps.Status.LastAppliedRevision
	var pid int
	for _, p := range d.env.Sup.Status() {
		if p.Name == kc {
			pid = p.PID
		}
	}
	// Held, so the supervisor restarts it only once the source side was shown working alone.
	d.env.Sup.Hold(kc)
	d.did("kill -9 %d (%s); the supervisor holds the restart for this step", pid, kc)
	if err := d.env.Sup.Kill(kc); err != nil {
		return "", err
	}
	if dev.Alive(pid) {
		return "", fmt.Errorf("%s (pid %d) still runs", kc, pid)
	}
	d.saw("%s pid %d is gone", kc, pid)

	cm, err := d.read("apps/payment-api/configmap.yaml")
	if err != nil {
		return "", err
	}
	rev, err := d.commit("payment-api: switch the currency to USD", map[string]string{
		"apps/payment-api/configmap.yaml": strings.Replace(cm, "CURRENCY: EUR", "CURRENCY: USD", 1)})
	if err != nil {
		return "", err
	}
	if err := d.eddy("reconcile", "source", "git", dev.SyncName); err != nil {
		return "", err
	}
	src := &sourcev1.GitRepository{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: dev.Namespace, Name: dev.SyncName}, src); err != nil {
		return "", err
	}
	if src.Status.Artifact == nil || src.Status.Artifact.Revision != rev {
		return "", fmt.Errorf("GitRepository has no artifact for %s", rev)
	}
	size, err := fetchVerify(d.ctx, src.Status.Artifact.URL, src.Status.Artifact.Digest)
	if err != nil {
		return "", err
	}
	d.saw("source-controller reconciled the new commit alone: artifact %s, served at %s (%d bytes, digest verified)",
		short(rev), src.Status.Artifact.URL, size)
	if err := d.c.Get(d.ctx, appsKey, apps); err != nil {
		return "", err
	}
	if apps.Status.LastAppliedRevision != applied {
		return "", fmt.Errorf("Kustomization apps moved to %s while kustomize-controller was down", apps.Status.LastAppliedRevision)
	}
	d.saw("Kustomization apps still at %s, nobody applies while kustomize-controller is down", short(applied))

	d.did("release the restart: the supervisor starts %s again, as a kubelet would", kc)
	t := time.Now()
	d.env.Sup.Release(kc)
	if _, err := d.waitApplied("apps", rev); err != nil {
		return "", err
	}
	took := time.Since(t).Round(100 * time.Millisecond)
	var restarts, newPID int
	for _, p := range d.env.Sup.Status() {
		if p.Name == kc {
			restarts, newPID = p.Restarts, p.PID
		}
	}
	d.saw("%s restarted (pid %d, restarts %d); Kustomization apps applied %s %s after the restart (includes taking over the leader-election lease)",
		kc, newPID, restarts, short(rev), took)
	cmo := &corev1.ConfigMap{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: "production", Name: "payment-config"}, cmo); err != nil {
		return "", err
	}
	if cmo.Data["CURRENCY"] != "USD" {
		return "", fmt.Errorf("ConfigMap payment-config has CURRENCY %q, want USD", cmo.Data["CURRENCY"])
	}
	n, err := d.checkNoOrphans()
	if err != nil {
		return "", err
	}
	d.saw("ConfigMap payment-config has CURRENCY USD; %d inventory entries, no duplicates; every object labelled by Kustomization apps is in the inventory and vice versa", n)
	return fmt.Sprintf("source-controller served %s alone; after the restart apps converged in %s, %d objects, no duplicate or orphan", short(rev), took, n), nil
}

// checkNoOrphans compares the apps inventory with the objects in the
// cluster labelled as applied by it, for every kind the example uses.
func (d *demo) checkNoOrphans() (int, error) {
	apps := &kustomizev1.Kustomization{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: dev.Namespace, Name: "apps"}, apps); err != nil {
		return 0, err
	}
	inv := map[string]bool{}
	for _, e := range apps.Status.Inventory.Entries {
		if inv[e.ID] {
			return 0, fmt.Errorf("inventory lists %s twice", e.ID)
		}
		inv[e.ID] = true
	}
	labels := client.MatchingLabels{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": dev.Namespace}
	found := map[string]bool{}
	add := func(ns, name, group, kind string) error {
		id := ns + "_" + name + "_" + group + "_" + kind
		if found[id] {
			return fmt.Errorf("%s found twice", id)
		}
		found[id] = true
		return nil
	}
	lists := []struct {
		list        client.ObjectList
		group, kind string
	}{
		{&corev1.NamespaceList{}, "", "Namespace"},
		{&corev1.ConfigMapList{}, "", "ConfigMap"},
		{&corev1.ServiceList{}, "", "Service"},
		{&appsv1.DeploymentList{}, "apps", "Deployment"},
		{&helmv2.HelmReleaseList{}, helmv2.GroupVersion.Group, helmv2.HelmReleaseKind},
	}
	for _, l := range lists {
		if err := d.c.List(d.ctx, l.list, labels); err != nil {
			return 0, err
		}
		objs, err := apimeta.ExtractList(l.list)
		if err != nil {
			return 0, err
		}
		for _, o := range objs {
			m := o.(metav1.Object)
			if err := add(m.GetNamespace(), m.GetName(), l.group, l.kind); err != nil {
				return 0, err
			}
		}
	}
	for id := range found {
		if !inv[id] {
			return 0, fmt.Errorf("orphan: %s is labelled by Kustomization apps but not in its inventory", id)
		}
	}
	for id := range inv {
		if !found[id] {
			return 0, fmt.Errorf("inventory lists %s, which does not exist", id)
		}
	}
	return len(inv), nil
}

// fetchVerify downloads url and checks its sha256 against digest
// ("sha256:<hex>"); it returns the size in bytes.
func fetchVerify(ctx context.Context, url, digest string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		return 0, err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		return 0, fmt.Errorf("artifact digest %s, status says %s", got, digest)
	}
	return n, nil
}

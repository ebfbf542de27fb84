package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/helmstorage"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/eddyops/eddy/pkg/testenv"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// exitCode runs eddy and returns its output and exit code.
func (u *user) exitCode(args ...string) (string, int) {
	u.t.Helper()
	out, err := u.run(args...)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out, ee.ExitCode()
	}
	if err != nil {
		u.t.Fatal(err)
	}
	return out, 0
}

// TestInspectCommandsE2E drives tree, build, diff and logs through the
// built bin/eddy on one eddy dev environment syncing podinfo's ./kustomize:
// logs filtered by --kind/--name/--level and followed; the tree equals the
// inventory, drawn as flux draws it; the build equals the applied objects;
// diff exits 0 with no drift, 1 after an edit in the cluster (naming the
// field) and after local changes (created, deleted), 2 on a bad path.
func TestInspectCommandsE2E(t *testing.T) {
	u := newUser(t)
	podinfo := repoFrom(t, "podinfo")
	u.must("dev", "up", "--detach", "--repo", podinfo, "--path", "./kustomize", "--target-namespace", "default")
	k := u.kustomization("flux-system")
	var inventory []string // Kind/ns/name, sorted
	for _, e := range k.Status.Inventory.Entries {
		m, err := ssa.ParseID(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		inventory = append(inventory, m.String())
	}
	sort.Strings(inventory)
	if len(inventory) == 0 {
		t.Fatal("flux-system has an empty inventory")
	}
	c := u.client()
	local := filepath.Join(podinfo, "kustomize")

	t.Run("logs", func(t *testing.T) { checkLogs(t, u, podinfo) })
	t.Run("tree", func(t *testing.T) { checkTree(t, u, inventory) })
	t.Run("build", func(t *testing.T) { checkBuild(t, u, local, inventory) })
	t.Run("diff", func(t *testing.T) { checkDiff(t, u, c, local) })
}

// checkLogs: logs filtered by --kind/--name/--level, and followed.
func checkLogs(t *testing.T, u *user, podinfo string) {
	out := u.must("logs", "--kind", "Kustomization", "--name", "flux-system")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("no log lines of Kustomization flux-system")
	}
	for _, l := range lines {
		if !strings.Contains(l, " Kustomization/flux-system.flux-system - ") {
			t.Errorf("line not of Kustomization flux-system in flux's format: %q", l)
		}
	}
	// As Flux's kustomize-controller, each successful reconcile is logged.
	if !strings.Contains(out, " info Kustomization/flux-system.flux-system - Reconciliation finished in ") {
		t.Errorf("no info line \"Reconciliation finished in …\" among:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(u.must("logs", "--level", "error", "-A")), "\n") {
		if l != "" && !strings.Contains(l, " error ") {
			t.Errorf("--level error printed %q", l)
		}
	}
	if out := u.must("logs", "--kind", "GitRepository", "--tail", "1000"); !strings.Contains(out, " GitRepository/flux-system.flux-system - ") {
		t.Errorf("no GitRepository lines:\n%s", out)
	}
	oneLineError(t, u.fails("logs", "--level", "loud"), "unsupported log level 'loud'")

	// --follow prints the line of an artifact stored after it started
	// (a new commit; the source-controller logs each artifact it stores).
	cmd := u.command("logs", "--follow", "--tail", "0", "--kind", "GitRepository", "--name", "flux-system")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	got := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			got <- sc.Text()
		}
		close(got)
	}()
	// The follower may open the log only after the first reconcile's
	// line was written (a loaded machine starts it late), so each round
	// makes a new commit, whose artifact is a new line, until it shows one.
	waitUntil(t, "logs --follow prints a line stored after it started", 2*time.Minute, func() (bool, string) {
		if out, err := gitserver.Git(podinfo, "commit", "-q", "--allow-empty", "-m", "empty"); err != nil {
			t.Fatalf("git commit: %v\n%s", err, out)
		}
		u.must("reconcile", "source", "git", "flux-system")
		select {
		case l := <-got:
			if !strings.Contains(l, "GitRepository/flux-system.flux-system - stored artifact") {
				t.Errorf("followed line %q", l)
			}
			return true, ""
		case <-time.After(10 * time.Second):
			return false, "no line within 10s of the reconcile"
		}
	})
}

// checkTree: the tree equals the inventory, drawn as flux draws it.
func checkTree(t *testing.T, u *user, inventory []string) {
	out := u.must("tree", "kustomization", "flux-system")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if lines[0] != "Kustomization/flux-system/flux-system" {
		t.Errorf("root line %q", lines[0])
	}
	var got []string
	for i, l := range lines[1:] {
		mark := "├── "
		if i == len(lines)-2 {
			mark = "└── "
		}
		if !strings.HasPrefix(l, mark) {
			t.Errorf("line %q does not start with %q", l, mark)
		}
		got = append(got, strings.TrimPrefix(l, mark))
	}
	sort.Strings(got)
	if !slices.Equal(got, inventory) {
		t.Errorf("tree lists\n%s\nwant the inventory\n%s", strings.Join(got, "\n"), strings.Join(inventory, "\n"))
	}
	var js struct {
		Resource  ssa.ObjMeta
		Resources []struct{ Resource ssa.ObjMeta }
	}
	if err := json.Unmarshal([]byte(u.must("tree", "ks", "flux-system", "-o", "json")), &js); err != nil {
		t.Fatal(err)
	}
	if js.Resource.Name != "flux-system" || len(js.Resources) != len(inventory) {
		t.Errorf("-o json: %+v", js)
	}
	if out := u.must("tree", "ks", "flux-system", "--compact"); strings.TrimSpace(out) != "Kustomization/flux-system/flux-system" {
		t.Errorf("--compact lists non-Flux objects:\n%s", out)
	}
	oneLineError(t, u.fails("tree", "ks", "missing"), "not found")
}

// checkBuild: the build equals the applied objects; --dry-run builds from a file.
func checkBuild(t *testing.T, u *user, local string, inventory []string) {
	out := u.must("build", "kustomization", "flux-system", "--path", local)
	docs, err := testenv.YAMLDocuments([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmstorage.ReadObjects(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, ssa.MetaOf(o).String())
		if o.GetLabels()[kustomize.NameLabel] != "flux-system" {
			t.Errorf("%s lacks the owner label", ssa.MetaOf(o))
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, inventory) || len(docs) != len(inventory) {
		t.Errorf("build gives\n%s\nwant the applied objects\n%s", strings.Join(got, "\n"), strings.Join(inventory, "\n"))
	}

	// --dry-run: the Kustomization from a file, its overlays and
	// postBuild.substitute applied, no cluster read.
	dir := t.TempDir()
	ksFile := filepath.Join(dir, "app.yaml")
	for name, data := range map[string]string{
		"app.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: app\n  namespace: flux-system\n" +
			"spec:\n  interval: 1m\n  path: ./\n  prune: true\n  targetNamespace: staging\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n" +
			"  postBuild:\n    substitute:\n      GREETING: hello\n",
		"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  say: ${GREETING}\n  to: ${WHOM:=world}\n",
	} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out = u.must("build", "ks", "app", "--path", filepath.Join(dir, "manifests"), "--kustomization-file", ksFile, "--dry-run")
	for _, want := range []string{"namespace: staging", "say: hello", "to: world", "kustomize.toolkit.fluxcd.io/name: app"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run build lacks %q:\n%s", want, out)
		}
	}
	oneLineError(t, u.fails("build", "ks", "flux-system", "--path", filepath.Join(local, "missing")), "invalid resource path", "--path")
	oneLineError(t, u.fails("build", "ks", "flux-system", "--path", local, "--dry-run"), "requires a kustomization file")
}

// checkDiff: diff exits 0 with no drift, 1 after an edit in the cluster and
// after local changes, 2 on a bad path.
func checkDiff(t *testing.T, u *user, c client.Client, local string) {
	ctx := context.Background()
	// Suspended, so the controller does not undo the edit below.
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "flux-system", Name: "flux-system"}, ks); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ks.DeepCopy())
	ks.Spec.Suspend = true
	if err := c.Patch(ctx, ks, patch); err != nil {
		t.Fatal(err)
	}
	// A reconcile already running when the patch landed could still undo
	// the edit; once the controller has observed the suspended
	// generation, none runs (one object is never reconciled twice at once).
	waitUntil(t, "kustomize-controller observes flux-system suspended", 2*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
			return false, err.Error()
		}
		return ks.Status.ObservedGeneration == ks.Generation, fmt.Sprintf("generation %d, observed %d", ks.Generation, ks.Status.ObservedGeneration)
	})
	if out, code := u.exitCode("diff", "kustomization", "flux-system", "--path", local); code != 0 || strings.Contains(out, "►") {
		t.Fatalf("diff with no drift: exit %d", code)
	}
	// A `kubectl edit`: an Update by another field manager.
	// The Deployment's status changes under it (its pods, the HPA): a
	// conflict is read again, as kubectl edit would be retried.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "podinfo"}, dep); err != nil {
			return err
		}
		dep.Spec.MinReadySeconds = 7
		dep.Spec.RevisionHistoryLimit = ptr.To[int32](3)
		return c.Update(ctx, dep, client.FieldOwner("kubectl-edit"))
	}); err != nil {
		t.Fatal(err)
	}
	out, code := u.exitCode("diff", "ks", "flux-system", "--path", local)
	if code != 1 {
		t.Errorf("diff after an edit: exit %d, want 1", code)
	}
	for _, want := range []string{"► Deployment/default/podinfo drifted", ".spec.minReadySeconds: 7 → 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q", want)
		}
	}
	// Local changes: an object added, one removed (pruned, so deleted).
	kus := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n  - service.yaml\n  - extra.yaml\n"
	extra := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  a: b\n"
	for name, data := range map[string]string{"kustomization.yaml": kus, "extra.yaml": extra} {
		if err := os.WriteFile(filepath.Join(local, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, code = u.exitCode("diff", "ks", "flux-system", "--path", local)
	if code != 1 {
		t.Errorf("diff after local changes: exit %d, want 1", code)
	}
	for _, want := range []string{"► ConfigMap/default/extra created", "► HorizontalPodAutoscaler/default/podinfo deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q", want)
		}
	}
	if _, code := u.exitCode("diff", "ks", "flux-system", "--path", filepath.Join(local, "missing")); code != 2 {
		t.Errorf("diff of a missing path: exit %d, want 2", code)
	}
}

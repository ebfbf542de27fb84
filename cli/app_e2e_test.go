package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/pkg/appdiff"
	"github.com/eddyops/eddy/pkg/crds"
	"github.com/eddyops/eddy/pkg/localcluster"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// appCluster is an API server with Argo CD's CRDs and the namespaces argocd
// and team-a: the app commands need no controller, the tests play it by
// writing status and operationState themselves.
type appCluster struct {
	t  *testing.T
	c  client.Client
	kc string // --kubeconfig=...
	// user is the kubeconfig's user, the initiator eddy records.
	user string
}

func startAppCluster(t *testing.T) *appCluster {
	t.Helper()
	root, _ := built(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, err := localcluster.Start(ctx, localcluster.Options{Profile: localcluster.ProfileAPI})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	all, err := crds.Read(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	var argo []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range all {
		if crd.Spec.Group == argov1.GroupVersion.Group {
			argo = append(argo, crd)
		}
	}
	if err := crds.Install(ctx, c, argo); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"argocd", "team-a"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := clientcmd.LoadFromFile(cluster.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	return &appCluster{t: t, c: c, kc: "--kubeconfig=" + cluster.KubeconfigPath, user: raw.Contexts[raw.CurrentContext].AuthInfo}
}

// update applies change to the Application ns/name, read anew on conflict,
// as a controller writes it (no status subresource: one update).
func (ac *appCluster) update(ns, name string, change func(a *argov1.Application)) *argov1.Application {
	ac.t.Helper()
	a := &argov1.Application{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := ac.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, a); err != nil {
			return err
		}
		change(a)
		return ac.c.Update(context.Background(), a)
	})
	if err != nil {
		ac.t.Fatal(err)
	}
	return a
}

// awaitOperation waits until the Application has an operation and returns it.
func (ac *appCluster) awaitOperation(ns, name string) *argov1.Operation {
	ac.t.Helper()
	var op *argov1.Operation
	waitUntil(ac.t, "an operation on "+ns+"/"+name, time.Minute, func() (bool, string) {
		a := &argov1.Application{}
		if err := ac.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, a); err != nil {
			return false, err.Error()
		}
		op = a.Operation
		return op != nil, "no operation"
	})
	return op
}

// finishOperation plays the controller ending the operation: Running
// first, then phase with a sync result of results, a history entry when
// it succeeded, the operation cleared and the Application compared again.
func (ac *appCluster) finishOperation(ns, name, phase, message string, results ...*argov1.ResourceResult) {
	ac.t.Helper()
	ac.update(ns, name, func(a *argov1.Application) {
		a.Status.OperationState = &argov1.OperationState{Operation: *a.Operation, Phase: argov1.OperationRunning, StartedAt: metav1.Now()}
	})
	time.Sleep(time.Second) // the command shows the running operation
	ac.update(ns, name, func(a *argov1.Application) {
		st := a.Status.OperationState
		now := metav1.Now()
		st.Phase, st.Message, st.FinishedAt = phase, message, &now
		rev := firstNonEmpty(st.Operation.Sync.Revision, syncedSHA)
		st.SyncResult = &argov1.SyncOperationResult{Revision: rev, Resources: results}
		if phase == argov1.OperationSucceeded {
			a.Status.Sync.Status, a.Status.Sync.Revision = argov1.SyncStatusSynced, rev
			a.Status.History = append(a.Status.History, argov1.RevisionHistory{ID: int64(len(a.Status.History)), Revision: rev,
				DeployedAt: now, Source: *a.Spec.Source})
		}
		a.Operation = nil
		a.Status.ReconciledAt = &now
	})
}

// compareAgain plays the comparison a refresh asks for: it waits until the
// Application carries the refresh annotation, then writes change, a new
// reconciledAt and the annotation removed.
func (ac *appCluster) compareAgain(ns, name string, change func(a *argov1.Application)) {
	ac.t.Helper()
	waitUntil(ac.t, "a refresh of "+ns+"/"+name, time.Minute, func() (bool, string) {
		a := &argov1.Application{}
		if err := ac.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, a); err != nil {
			return false, err.Error()
		}
		_, ok := a.Annotations[argov1.AnnotationRefresh]
		return ok, "no refresh annotation"
	})
	ac.update(ns, name, func(a *argov1.Application) {
		now := metav1.Now()
		delete(a.Annotations, argov1.AnnotationRefresh)
		a.Status.ReconciledAt = &now
		if change != nil {
			change(a)
		}
	})
}

const (
	syncedSHA = "0d521c6e2ae55ab8ecb3b3e6b2b2c1cb6aee2d9f"
	olderSHA  = "53e28ff20cc530b9ada2173fbbd64d48338583ba"
)

// newApplications creates payment-api (argocd, manual, compared: OutOfSync,
// two syncs in its history) and web (team-a, automated).
func (ac *appCluster) newApplications() {
	ac.t.Helper()
	ctx := context.Background()
	src := argov1.ApplicationSource{RepoURL: "https://git.example/acme/infra-k8s.git", TargetRevision: "main", Path: "apps/payment-api"}
	pay := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Name: "payment-api", Namespace: "argocd"},
		Spec: argov1.ApplicationSpec{Project: "default", Source: &src,
			Destination: argov1.ApplicationDestination{Server: argov1.InClusterServer, Namespace: "production"},
			SyncPolicy:  &argov1.SyncPolicy{SyncOptions: []string{"CreateNamespace=true"}}}}
	yes := true
	web := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec: argov1.ApplicationSpec{Project: "default", Source: &src,
			Destination: argov1.ApplicationDestination{Name: argov1.InClusterName, Namespace: "web"},
			SyncPolicy:  &argov1.SyncPolicy{Automated: &argov1.SyncPolicyAutomated{Prune: &yes}}}}
	for _, a := range []*argov1.Application{pay, web} {
		if err := ac.c.Create(ctx, a); err != nil {
			ac.t.Fatal(err)
		}
	}
	deployed := metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	ac.update("argocd", "payment-api", func(a *argov1.Application) {
		a.Status = argov1.ApplicationStatus{
			ReconciledAt: &deployed,
			Sync:         argov1.SyncStatus{Status: argov1.SyncStatusOutOfSync, Revision: syncedSHA},
			Health:       argov1.AppHealthStatus{Status: argov1.HealthHealthy},
			Resources: []argov1.ResourceStatus{
				{Version: "v1", Kind: "ConfigMap", Namespace: "production", Name: "payment-config", Status: argov1.SyncStatusOutOfSync},
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "production", Name: "payment-api", Status: argov1.SyncStatusSynced,
					Health: &argov1.HealthStatus{Status: argov1.HealthHealthy}},
			},
			History: []argov1.RevisionHistory{
				{ID: 0, Revision: olderSHA, DeployedAt: deployed, Source: src},
				{ID: 1, Revision: syncedSHA, DeployedAt: metav1.NewTime(deployed.Add(time.Hour)), Source: src},
			},
			Conditions: []argov1.ApplicationCondition{{Type: argov1.ConditionSharedResourceWarning, Message: "ConfigMap/payment-config is part of applications argocd/payment-api and other"}},
		}
		a.Annotations = map[string]string{appdiff.Annotation: mustEncode(ac.t, []appdiff.Object{{Kind: "ConfigMap", Namespace: "production", Name: "payment-config",
			Fields: []appdiff.Field{{Path: "/data/LOG_LEVEL", Live: json.RawMessage(`"debug"`), Desired: json.RawMessage(`"info"`), Manager: "kubectl-edit"}}}})}
	})
	ac.update("team-a", "web", func(a *argov1.Application) {
		a.Status.Sync = argov1.SyncStatus{Status: argov1.SyncStatusSynced, Revision: syncedSHA}
		a.Status.Health.Status = argov1.HealthProgressing
		a.Status.ReconciledAt = &deployed
		a.Status.History = []argov1.RevisionHistory{{ID: 0, Revision: olderSHA, DeployedAt: deployed, Source: src},
			{ID: 1, Revision: syncedSHA, DeployedAt: deployed, Source: src}}
	})
}

func mustEncode(t *testing.T, objs []appdiff.Object) string {
	s, err := appdiff.Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fieldsOf returns the lines of out, each split in fields.
func fieldsOf(out string) [][]string {
	var rows [][]string
	for _, l := range lines(out) {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

// TestAppE2E drives the built eddy's Application commands against an API
// server where the test plays application-controller: get apps (argocd
// app list's table), app get, history and diff (its exit codes), sync's and
// rollback's refusals, the operation sync and rollback write, and their
// results.
func TestAppE2E(t *testing.T) {
	u := newUser(t)
	ac := startAppCluster(t)
	ac.newApplications()
	kc := ac.kc

	t.Run("GetApps", func(t *testing.T) {
		rows := fieldsOf(u.must(kc, "get", "apps"))
		want := [][]string{{"NAME", "CLUSTER", "NAMESPACE", "PROJECT", "STATUS", "HEALTH", "SYNCPOLICY", "CONDITIONS"},
			{"payment-api", "https://kubernetes.default.svc", "production", "default", "OutOfSync", "Healthy", "Manual", "SharedResourceWarning"}}
		if !equalRows(rows, want) {
			t.Errorf("eddy get apps = %q\nwant %q", rows, want)
		}
		rows = fieldsOf(u.must(kc, "get", "applications", "-A", "-o", "wide"))
		if len(rows) != 3 || rows[0][8] != "REPO" || rows[2][0] != "team-a/web" || rows[2][1] != "in-cluster" || rows[2][6] != "Auto-Prune" ||
			rows[2][10] != "main" {
			t.Errorf("eddy get applications -A -o wide = %q", rows)
		}
		out := u.must(kc, "get", "app", "web", "-n", "team-a", "-o", "json")
		a := &argov1.Application{}
		if err := json.Unmarshal([]byte(out), a); err != nil || a.Kind != "Application" || a.Name != "web" {
			t.Errorf("eddy get app web -n team-a -o json: %v, %+v", err, a.TypeMeta)
		}
		oneLineError(t, u.fails(kc, "get", "app", "nothing"), `Application "nothing" not found in namespace argocd`)
	})

	t.Run("Get", func(t *testing.T) {
		out := u.must(kc, "app", "get", "payment-api")
		for _, want := range []string{"Name:               payment-api\n", "Server:             https://kubernetes.default.svc\n",
			"- Repo:             https://git.example/acme/infra-k8s.git\n", "  Path:             apps/payment-api\n",
			"Sync Policy:        Manual\n", "Sync Status:        OutOfSync from main (0d521c6)\n", "Health Status:      Healthy\n",
			"CONDITION              MESSAGE\nSharedResourceWarning  ConfigMap/payment-config is part of applications argocd/payment-api and other\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("eddy app get lacks %q", want)
			}
		}
		rows := fieldsOf(out[strings.Index(out, "GROUP"):])
		want := [][]string{{"GROUP", "KIND", "NAMESPACE", "NAME", "STATUS", "HEALTH", "HOOK", "MESSAGE"},
			{"ConfigMap", "production", "payment-config", "OutOfSync"},
			{"apps", "Deployment", "production", "payment-api", "Synced", "Healthy"}}
		if !equalRows(rows, want) {
			t.Errorf("eddy app get resources = %q\nwant %q", rows, want)
		}
		if out := u.must(kc, "app", "get", "team-a/web", "-o", "yaml"); !strings.Contains(out, "kind: Application\n") {
			t.Errorf("eddy app get team-a/web -o yaml:\n%s", out)
		}
	})

	t.Run("History", func(t *testing.T) {
		rows := fieldsOf(u.must(kc, "app", "history", "payment-api"))
		want := [][]string{{"SOURCE", "https://git.example/acme/infra-k8s.git"}, {"ID", "DATE", "REVISION"},
			{"0", "2026-03-01T10:00:00Z", "main", "(53e28ff)"}, {"1", "2026-03-01T11:00:00Z", "main", "(0d521c6)"}}
		if !equalRows(rows, want) {
			t.Errorf("eddy app history = %q\nwant %q", rows, want)
		}
		if out := u.must(kc, "app", "history", "payment-api", "-o", "id"); out != "0\n1\n" {
			t.Errorf("eddy app history -o id = %q", out)
		}
	})

	t.Run("Diff", func(t *testing.T) {
		out, err := u.run(kc, "app", "diff", "payment-api")
		if code := exitCode(err); code != 1 || !strings.Contains(out, "===== /ConfigMap production/payment-config ======\n"+
			"/data/LOG_LEVEL (changed by kubectl-edit)\n- \"debug\"\n+ \"info\"\n") {
			t.Errorf("eddy app diff with a pending diff: exit %d, output:\n%s", code, out)
		}
		out, err = u.run(kc, "app", "diff", "web", "-n", "team-a")
		if code := exitCode(err); code != 0 || strings.Contains(out, "=====") {
			t.Errorf("eddy app diff of a synced app: exit %d, output:\n%s", code, out)
		}
		if _, err = u.run(kc, "app", "diff", "nothing"); exitCode(err) != 2 {
			t.Errorf("eddy app diff of a missing app: exit %d, want 2", exitCode(err))
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		oneLineError(t, u.fails(kc, "app", "rollback", "team-a/web", "0"), "rollback cannot be initiated when auto-sync is enabled")
		oneLineError(t, u.fails(kc, "app", "sync", "team-a/web", "--revision", "v2"), "Cannot sync to v2: auto-sync currently set to main")
		ac.update("argocd", "payment-api", func(a *argov1.Application) {
			a.Operation = &argov1.Operation{Sync: &argov1.SyncOperation{}, InitiatedBy: argov1.OperationInitiator{Username: "bob"}}
		})
		oneLineError(t, u.fails(kc, "app", "sync", "payment-api", "--async"), "another operation is already in progress")
		op := ac.update("argocd", "payment-api", func(a *argov1.Application) { a.Operation = nil })
		if op.Operation != nil {
			t.Fatal("the operation was not cleared")
		}
	})

	t.Run("SyncAsync", func(t *testing.T) {
		out := u.must(kc, "app", "sync", "payment-api", "--async", "--prune", "--sync-option", "ServerSideApply=true",
			"--resource", ":ConfigMap:payment-config")
		if !strings.Contains(out, "✔ sync of payment-api requested") {
			t.Errorf("eddy app sync --async printed:\n%s", out)
		}
		op := ac.awaitOperation("argocd", "payment-api")
		s := op.Sync
		if !s.Prune || s.DryRun || strings.Join(s.SyncOptions, ",") != "CreateNamespace=true,ServerSideApply=true" ||
			len(s.Resources) != 1 || s.Resources[0] != (argov1.SyncOperationResource{Kind: "ConfigMap", Namespace: "production", Name: "payment-config"}) ||
			s.Source == nil || s.Source.Path != "apps/payment-api" || s.SyncStrategy == nil || s.SyncStrategy.Hook == nil ||
			op.InitiatedBy.Username != ac.user {
			t.Errorf("operation written by eddy app sync --async: %+v, initiated by %+v (want user %q)", s, op.InitiatedBy, ac.user)
		}
		ac.finishOperation("argocd", "payment-api", argov1.OperationSucceeded, "successfully synced (all tasks run)")
	})

	t.Run("SyncFails", func(t *testing.T) {
		cmd := u.command(kc, "app", "sync", "payment-api", "--timeout", "1m")
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { defer close(done); out, err = cmd.CombinedOutput() }()
		ac.awaitOperation("argocd", "payment-api")
		ac.finishOperation("argocd", "payment-api", argov1.OperationFailed, "one or more objects failed to apply",
			&argov1.ResourceResult{Version: "v1", Kind: "ConfigMap", Namespace: "production", Name: "payment-config", Status: argov1.ResultSyncFailed,
				Message: "admission webhook denied the request"})
		ac.compareAgain("argocd", "payment-api", nil)
		<-done
		t.Logf("$ eddy app sync payment-api (exit %d)\n%s", exitCode(err), out)
		if exitCode(err) != 1 || !strings.Contains(string(out), "✗ Operation has completed with phase: Failed: one or more objects failed to apply") ||
			!strings.Contains(string(out), "admission webhook denied the request") {
			t.Errorf("a failed sync: exit %d, output:\n%s", exitCode(err), out)
		}
	})

	t.Run("Rollback", func(t *testing.T) {
		cmd := u.command(kc, "app", "rollback", "payment-api", "0", "--timeout", "1m")
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { defer close(done); out, err = cmd.CombinedOutput() }()
		op := ac.awaitOperation("argocd", "payment-api")
		if op.Sync.Revision != olderSHA || op.Sync.Source == nil || op.Sync.SyncStrategy == nil || op.Sync.SyncStrategy.Apply == nil {
			t.Errorf("rollback operation: %+v", op.Sync)
		}
		ac.finishOperation("argocd", "payment-api", argov1.OperationSucceeded, "successfully synced (all tasks run)")
		ac.compareAgain("argocd", "payment-api", nil)
		<-done
		t.Logf("$ eddy app rollback payment-api 0 (exit %d)\n%s", exitCode(err), out)
		if err != nil || !strings.Contains(string(out), "rollback of payment-api to history 0 (53e28ff20cc530b9ada2173fbbd64d48338583ba) requested") ||
			!strings.Contains(string(out), "Phase:              Succeeded") {
			t.Errorf("eddy app rollback: %v\n%s", err, out)
		}
	})
}

// TestAppE2EStatusProblems drives the built eddy's Application commands at
// Applications whose status explains nothing by itself: one never
// reconciled (its namespace is not watched) and one whose comparison
// failed; and a sync whose summary must come from the comparison after it.
func TestAppE2EStatusProblems(t *testing.T) {
	u := newUser(t)
	ac := startAppCluster(t)
	ac.newApplications()
	kc := ac.kc
	ctx := context.Background()
	src := argov1.ApplicationSource{RepoURL: "https://git.example/argoproj/argocd-example-apps.git", TargetRevision: "main", Path: "guestbook"}
	for _, key := range []client.ObjectKey{{Namespace: "default", Name: "wrong-ns"}, {Namespace: "argocd", Name: "typo"}} {
		a := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
			Spec: argov1.ApplicationSpec{Project: "default", Source: &src,
				Destination: argov1.ApplicationDestination{Server: argov1.InClusterServer, Namespace: "guestbook"}}}
		if err := ac.c.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	failure := "Failed to load target state: failed to generate manifest for source 1 of 1: GitRepository argocd/app-src-1: " +
		"no branch main in https://git.example/argoproj/argocd-example-apps.git"
	ac.update("argocd", "typo", func(a *argov1.Application) {
		now := metav1.Now()
		a.Status = argov1.ApplicationStatus{ReconciledAt: &now, Sync: argov1.SyncStatus{Status: argov1.SyncStatusUnknown},
			Health:     argov1.AppHealthStatus{Status: argov1.HealthUnknown},
			Conditions: []argov1.ApplicationCondition{{Type: argov1.ConditionComparisonError, Message: failure, LastTransitionTime: &now}}}
	})

	t.Run("NeverReconciled", func(t *testing.T) {
		msg := "Application default/wrong-ns has never been reconciled: either application-controller does not watch namespace default " +
			"(it watches its own namespace, argocd by default, and those of its --application-namespaces flag), " +
			"or application-controller is not running"
		for _, verb := range []string{"get", "history"} {
			if out := u.must(kc, "app", verb, "default/wrong-ns"); !strings.Contains(out, "⚠ "+msg+"\n") {
				t.Errorf("eddy app %s of an Application never reconciled does not warn %q", verb, msg)
			}
		}
		out, err := u.run(kc, "app", "diff", "default/wrong-ns")
		if code := exitCode(err); code != 2 || !strings.Contains(out, "✗ "+msg+"\n") {
			t.Errorf("eddy app diff of an Application never reconciled: exit %d, want 2 and %q", code, msg)
		}
		for _, verb := range []string{"sync", "wait"} {
			start := time.Now()
			out := u.fails(kc, "app", verb, "default/wrong-ns", "-n", "default")
			if want := "◎ waiting for application-controller to reconcile default/wrong-ns for the first time\n✗ " + msg + "\n"; out != want {
				t.Errorf("eddy app %s of an Application never reconciled:\n%s\nwant:\n%s", verb, out, want)
			}
			if took := time.Since(start); took > time.Minute {
				t.Errorf("eddy app %s of an Application never reconciled took %s, want about 15s", verb, took)
			}
		}
		a := &argov1.Application{}
		if err := ac.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "wrong-ns"}, a); err != nil || a.Operation != nil {
			t.Errorf("eddy app sync of an Application never reconciled wrote an operation: %v, %+v", err, a.Operation)
		}
	})

	t.Run("DiffOfAFailedComparison", func(t *testing.T) {
		out, err := u.run(kc, "app", "diff", "typo")
		if code := exitCode(err); code != 2 || !strings.Contains(out, "✗ cannot diff typo: the last comparison failed: ComparisonError: "+failure+"\n") {
			t.Errorf("eddy app diff of an Application whose comparison failed: exit %d, want 2 and the condition", code)
		}
	})

	// The comparison written as the operation ended still says Synced; the
	// one after it says OutOfSync (the revision synced is not the target's):
	// the summary is the latter's.
	t.Run("SyncPrintsTheComparisonAfterIt", func(t *testing.T) {
		cmd := u.command(kc, "app", "sync", "payment-api", "--revision", olderSHA, "--timeout", "1m")
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { defer close(done); out, err = cmd.CombinedOutput() }()
		ac.awaitOperation("argocd", "payment-api")
		ac.finishOperation("argocd", "payment-api", argov1.OperationSucceeded, "successfully synced (all tasks run)")
		ac.compareAgain("argocd", "payment-api", func(a *argov1.Application) {
			a.Status.Sync = argov1.SyncStatus{Status: argov1.SyncStatusOutOfSync, Revision: syncedSHA}
		})
		<-done
		t.Logf("$ eddy app sync payment-api --revision %s (exit %d)\n%s", olderSHA, exitCode(err), out)
		if err != nil || !strings.Contains(string(out), "✔ operation Succeeded: sync OutOfSync, health Healthy") ||
			!strings.Contains(string(out), "Sync Status:        OutOfSync from main (0d521c6)\n") || strings.Contains(string(out), "Synced to") {
			t.Errorf("eddy app sync does not end with the comparison made after the operation: %v", err)
		}
	})
}

// TestAppTerminal runs `eddy app sync` and `eddy app wait` at a
// pseudo-terminal while the test plays the controller: the spinner shows
// the operation's and the Application's state while they wait, and leaves
// a clean screen with the result.
func TestAppTerminal(t *testing.T) {
	u := newUser(t)
	ac := startAppCluster(t)
	ac.newApplications()

	t.Run("Sync", func(t *testing.T) {
		r := u.startTTY(160, false, ac.kc, "app", "sync", "payment-api", "--timeout", "1m")
		r.waitFor("waiting for the operation: sync OutOfSync, health Healthy, operation requested", 30*time.Second)
		ac.awaitOperation("argocd", "payment-api")
		ac.finishOperation("argocd", "payment-api", argov1.OperationSucceeded, "successfully synced (all tasks run)",
			&argov1.ResourceResult{Version: "v1", Kind: "ConfigMap", Namespace: "production", Name: "payment-config", Status: argov1.ResultSynced,
				Message: "configmap/payment-config configured"})
		ac.compareAgain("argocd", "payment-api", nil)
		screen := strings.Join(r.checkTerminal(time.Minute, false), "\n")
		for _, want := range []string{"✔ sync of payment-api requested", "✔ operation Succeeded: sync Synced, health Healthy",
			"Sync Status:        Synced to main (0d521c6)", "Phase:              Succeeded", "configmap/payment-config configured"} {
			if !strings.Contains(screen, want) {
				t.Errorf("eddy app sync at a terminal does not show %q", want)
			}
		}
		if !strings.Contains(string(r.output()), "operation Running") {
			t.Error("eddy app sync at a terminal never showed the running operation")
		}
	})

	t.Run("Wait", func(t *testing.T) {
		ac.update("team-a", "web", func(a *argov1.Application) {
			a.Status.Sync.Status, a.Status.Health.Status = argov1.SyncStatusOutOfSync, argov1.HealthProgressing
		})
		r := u.startTTY(100, true, ac.kc, "app", "wait", "web", "-n", "team-a", "--sync", "--health", "--timeout", "1m")
		r.waitFor("waiting for sync and health: sync OutOfSync, health Progressing", 30*time.Second)
		ac.update("team-a", "web", func(a *argov1.Application) { a.Status.Sync.Status = argov1.SyncStatusSynced })
		r.waitFor("sync Synced, health Progressing", 30*time.Second)
		ac.update("team-a", "web", func(a *argov1.Application) { a.Status.Health.Status = argov1.HealthHealthy })
		screen := strings.Join(r.checkTerminal(time.Minute, true), "\n")
		if !strings.Contains(screen, "✔ team-a/web: sync Synced, health Healthy") || !strings.Contains(screen, "Health Status:      Healthy") {
			t.Errorf("eddy app wait at a terminal ends with:\n%s", screen)
		}
	})

	t.Run("WaitTimesOut", func(t *testing.T) {
		ac.update("team-a", "web", func(a *argov1.Application) { a.Status.Health.Status = argov1.HealthProgressing })
		r := u.startTTY(100, true, ac.kc, "app", "wait", "web", "-n", "team-a", "--health", "--timeout", "3s")
		screen := strings.Join(r.checkTerminalExit(time.Minute, true, 1), "\n")
		if !strings.Contains(screen, "✗ timed out waiting for health: last state: sync Synced, health Progressing") {
			t.Errorf("eddy app wait that times out ends with:\n%s", screen)
		}
	})
}

func equalRows(got, want [][]string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if strings.Join(got[i], "\x00") != strings.Join(want[i], "\x00") {
			return false
		}
	}
	return true
}

// exitCode is the exit code of a run's error: 0 for nil, -1 when it did not
// exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

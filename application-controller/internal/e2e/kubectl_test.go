package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selfHealWithin bounds the time from `kubectl edit` of a Git-declared key
// to its restored value: "within seconds" (argocd-contract §10 step 5).
const selfHealWithin = 10 * time.Second

// editCurrency is kubectl edit's editor (KUBE_EDITOR): it changes the
// Git-declared key CURRENCY of the ConfigMap kubectl hands it and adds
// NOTE, a key Git does not declare.
const editCurrency = "#!/bin/sh\nsed -i 's/^  CURRENCY: EUR$/  CURRENCY: USD\\n  NOTE: added-by-me/' \"$1\"\n"

// kubectl runs the kubectl of `make tools` against the suite's cluster, as
// an Argo CD user would: KUBECONFIG set, a HOME of its own (for kubectl's
// discovery cache).
type kubectl struct {
	path string
	env  []string
}

// newKubectl finds kubectl ($EDDY_K8S_BIN_DIR or bin/k8s); without it the
// test fails, as a missing cluster binary fails the suite.
func newKubectl(t *testing.T) *kubectl {
	t.Helper()
	path, err := localcluster.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	return &kubectl{path: path, env: append(os.Environ(), "KUBECONFIG="+env.KubeconfigPath, "HOME="+t.TempDir())}
}

// run runs kubectl with args, which are argv as a shell passes them (its
// quotes removed), and returns its standard output; a non-zero exit fails t.
func (k *kubectl) run(t *testing.T, args ...string) string {
	t.Helper()
	return k.runWith(t, "", nil, args...)
}

// runWith is run with stdin as standard input and extra environment variables.
func (k *kubectl) runWith(t *testing.T, stdin string, extra []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), k.path, args...)
	cmd.Env = append(append([]string(nil), k.env...), extra...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestSeedApplicationWithKubectl runs the seed Application through kubectl,
// each line as an Argo CD user types it (argocd-contract §10), its repoURL
// pointed at the local Git server: `kubectl apply -f -` of its YAML; the
// jsonpath sync status and the applications table once it is Synced and
// Healthy; `kubectl edit` of a Git-declared key, undone within seconds;
// the history's revisions, one per full sync (a self-heal adds none, a sync
// requested by `kubectl patch` of operation and an automated sync after a
// commit and `kubectl annotate` of the refresh annotation add one each,
// oldest first); `kubectl delete application` leaves the resources.
func TestSeedApplicationWithKubectl(t *testing.T) {
	logsOnFailure(t)
	k := newKubectl(t)
	repo := gitSrv.NewRepo(t, paymentAPI)
	first := repo.MustGit(t, "rev-parse", "HEAD")
	out := k.runWith(t, seedYAML("payment-api", repo.URL(), "production", true), nil, "apply", "-f", "-")
	t.Cleanup(func() { deleteSeed(t, k) })
	if strings.TrimSpace(out) != "application.argoproj.io/payment-api created" {
		t.Errorf("kubectl apply printed %q", out)
	}
	app := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Name: "payment-api", Namespace: argocd}}
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))

	if got := k.run(t, "get", "application", "payment-api", "-n", "argocd", "-o", "jsonpath={.status.sync.status}"); got != "Synced" {
		t.Errorf("jsonpath {.status.sync.status} printed %q, want Synced", got)
	}
	checkApplicationsTable(t, k.run(t, "get", "applications", "-n", "argocd"))
	editUndone(t, k)
	history := func() string {
		return k.run(t, "get", "application", "payment-api", "-n", "argocd", "-o", "jsonpath={.status.history[*].revision}")
	}
	if got := history(); got != first {
		t.Errorf("history after the first sync and a self-heal: %q, want %q", got, first)
	}

	out = k.run(t, "-n", "argocd", "patch", "app", "payment-api", "--type", "merge", "-p",
		`{"operation":{"initiatedBy":{"username":"me"},"sync":{"prune":true,"syncOptions":["CreateNamespace=true"]}}}`)
	if strings.TrimSpace(out) != "application.argoproj.io/payment-api patched" {
		t.Errorf("kubectl patch printed %q", out)
	}
	waitApp(t, app, "the sync requested by kubectl patch done", func() bool {
		return app.Operation == nil && len(app.Status.History) == 2 && app.Status.OperationState != nil &&
			app.Status.OperationState.Operation.InitiatedBy.Username == "me" && app.Status.OperationState.Phase == argov1.OperationSucceeded
	})
	if got, want := history(), first+" "+first; got != want {
		t.Errorf("history after a sync by kubectl patch: %q, want %q", got, want)
	}

	second := repo.MustCommit(t, map[string]string{"apps/payment-api/configmap.yaml": strings.Replace(paymentAPI["apps/payment-api/configmap.yaml"], "EUR", "GBP", 1)}, "GBP")
	out = k.run(t, "-n", "argocd", "annotate", "app", "payment-api", "argocd.argoproj.io/refresh=normal", "--overwrite")
	if strings.TrimSpace(out) != "application.argoproj.io/payment-api annotated" {
		t.Errorf("kubectl annotate printed %q", out)
	}
	waitApp(t, app, "Synced at the second commit, the refresh annotation removed", func() bool {
		_, refreshing := app.Annotations[argov1.AnnotationRefresh]
		return !refreshing && app.Status.Sync.Revision == second && len(app.Status.History) == 3 && syncedHealthy(app)()
	})
	if got, want := history(), first+" "+first+" "+second; got != want {
		t.Errorf("history after a commit and a refresh: %q, want %q (oldest first)", got, want)
	}
	if got := k.run(t, "get", "configmap", "payment-config", "-n", "production", "-o", "jsonpath={.data.CURRENCY}"); got != "GBP" {
		t.Errorf("CURRENCY after the second commit's sync: %q, want GBP", got)
	}

	// argocd-contract §10 step 7: without the resources finalizer, deleting
	// the Application leaves what it applied.
	k.run(t, "delete", "application", "payment-api", "-n", "argocd")
	if got := k.run(t, "get", "configmap", "payment-config", "-n", "production", "-o", "name"); strings.TrimSpace(got) != "configmap/payment-config" {
		t.Errorf("after kubectl delete application: %q, want the ConfigMap left in place", got)
	}
}

// checkApplicationsTable checks `kubectl get applications -n argocd`: the
// header NAME, SYNC STATUS, HEALTH STATUS and the row payment-api Synced
// Healthy, each cell under its header (argocd-contract §1.0 printer columns).
func checkApplicationsTable(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	if got := strings.Join(strings.Fields(header), " "); got != "NAME SYNC STATUS HEALTH STATUS" {
		t.Errorf("kubectl get applications header %q, want NAME  SYNC STATUS  HEALTH STATUS\n%s", header, out)
		return
	}
	for _, row := range lines[1:] {
		if strings.Fields(row)[0] != "payment-api" {
			continue
		}
		if got := strings.Join(strings.Fields(row), " "); got != "payment-api Synced Healthy" {
			t.Errorf("kubectl get applications row %q, want payment-api  Synced  Healthy", row)
		}
		if strings.Index(row, "Synced") != strings.Index(header, "SYNC STATUS") || strings.Index(row, "Healthy") != strings.Index(header, "HEALTH STATUS") {
			t.Errorf("kubectl get applications: cells not under their headers:\n%s", out)
		}
		return
	}
	t.Errorf("kubectl get applications has no payment-api row:\n%s", out)
}

// editUndone runs `kubectl label` and then `kubectl edit configmap
// payment-config -n production` with an editor that changes CURRENCY, a
// key Git declares, and adds NOTE; it waits until the controller restores
// CURRENCY (argocd-contract §10 step 5), logging how long that took, and
// checks that the label and NOTE, which Git does not declare, survived the
// self-heal's apply (three-way, argocd-contract §6.1).
func editUndone(t *testing.T, k *kubectl) {
	t.Helper()
	k.run(t, "label", "configmap", "payment-config", "-n", "production", "team=me")
	editor := filepath.Join(t.TempDir(), "edit-currency")
	if err := os.WriteFile(editor, []byte(editCurrency), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := k.runWith(t, "", []string{"KUBE_EDITOR=" + editor}, "edit", "configmap", "payment-config", "-n", "production")
	if strings.TrimSpace(out) != "configmap/payment-config edited" {
		t.Fatalf("kubectl edit printed %q, want configmap/payment-config edited", out)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "production", Name: "payment-config"}}
	testenv.WaitForTimeout(t, env.Client, cm, "CURRENCY restored", selfHealWithin, func() bool { return cm.Data["CURRENCY"] == "EUR" })
	t.Logf("self-heal: CURRENCY restored %s after kubectl edit started", time.Since(start).Round(time.Millisecond))
	got := k.run(t, "get", "configmap", "payment-config", "-n", "production", "-o", "jsonpath={.data.CURRENCY} {.data.NOTE} {.metadata.labels.team}")
	if got != "EUR added-by-me me" {
		t.Errorf("CURRENCY, NOTE and label team after the self-heal: %q, want EUR added-by-me me", got)
	}
}

// deleteSeed deletes the seed Application if a failure left it, and waits
// until it is gone: the other tests create their own payment-api.
func deleteSeed(t *testing.T, k *kubectl) {
	ctx, cancel := context.WithTimeout(context.Background(), appTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.path, "delete", "application", "payment-api", "-n", "argocd", "--ignore-not-found")
	cmd.Env = k.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("kubectl delete application payment-api: %v\n%s", err, out)
	}
}

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/localcluster"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	eddyOnce sync.Once
	eddyExe  string
	eddyErr  error
)

// eddyCLI is the built eddy CLI: EDDY_BUILT_BIN_DIR/eddy (make build),
// else built from ./cli once.
func eddyCLI(t *testing.T) string {
	t.Helper()
	eddyOnce.Do(func() {
		if dir := os.Getenv("EDDY_BUILT_BIN_DIR"); dir != "" {
			if fi, err := os.Stat(filepath.Join(dir, "eddy")); err == nil && fi.Mode().IsRegular() {
				eddyExe = filepath.Join(dir, "eddy")
				return
			}
		}
		root, err := localcluster.WorkspaceRoot()
		if err != nil {
			eddyErr = err
			return
		}
		out := filepath.Join(ctrls.Dir, "eddy")
		cmd := exec.Command("go", "build", "-o", out, "./cli")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			eddyErr = errors.New(string(b))
			return
		}
		eddyExe = out
	})
	if eddyErr != nil {
		t.Fatalf("building eddy: %v", eddyErr)
	}
	return eddyExe
}

// runEddy runs the eddy CLI against the test cluster: its output and exit
// code.
func runEddy(t *testing.T, arg ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), eddyCLI(t), append([]string{"--kubeconfig=" + env.KubeconfigPath}, arg...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("eddy %s: %v", strings.Join(arg, " "), err)
	}
	return out.String(), 0
}

// hasCondition: app has a condition of type typ whose message contains
// msg.
func hasCondition(app *argov1.Application, typ, msg string) bool {
	for _, c := range app.Status.Conditions {
		if c.Type == typ && strings.Contains(c.Message, msg) {
			return true
		}
	}
	return false
}

// warningEvent: a Warning Event with reason on app whose message
// contains msg.
func warningEvent(t *testing.T, app *argov1.Application, reason, msg string) bool {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(t.Context(), &list, client.InNamespace(app.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Name == app.Name && e.InvolvedObject.Kind == argov1.ApplicationKind && e.Type == corev1.EventTypeWarning &&
			e.Reason == reason && strings.Contains(e.Message, msg) {
			return true
		}
	}
	return false
}

// manualApp is an Application of path in repo url without automation,
// CreateNamespace on.
func manualAppWithNamespace(name, url, path, namespace string) *argov1.Application {
	app := exampleApp(name, url, path, namespace, nil)
	app.Spec.SyncPolicy.Automated = nil
	app.Spec.Source.TargetRevision = "main"
	return app
}

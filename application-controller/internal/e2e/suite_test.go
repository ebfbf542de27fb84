// Package e2e holds application-controller's acceptance tests: the built
// source-controller and application-controller run as processes against a
// `full` local cluster (kwok nodes, so Deployments become Available), with
// Argo CD Applications pointing at a real Git server.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// argocd is the controller's namespace, as in an Argo CD install.
const argocd = "argocd"

var (
	env    *testenv.Environment
	gitSrv *testenv.GitServer
	ctrls  *testenv.Controllers
)

func TestMain(m *testing.M) {
	testenv.MainWithOptions(m, &env, testenv.Options{Cluster: localcluster.Options{Profile: localcluster.ProfileFull}},
		testenv.WithGitServer(&gitSrv), setupScheme, startControllers)
}

func setupScheme(e *testenv.Environment) (func(), error) {
	if err := argov1.AddToScheme(e.Scheme); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argocd}}
	return func() {}, e.Client.Create(context.Background(), ns)
}

// startControllers builds and runs notification-, source- and
// application-controller, the last posting its events to the first, as
// `eddy dev` does.
func startControllers(e *testenv.Environment) (func(), error) {
	dir, err := os.MkdirTemp("", "eddy-app-e2e-")
	if err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	storage, events, receiver := ports[0], ports[1], ports[2]
	eventsURL := fmt.Sprintf("--events-addr=http://127.0.0.1:%d", events)
	args := map[string][]string{
		"notification-controller": {fmt.Sprintf("--events-addr=127.0.0.1:%d", events), fmt.Sprintf("--receiverAddr=127.0.0.1:%d", receiver)},
		"source-controller": {"--storage-path=" + filepath.Join(dir, "storage"), "--min-retry-delay=200ms", "--max-retry-delay=5s",
			fmt.Sprintf("--storage-addr=127.0.0.1:%d", storage), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storage)},
		"application-controller": {"--namespace=" + argocd, eventsURL, "--min-retry-delay=200ms", "--max-retry-delay=5s", "--app-resync=30"},
	}
	ctrls, err = testenv.StartControllers(e, dir, []string{"notification-controller", "source-controller", "application-controller"}, args)
	if err != nil {
		return nil, err
	}
	return ctrls.Stop, nil
}

// restart starts the controller name again, its log in a new file.
func restart(t *testing.T, name string) { t.Helper(); ctrls.Restart(t, env, name) }

// logsOnFailure prints the controllers' logs when t fails.
func logsOnFailure(t *testing.T) { ctrls.LogsOnFailure(t) }

// appTimeout bounds a wait for an Application to sync and become healthy.
const appTimeout = 3 * time.Minute

// waitApp waits until app (read again each time) satisfies cond; on
// timeout it fails t with app's status and operation. (testenv.WaitFor
// checks Flux's status conventions, which an Application does not follow.)
func waitApp(t *testing.T, app *argov1.Application, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, appTimeout, true, func(ctx context.Context) (bool, error) {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(app), app) == nil && cond(), nil
	})
	if err != nil {
		b, _ := json.MarshalIndent(struct {
			Operation *argov1.Operation        `json:"operation,omitempty"`
			Status    argov1.ApplicationStatus `json:"status"`
		}{app.Operation, app.Status}, "", "  ")
		t.Fatalf("%s/%s: %s not reached in %s: %s", app.Namespace, app.Name, what, appTimeout, b)
	}
}

// syncedHealthy: Synced and Healthy.
func syncedHealthy(app *argov1.Application) func() bool {
	return func() bool {
		return app.Status.Sync.Status == argov1.SyncStatusSynced && app.Status.Health.Status == argov1.HealthHealthy
	}
}

// create creates obj and deletes it when the test ends.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
}

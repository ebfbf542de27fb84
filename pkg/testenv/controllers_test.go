package testenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func freePort(t *testing.T) int {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// lockedBuffer is a process's output, read by the test while the process
// writes it (exec copies a non-file writer's output from a goroutine).
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestControllerBinariesServeProbes builds each controller, runs it against
// the test cluster with Flux's flags and leader election, and checks that it
// becomes ready, takes the leader lease, serves metrics and exits cleanly on
// SIGTERM.
func TestControllerBinariesServeProbes(t *testing.T) {
	testenv.EachController(t, func(t *testing.T, name, exe string) {
		health, metrics := freePort(t), freePort(t)
		logs := &lockedBuffer{}
		args := []string{
			"--kubeconfig=" + env.KubeconfigPath,
			fmt.Sprintf("--health-addr=127.0.0.1:%d", health),
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metrics),
			"--enable-leader-election",
			"--log-level=debug",
		}
		if name == "source-controller" || name == "source-watcher" {
			args = append(args, "--storage-path="+t.TempDir(), fmt.Sprintf("--storage-addr=127.0.0.1:%d", freePort(t)))
		}
		if name == "image-reflector-controller" {
			args = append(args, "--storage-path="+t.TempDir())
		}
		if name == "notification-controller" {
			args = append(args, fmt.Sprintf("--events-addr=127.0.0.1:%d", freePort(t)), fmt.Sprintf("--receiverAddr=127.0.0.1:%d", freePort(t)))
		}
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "RUNTIME_NAMESPACE=default")
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		exited := func() bool {
			select {
			case err := <-done:
				t.Fatalf("exited early (%v); logs:\n%s", err, logs.String())
			default:
			}
			return false
		}

		get := func(port int, path string) int {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		deadline := time.Now().Add(30 * time.Second)
		for !exited() && get(health, "/readyz") != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("/readyz not OK after 30s; logs:\n%s", logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if code := get(health, "/healthz"); code != http.StatusOK {
			t.Errorf("/healthz answered %d", code)
		}
		if code := get(metrics, "/metrics"); code != http.StatusOK {
			t.Errorf("/metrics answered %d", code)
		}
		// Go's profiles on the metrics address, as Flux serves them.
		if code := get(metrics, "/debug/pprof/heap"); code != http.StatusOK {
			t.Errorf("/debug/pprof/heap answered %d", code)
		}
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: "default", Name: name + "-leader-election"}
		for !exited() && (env.Client.Get(context.Background(), key, lease) != nil || lease.Spec.HolderIdentity == nil) {
			if time.Now().After(deadline) {
				t.Fatalf("no leader lease %s after 30s; logs:\n%s", key, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}

		if name == "source-controller" {
			// A reconcile logs JSON with Flux's keys.
			repo := &sourcev1.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Name: "log-check", Namespace: "default"},
				Spec:       sourcev1.GitRepositorySpec{URL: "http://127.0.0.1:1/unreachable.git", Interval: metav1.Duration{Duration: time.Hour}},
			}
			if err := env.Client.Create(context.Background(), repo); err != nil {
				t.Fatal(err)
			}
			defer env.Client.Delete(context.Background(), repo)
			for !exited() && !hasReconcileLog(logs.String(), "log-check") {
				if time.Now().After(deadline.Add(15 * time.Second)) {
					t.Fatalf("no JSON reconcile log line with ts, level, msg, controllerKind, name and namespace; logs:\n%s", logs.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("exit after SIGTERM: %v; logs:\n%s", err, logs.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("still running 20s after SIGTERM; logs:\n%s", logs.String())
		}
	})
}

// hasReconcileLog finds a JSON log line about the named object with the keys
// Flux's controllers log.
func hasReconcileLog(logs, name string) bool {
	for _, line := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		_, ts := m["ts"]
		_, level := m["level"]
		_, msg := m["msg"]
		if ts && level && msg && m["controllerKind"] == "GitRepository" && m["name"] == name && m["namespace"] == "default" {
			return true
		}
	}
	return false
}

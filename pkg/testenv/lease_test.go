package testenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestControllerBinariesExitWhenTheirLeaseNamespaceIsGone: a controller
// whose leader-election namespace does not exist, or is being deleted (as
// after a Kustomization pruned flux-system), exits non-zero within seconds
// with a log line naming the lease and why, instead of retrying the lease
// forever while its probes say it is ready.
func TestControllerBinariesExitWhenTheirLeaseNamespaceIsGone(t *testing.T) {
	ctx := context.Background()
	// The api profile has no namespace controller: a deleted namespace with
	// a finalizer stays Terminating for as long as the test needs.
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease-terminating", Finalizers: []string{"eddy.dev/test"}}}
	if err := env.Client.Create(ctx, terminating); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, terminating); err != nil {
		t.Fatal(err)
	}
	testenv.EachController(t, func(t *testing.T, name, exe string) {
		for _, c := range []struct{ ns, why string }{
			{"lease-missing", `namespaces "lease-missing" not found`},
			{terminating.Name, "because it is being terminated"},
		} {
			args := []string{"--kubeconfig=" + env.KubeconfigPath, "--enable-leader-election",
				fmt.Sprintf("--health-addr=127.0.0.1:%d", freePort(t)), fmt.Sprintf("--metrics-addr=127.0.0.1:%d", freePort(t)),
				"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s"}
			switch name {
			case "source-controller":
				args = append(args, "--storage-path="+t.TempDir(), fmt.Sprintf("--storage-addr=127.0.0.1:%d", freePort(t)))
			case "notification-controller":
				args = append(args, fmt.Sprintf("--events-addr=127.0.0.1:%d", freePort(t)), fmt.Sprintf("--receiverAddr=127.0.0.1:%d", freePort(t)))
			}
			logs := &lockedBuffer{}
			cmd := exec.Command(exe, args...)
			cmd.Env = append(os.Environ(), "RUNTIME_NAMESPACE="+c.ns)
			cmd.Stdout, cmd.Stderr = logs, logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() == 0 {
					t.Errorf("namespace %s: exit %v, want non-zero", c.ns, err)
				}
			case <-time.After(45 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("namespace %s: still running 45s after start, retrying its lease; logs:\n%s", c.ns, logs.String())
			}
			// The last line, as `eddy dev status` shows it: why it stopped.
			// controller-runtime may log the elector's own "leader election
			// lost" from a goroutine after the manager returned: a race of
			// its shutdown, not a reason, so it is passed over.
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			var last struct{ Msg, Error string }
			for i := len(lines) - 1; i >= 0; i-- {
				_ = json.Unmarshal([]byte(lines[i]), &last)
				if last.Msg != "error received after stop sequence was engaged" {
					break
				}
			}
			lease := c.ns + "/" + name + "-leader-election"
			if !strings.Contains(last.Error, "cannot create the lease "+lease) || !strings.Contains(last.Error, c.why) {
				t.Errorf("namespace %s: the last log line does not name the lease %s and %q:\n%s", c.ns, lease, c.why, logs.String())
			}
		}
	})
}

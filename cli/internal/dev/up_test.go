package dev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The printed export line is one shell word whatever the path holds.
func TestPrintExportQuotesTheKubeconfigPath(t *testing.T) {
	for path, want := range map[string]string{
		"/home/a/.local/state/eddy/dev/cluster/kubeconfig": "export KUBECONFIG=/home/a/.local/state/eddy/dev/cluster/kubeconfig",
		"/home/a b/kubeconfig":                             "export KUBECONFIG='/home/a b/kubeconfig'",
		"/home/o'neil/kubeconfig":                          `export KUBECONFIG='/home/o'\''neil/kubeconfig'`,
		"/tmp/$x/kubeconfig":                               "export KUBECONFIG='/tmp/$x/kubeconfig'",
	} {
		var out bytes.Buffer
		printExport(&out, path, nil, false)
		if got := strings.TrimSpace(out.String()); got != want {
			t.Errorf("kubeconfig %q: printed %q, want %q", path, got, want)
		}
		// The shell reads it back as the path.
		echo, err := exec.Command("sh", "-c", strings.Replace(want, "export KUBECONFIG=", "printf %s ", 1)).Output()
		if err != nil || string(echo) != path {
			t.Errorf("sh reads %q back as %q (%v)", want, echo, err)
		}
	}
}

// TestStopSignalsHonourNohup: `nohup eddy dev up &` must survive the
// terminal closing, so SIGHUP stops a foreground environment only when the
// process was not started with SIGHUP ignored (asking to be notified of a
// signal undoes nohup in Go). The child is this test binary under nohup.
func TestStopSignalsHonourNohup(t *testing.T) {
	if os.Getenv("EDDY_TEST_STOP_SIGNALS") == "1" {
		fmt.Println("stop signals:", StopSignals())
		return
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		hangup bool
	}{
		// Run under nohup itself, the test's plain child inherits it.
		{"plain", []string{os.Args[0]}, !signal.Ignored(syscall.SIGHUP)},
		{"nohup", []string{"nohup", os.Args[0]}, false},
	} {
		cmd := exec.Command(tc.argv[0], append(tc.argv[1:], "-test.run=^TestStopSignalsHonourNohup$")...)
		cmd.Env = append(os.Environ(), "EDDY_TEST_STOP_SIGNALS=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, out)
		}
		if got := strings.Contains(string(out), "hangup"); got != tc.hangup {
			t.Errorf("%s: SIGHUP among the stop signals = %v, want %v:\n%s", tc.name, got, tc.hangup, out)
		}
	}
}

// TestExampleNamedWithRepoSyncsClustersDev: --repo naming Eddy's example
// (by any path) gets the example's default --path ./clusters/dev, as
// without --repo; another directory gets ./. With ./ the example's
// flux-system Kustomization applied the whole repository, fighting the
// Kustomizations it also created over the same objects.
func TestExampleNamedWithRepoSyncsClustersDev(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ repo, want string }{
		{"", "./clusters/dev"},
		{"../../../examples/platform-config", "./clusters/dev"},
		{filepath.Join(root, "examples", "platform-config"), "./clusters/dev"},
		{other, "./"},
	} {
		src, _, err := resolveSource(root, t.TempDir(), &Flags{Repo: c.repo})
		if err != nil {
			t.Fatalf("--repo %q: %v", c.repo, err)
		}
		if src.Path != c.want {
			t.Errorf("--repo %q: path %q, want %q", c.repo, src.Path, c.want)
		}
	}
}

// A taken --ui-listen port fails Start before anything starts (no state
// file, no cluster), with a message naming the flag and how to pick
// another port; the UI never moves to another port silently.
func TestStartFailsOnATakenUIPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	_, err = Start(context.Background(), Options{StateDir: dir, UI: true, UIListen: ln.Addr().String()})
	if err == nil {
		t.Fatal("Start succeeded on a taken --ui-listen port")
	}
	for _, want := range []string{"--ui-listen " + ln.Addr().String(), "taken", "127.0.0.1:0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused start left a state file (%v)", err)
	}
}

package process

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// waitTrue polls cond until it holds; the test fails after 20s.
func waitTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: not within 20s", what)
	}
}

func sleeper(dir string) Spec {
	return Spec{Name: "sleeper", Bin: "/bin/sh", Args: []string{"-c", "sleep 300"}, LogPath: filepath.Join(dir, "log")}
}

// A process that exits is restarted with back-off and counted; a held one
// waits for Release; Stop ends it and restarts nothing.
func TestSupervisorRestartsHoldsAndStops(t *testing.T) {
	s := &Supervisor{}
	var changes atomic.Int32 // OnChange runs on the supervisor's goroutines
	s.OnChange = func() { changes.Add(1) }
	if err := s.Start(sleeper(t.TempDir())); err != nil {
		t.Fatal(err)
	}
	first := s.Status()[0]
	if !alive(first.PID) {
		t.Fatal("process not running")
	}
	if err := s.Kill("sleeper"); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, "restart after kill", func() bool { st := s.Status()[0]; return st.Restarts == 1 && alive(st.PID) })
	st := s.Status()[0]
	if st.PID == first.PID || !strings.Contains(st.LastExit, "killed") {
		t.Errorf("after a kill: pid %d (was %d), last exit %q", st.PID, first.PID, st.LastExit)
	}

	s.Hold("sleeper")
	if err := s.Kill("sleeper"); err != nil {
		t.Fatal(err)
	}
	// Held: the supervisor saw the exit and waits for Release instead of
	// its back-off, so nothing restarts it until then.
	waitTrue(t, "held after kill", func() bool { return s.Status()[0].Held })
	if st := s.Status()[0]; st.Restarts != 1 || alive(st.PID) {
		t.Fatalf("held process restarted: %+v", st)
	}
	s.Release("sleeper")
	waitTrue(t, "restart after release", func() bool { st := s.Status()[0]; return st.Restarts == 2 && alive(st.PID) })

	last := s.Status()[0].PID
	s.Stop(5 * time.Second)
	// Stop returns once every keeper goroutine has ended: nothing is left
	// that could restart the process.
	if st := s.Status()[0]; st.Restarts != 2 || alive(last) || alive(st.PID) {
		t.Errorf("after Stop: %+v (pid %d alive %v)", st, last, alive(last))
	}
	if changes.Load() == 0 {
		t.Error("OnChange never called")
	}
}

// Stop during a crash loop returns at once: the back-off before the next
// restart (here an hour) is cut short, not waited out.
func TestStopInterruptsTheRestartBackoff(t *testing.T) {
	s := &Supervisor{BackoffMin: time.Hour}
	if err := s.Start(Spec{Name: "crasher", Bin: "/bin/sh", Args: []string{"-c", "exit 3"}, LogPath: filepath.Join(t.TempDir(), "log")}); err != nil {
		t.Fatal(err)
	}
	// It exited, and the supervisor recorded it: it is now in its back-off.
	waitTrue(t, "the crash recorded", func() bool { return s.Status()[0].LastExit == "exit status 3" })
	stopped := make(chan struct{})
	go func() {
		s.Stop(5 * time.Second)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stop did not return within 1m: it waits out the restart back-off")
	}
	if st := s.Status()[0]; st.Restarts != 0 {
		t.Errorf("restarted during Stop: %+v", st)
	}
}

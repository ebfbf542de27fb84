package dev

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/gitserver"
)

func waitTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A process that exits is restarted with back-off and counted; a held one
// waits for Release; Stop ends it and restarts nothing.
func TestSupervisorRestartsHoldsAndStops(t *testing.T) {
	dir := t.TempDir()
	s := &Supervisor{}
	changes := 0
	s.OnChange = func() { changes++ }
	if err := s.Start(ProcSpec{Name: "sleeper", Bin: "/bin/sh", Args: []string{"-c", "sleep 300"}, LogPath: filepath.Join(dir, "log")}); err != nil {
		t.Fatal(err)
	}
	first := s.Status()[0]
	if !Alive(first.PID) {
		t.Fatal("process not running")
	}
	if err := s.Kill("sleeper"); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, "restart after kill", func() bool { st := s.Status()[0]; return st.Restarts == 1 && Alive(st.PID) })
	st := s.Status()[0]
	if st.PID == first.PID || !strings.Contains(st.LastExit, "killed") {
		t.Errorf("after a kill: pid %d (was %d), last exit %q", st.PID, first.PID, st.LastExit)
	}
	t.Logf("restarted after the first back-off; last exit %q", st.LastExit)

	s.Hold("sleeper")
	if err := s.Kill("sleeper"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the back-off: a held process stays down
	if st := s.Status()[0]; st.Restarts != 1 || Alive(st.PID) {
		t.Fatalf("held process restarted: %+v", st)
	}
	s.Release("sleeper")
	waitTrue(t, "restart after release", func() bool { st := s.Status()[0]; return st.Restarts == 2 && Alive(st.PID) })

	last := s.Status()[0].PID
	s.Stop(5 * time.Second)
	if Alive(last) {
		t.Errorf("pid %d survives Stop", last)
	}
	time.Sleep(1500 * time.Millisecond)
	if st := s.Status()[0]; st.Restarts != 2 || Alive(st.PID) {
		t.Errorf("restarted after Stop: %+v", st)
	}
	if changes == 0 {
		t.Error("OnChange never called")
	}
}

func TestAliveSeesZombiesAsDead(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	if Alive(0) || Alive(-1) {
		t.Error("pid 0 or -1 alive")
	}
	var ws syscall.WaitStatus
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	waitTrue(t, "zombie", func() bool { return !Alive(pid) })
	_, _ = syscall.Wait4(pid, &ws, 0, nil)
}

func TestNormalizePath(t *testing.T) {
	for in, want := range map[string]string{"": "./", ".": "./", "./": "./", "clusters/dev": "./clusters/dev",
		"./clusters/dev/": "./clusters/dev", "/kustomize": "./kustomize", "../x": "./x"} {
		if got := NormalizePath(in); got != want {
			t.Errorf("NormalizePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// A Git work tree is served as it is (new commits seen); a plain directory
// is snapshotted; bad input is one line naming the flag.
func TestPrepareSource(t *testing.T) {
	state := t.TempDir()
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "clusters", "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "clusters", "dev", "a.yaml"), []byte("kind: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "--initial-branch=trunk"}, {"add", "-A"}, {"commit", "-q", "-m", "one"}} {
		if _, err := gitserver.Git(work, args...); err != nil {
			t.Fatal(err)
		}
	}
	src, err := PrepareSource(state, work, "clusters/dev", "")
	if err != nil {
		t.Fatal(err)
	}
	if src.WorkTree != work || src.Snapshot || src.Branch != "trunk" || src.Path != "./clusters/dev" {
		t.Errorf("work tree source: %+v", src)
	}
	if target, err := os.Readlink(filepath.Join(state, "git", src.Name)); err != nil || target != work {
		t.Errorf("served as %q (%v), want a symlink to %s", target, err, work)
	}
	srv, err := gitserver.Start(gitserver.Options{Root: filepath.Join(state, "git")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	src.SetServer(srv.URL)
	if _, err := gitserver.Git(work, "commit", "-q", "--allow-empty", "-m", "two"); err != nil {
		t.Fatal(err)
	}
	head, _ := gitserver.Git(work, "rev-parse", "HEAD")
	out, err := gitserver.Git(t.TempDir(), "ls-remote", src.URL, "refs/heads/trunk")
	if err != nil || !strings.HasPrefix(out, head) {
		t.Errorf("ls-remote %s: %q (%v), want the new commit %s", src.URL, out, err, head)
	}

	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plain, "x.yaml"), []byte("kind: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := PrepareSource(state, plain, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Snapshot || snap.Branch != "main" || snap.Path != "./" {
		t.Errorf("snapshot source: %+v", snap)
	}
	if files, _ := gitserver.Git(snap.WorkTree, "ls-files"); files != "x.yaml" {
		t.Errorf("snapshot holds %q, want x.yaml", files)
	}
	again, err := PrepareSource(state, plain, "", "")
	if err != nil || again.WorkTree != snap.WorkTree {
		t.Fatalf("second snapshot: %+v, %v", again, err)
	}
	if n, _ := gitserver.Git(snap.WorkTree, "rev-list", "--count", "HEAD"); n != "1" {
		t.Errorf("an unchanged directory made %s commits, want 1", n)
	}

	for _, c := range []struct{ repo, path, branch, want string }{
		{filepath.Join(t.TempDir(), "missing"), "", "", "--repo"},
		{work, "./nope", "", "--path ./nope: no such directory"},
		{work, "", "nobranch", "--branch nobranch: no such branch"},
	} {
		_, err := PrepareSource(state, c.repo, c.path, c.branch)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("PrepareSource(%s, %q, %q): %v; want one line with %q", filepath.Base(c.repo), c.path, c.branch, err, c.want)
		}
	}
}

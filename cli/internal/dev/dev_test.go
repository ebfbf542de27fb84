package dev

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/process"
	"k8s.io/apimachinery/pkg/util/wait"
)

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
	// The child exits at once; unreaped, it is a zombie, which Alive sees as dead.
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return !Alive(pid), nil }); err != nil {
		t.Fatal("a zombie is alive")
	}
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

// gitT runs git in dir with a fixed identity.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitserver.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// commitAll makes dir a Git repository on branch main with its files in
// one commit.
func commitAll(t *testing.T, dir string) {
	t.Helper()
	gitT(t, dir, "init", "-q", "--initial-branch=main")
	gitT(t, dir, "add", ".")
	gitT(t, dir, "commit", "-qm", "init")
}

// cmRepo returns a new Git repository with one commit of a ConfigMap.
func cmRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	writeT(t, filepath.Join(dir, "cm.yaml"), configMapYAML)
	commitAll(t, dir)
	return dir
}

func writeT(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const configMapYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"

// A bare repository is served as the repository it is (its branches, not
// its internals as files), and a push to it is seen by the next fetch.
func TestPrepareSourceServesBareRepository(t *testing.T) {
	state := t.TempDir()
	work := cmRepo(t)
	bare := filepath.Join(t.TempDir(), "r.git")
	gitT(t, filepath.Dir(bare), "clone", "-q", "--bare", work, bare)

	src, err := PrepareSource(state, bare, "./", "")
	if err != nil {
		t.Fatal(err)
	}
	if src.Snapshot || !src.Bare || src.WorkTree != bare || src.Branch != "main" {
		t.Fatalf("bare repository source: %+v; want served as it is, branch main", src)
	}
	srv, err := gitserver.Start(gitserver.Options{Root: filepath.Join(state, "git")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	src.SetServer(srv.URL)
	clone := filepath.Join(t.TempDir(), "clone")
	gitT(t, filepath.Dir(clone), "clone", "-q", src.URL, clone)
	if files := gitT(t, clone, "ls-files"); files != "cm.yaml" {
		t.Errorf("served bare repository holds %q, want cm.yaml", files)
	}

	gitT(t, work, "commit", "-q", "--allow-empty", "-m", "two")
	gitT(t, work, "push", "-q", bare, "main")
	head := gitT(t, work, "rev-parse", "HEAD")
	if out := gitT(t, t.TempDir(), "ls-remote", src.URL, "refs/heads/main"); !strings.HasPrefix(out, head) {
		t.Errorf("after a push: ls-remote %q, want %s", out, head)
	}

	// The .git directory of a work tree: one line naming the work tree.
	_, err = PrepareSource(state, filepath.Join(work, ".git"), "./", "")
	if err == nil || !strings.Contains(err.Error(), "pass the work tree "+work) || strings.Contains(err.Error(), "\n") {
		t.Errorf("--repo <work tree>/.git: %v; want one line saying to pass %s", err, work)
	}
}

// A directory first synced as a plain directory (a snapshot) and then made
// a Git repository is served as that repository on the next call: the
// snapshot in the state directory is replaced by the symlink.
func TestPrepareSourcePlainDirectoryLaterGitRepository(t *testing.T) {
	state := t.TempDir()
	repo := filepath.Join(t.TempDir(), "cfg")
	writeT(t, filepath.Join(repo, "cm.yaml"), configMapYAML)
	first, err := PrepareSource(state, repo, "./", "")
	if err != nil || !first.Snapshot {
		t.Fatalf("plain directory: %+v, %v; want a snapshot", first, err)
	}
	commitAll(t, repo)
	src, err := PrepareSource(state, repo, "./", "")
	if err != nil {
		t.Fatalf("after git init: %v", err)
	}
	if src.Snapshot || src.WorkTree != repo {
		t.Errorf("after git init: %+v; want the repository served as it is", src)
	}
	if target, err := os.Readlink(filepath.Join(state, "git", src.Name)); err != nil || target != repo {
		t.Errorf("served entry: %q (%v), want a symlink to %s", target, err, repo)
	}
}

// RemoveServed empties eddy's git/ directory (symlinks and snapshots) and
// leaves the repositories the symlinks point to alone.
func TestRemoveServedKeepsTheUsersRepositories(t *testing.T) {
	state := t.TempDir()
	repo := cmRepo(t)
	plain := filepath.Join(t.TempDir(), "plain")
	writeT(t, filepath.Join(plain, "cm.yaml"), configMapYAML)
	for _, d := range []string{repo, plain} {
		if _, err := PrepareSource(state, d, "./", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveServed(state); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(state, "git")); len(left) != 0 {
		t.Errorf("git/ still holds %d entries", len(left))
	}
	if files := gitT(t, repo, "ls-files"); files != "cm.yaml" {
		t.Errorf("the user's repository lost its files: %q", files)
	}
	if _, err := os.Stat(filepath.Join(plain, "cm.yaml")); err != nil {
		t.Errorf("the plain directory lost its file: %v", err)
	}
}

// The work tree recorded by SetSync (`eddy dev up --repo B` on a
// running environment) is the one ReadState returns, even after the owner
// rewrote state.json with the work tree it started with.
func TestSetSyncOutlivesTheOwnersStateWrites(t *testing.T) {
	dir := t.TempDir()
	if err := writeState(dir, &State{PID: 1, Phase: PhaseRunning, WorkTree: "/src/a"}); err != nil {
		t.Fatal(err)
	}
	if err := SetSync(dir, &Source{WorkTree: "/src/b", URL: "http://127.0.0.1:1/b", Branch: "main", Path: "./"}); err != nil {
		t.Fatal(err)
	}
	if err := writeState(dir, &State{PID: 1, Phase: PhaseRunning, WorkTree: "/src/a"}); err != nil { // a controller restarted
		t.Fatal(err)
	}
	if s, err := ReadState(dir); err != nil || s.WorkTree != "/src/b" {
		t.Fatalf("ReadState: %+v, %v; want work tree /src/b", s, err)
	}
	if src := readSync(dir); src == nil || src.URL != "http://127.0.0.1:1/b" || src.Branch != "main" {
		t.Errorf("readSync: %+v; want the source recorded", src)
	}
	if err := SetSync(dir, &Source{URL: "https://example.com/c.git"}); err != nil { // re-pointed at a URL
		t.Fatal(err)
	}
	if s, _ := ReadState(dir); s.WorkTree != "" {
		t.Errorf("after re-pointing at a URL: work tree %q, want none", s.WorkTree)
	}
}

// A controller that exits again after its restart fails the start with its
// name and the last line of its log (message and error of a JSON line).
func TestWaitControllersReadyNamesACrashLoopingController(t *testing.T) {
	dir := t.TempDir()
	e := &Env{Opts: Options{StateDir: dir}, Sup: &process.Supervisor{}}
	defer e.Sup.Stop(time.Second)
	script := `echo '{"level":"info","msg":"starting"}'; echo '{"level":"error","msg":"unable to start manager","error":"listen tcp: address in use"}'; exit 1`
	if err := e.Sup.Start(process.Spec{Name: "source-controller", Bin: "/bin/sh", Args: []string{"-c", script},
		LogPath: filepath.Join(dir, "source-controller.log"), HealthURL: "http://127.0.0.1:1/readyz"}); err != nil {
		t.Fatal(err)
	}
	err := e.waitControllersReady(t.Context(), time.Minute)
	if err == nil {
		t.Fatal("a crash-looping controller was reported ready")
	}
	for _, want := range []string{"source-controller keeps exiting", "unable to start manager: listen tcp: address in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
}

// LockHolders finds the process that holds the state directory's lock.
func TestLockHoldersFindsTheOwner(t *testing.T) {
	dir := t.TempDir()
	if pids, ok := LockHolders(dir); !ok || len(pids) != 0 {
		t.Fatalf("no lock taken: holders %v (procfs %v)", pids, ok)
	}
	lock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrRunning) {
		t.Errorf("a second Lock: %v; want ErrRunning", err)
	}
	if pids, _ := LockHolders(dir); len(pids) != 1 || pids[0] != os.Getpid() {
		t.Errorf("holders %v, want this process %d", pids, os.Getpid())
	}
	lock.Close()
	if pids, _ := LockHolders(dir); len(pids) != 0 {
		t.Errorf("after release: holders %v", pids)
	}
}

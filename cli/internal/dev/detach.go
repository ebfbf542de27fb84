package dev

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eddyops/eddy/cli/internal/ui"
	"k8s.io/apimachinery/pkg/util/wait"
)

// upDetached starts `eddy dev supervise` as a daemon (own session, output to
// logs/supervise.log), waits until it reports the environment running, then
// shows the sync like the foreground does.
func upDetached(ctx context.Context, out io.Writer, timeout time.Duration, u *ui.UI, dir string, lock *os.File, f *Flags, cflags ControllerFlags,
	src *Source, hookTree string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		return err
	}
	// This process holds the lock, and passes it to the supervisor: no other
	// process owns these files.
	logPath := filepath.Join(dir, "logs", "supervise.log")
	errPath := filepath.Join(dir, "logs", "supervise.err")
	_ = os.Remove(errPath)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	repo := f.Repo
	if repo != "" && !IsURL(repo) {
		repo, _ = filepath.Abs(repo)
	}
	args := []string{"dev", "supervise", "--repo=" + repo, "--path=" + f.Path, "--branch=" + f.Branch,
		"--target-namespace=" + f.TargetNamespace, "--nodes=" + strconv.Itoa(f.Nodes), "--alerts-sink=" + strconv.FormatBool(f.AlertsSink),
		"--shards=" + strconv.Itoa(f.Shards), "--ui=" + strconv.FormatBool(f.UI), "--ui-listen=" + f.UIListen, "--lock-fd=3",
		"--node=" + f.Node, "--registry-addr=" + f.RegistryAddr}
	for _, a := range cflags.Args() {
		args = append(args, "--controller-flags="+a)
	}
	child := exec.Command(exe, args...)
	child.Stdout, child.Stderr = logFile, logFile
	child.ExtraFiles = []*os.File{lock} // fd 3: the supervisor holds the lock from here on
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	begin := time.Now()
	if err := child.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	stop := u.Spin("starting the local cluster and the controllers (log: " + logPath + ")")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if s, _ := ReadState(dir); s != nil && s.PID == child.Process.Pid && s.Phase == PhaseRunning {
			return true, nil
		}
		select {
		case <-exited:
			if data, err := os.ReadFile(errPath); err == nil {
				return false, fmt.Errorf("%s (log: %s)", strings.TrimSpace(string(data)), logPath)
			}
			return false, fmt.Errorf("eddy dev supervise exited: %s", lastLine(logPath))
		default:
			return false, nil
		}
	})
	stop()
	if err != nil && ctx.Err() == nil && wait.Interrupted(err) {
		_ = child.Process.Signal(syscall.SIGTERM)
		return fmt.Errorf("the environment did not start within %s: see %s", timeout, logPath)
	}
	if err != nil {
		return err
	}
	s, _ := ReadState(dir)
	u.Success("environment running (supervisor pid %d, started in %s)", s.PID, time.Since(begin).Round(100*time.Millisecond))
	c, err := ClientFor(s.Kubeconfig)
	if err != nil {
		return err
	}
	src.SetServer(s.GitServer)
	if hookTree != "" {
		if err := installHook(u, hookTree, dir); err != nil {
			return err
		}
	}
	werr := waitSynced(ctx, c, u, timeout)
	u.Success("up in %s", time.Since(begin).Round(100*time.Millisecond))
	printExport(out, s.Kubeconfig, src, hookTree != "")
	printPushes(out, s, src)
	printUI(out, s)
	printRegistry(out, s)
	printNotification(ctx, out, c, s, dir, "in "+logPath)
	fmt.Fprintln(out, "Run `eddy dev down` to stop it.")
	if werr != nil {
		return fmt.Errorf("%w (the environment keeps running)", werr)
	}
	return nil
}

func lastLine(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return strings.TrimPrefix(l, "✗ ")
		}
	}
	return "no output"
}

// Supervise is the hidden `eddy dev supervise`: it owns a detached
// environment until SIGTERM or SIGINT. A failure's first line also goes to
// logs/supervise.err, for `up` to show.
func Supervise(ctx context.Context, out io.Writer, f *Flags) (err error) {
	defer func() {
		if err != nil {
			if dir, derr := DefaultStateDir(); derr == nil {
				first, _, _ := strings.Cut(err.Error(), "\n")
				_ = os.WriteFile(filepath.Join(dir, "logs", "supervise.err"), []byte(first+"\n"), 0o600)
			}
		}
	}()
	u := ui.New(out)
	dir, err := DefaultStateDir()
	if err != nil {
		return err
	}
	opts := Options{}
	if f.LockFD > 0 {
		// The lock `eddy dev up --detach` took for this process; not passed on to the controllers.
		if err := syscall.Flock(f.LockFD, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			return fmt.Errorf("--lock-fd %d is not the lock of %s: %v", f.LockFD, dir, err)
		}
		syscall.CloseOnExec(f.LockFD)
		opts.Lock = os.NewFile(uintptr(f.LockFD), filepath.Join(dir, "lock"))
		defer opts.Lock.Close()
	}
	root, err := FindRoot()
	if err != nil {
		return err
	}
	src, _, err := resolveSource(root, dir, f)
	if err != nil {
		return err
	}
	cflags, err := resolveControllerFlags(dir, f.ControllerFlags)
	if err != nil {
		return err
	}
	ctx, stopSignals := signal.NotifyContext(ctx, StopSignals()...)
	defer stopSignals()
	images, err := checkNode(root, f)
	if err != nil {
		return err
	}
	o := optionsFor(root, dir, f, u)
	if err := withOptional(&o, root, src, u, images); err != nil {
		return err
	}
	o.Lock, o.ControllerFlags, o.NodeImages = opts.Lock, cflags, images
	_, stop, err := startSync(ctx, u, o, src, "stopping", "stopped")
	if err != nil {
		return err
	}
	defer stop()
	u.Success("running")
	<-ctx.Done()
	return nil
}

// StopSignals lists the signals that stop a foreground environment:
// Ctrl-C, SIGTERM and SIGHUP (the terminal closed: a window, an ssh
// session), except a SIGHUP that the process was started to ignore
// (`nohup eddy dev up &`), since asking to be notified would undo nohup.
func StopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// devFlags are the flags of `eddy dev up` (and of the hidden `supervise`).
type devFlags struct {
	repo, path, branch string
	targetNamespace    string
	nodes              int
	detach             bool
	alertsSink         bool
	installHook        bool
	lockFD             int // supervise: the inherited lock's file descriptor
}

func (f *devFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.repo, "repo", "", "the GitOps repository: a local directory or a Git URL (default: Eddy's example examples/platform-config)")
	cmd.Flags().StringVar(&f.path, "path", "", "the directory in the repository that the flux-system Kustomization applies (default ./clusters/dev for the example, else ./)")
	cmd.Flags().StringVar(&f.branch, "branch", "", "the branch to follow (default: the local repository's current branch, else main)")
	cmd.Flags().StringVar(&f.targetNamespace, "target-namespace", "", "the namespace of objects that set none (the flux-system Kustomization's spec.targetNamespace)")
	cmd.Flags().IntVar(&f.nodes, "nodes", 1, "the number of fake (kwok) nodes")
	cmd.Flags().BoolVar(&f.alertsSink, "alerts-sink", false, "start a local sink for alerts and point the Secret "+dev.AlertsSinkSecret+
		" (key address) at it: each alert a generic Provider sends there is printed as one line")
}

// findRoot returns the Eddy checkout that holds bin/ and config/: $EDDY_ROOT,
// else the parent of the directory of this executable (bin/eddy), else the
// nearest directory above the working directory with go.work.
func findRoot() (string, error) {
	ok := func(d string) bool { return fileExists(filepath.Join(d, "config", "crd", "bases")) }
	if d := os.Getenv("EDDY_ROOT"); d != "" {
		if !ok(d) {
			return "", fmt.Errorf("EDDY_ROOT=%s has no config/crd/bases", d)
		}
		return filepath.Abs(d)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			if d := filepath.Dir(filepath.Dir(exe)); ok(d) {
				return d, nil
			}
		}
	}
	if d, err := localcluster.WorkspaceRoot(); err == nil && ok(d) {
		return d, nil
	}
	return "", errors.New("cannot find the Eddy checkout (bin/ and config/): run bin/eddy of a checkout, or set EDDY_ROOT")
}

func k8sBinDir(root string) string {
	if d := os.Getenv("EDDY_K8S_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(root, "bin", "k8s")
}

// ensureBinaries builds what is missing: bin/k8s (once, about 15 minutes)
// and the controller binaries, with the build's output shown.
func ensureBinaries(root string, u *ui, out io.Writer) error {
	k8s := k8sBinDir(root)
	complete := true
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if !fileExists(filepath.Join(k8s, b)) {
			complete = false
		}
	}
	if !complete {
		u.Action("building the local cluster's binaries into %s: this happens once and takes about 15 minutes on 2 cores", k8s)
		cmd := exec.Command("bash", filepath.Join(root, "tools", "build.sh"))
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building the local cluster's binaries (tools/build.sh): %w", err)
		}
	}
	var missing []string
	for _, c := range dev.Controllers {
		if !fileExists(filepath.Join(root, "bin", c)) {
			missing = append(missing, "./"+c)
		}
	}
	if len(missing) > 0 {
		u.Action("building %s into bin/", strings.Join(missing, ", "))
		cmd := exec.Command("go", append([]string{"build", "-o", "bin/"}, missing...)...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building the controllers: %w", err)
		}
	}
	return nil
}

func stateDir() (string, error) { return dev.DefaultStateDir() }

// resolveSource applies the defaults of --repo and --path and checks them.
func resolveSource(root, dir string, f *devFlags) (*dev.Source, error) {
	repo, p := f.repo, f.path
	if repo == "" {
		repo = filepath.Join(root, "examples", "platform-config")
		if p == "" {
			p = "./clusters/dev"
		}
	}
	if p == "" {
		p = "./"
	}
	src, err := dev.PrepareSource(dir, repo, p, f.branch)
	if err != nil {
		return nil, err
	}
	src.TargetNamespace = f.targetNamespace
	return src, nil
}

func newDevCommand(g *globalFlags) *cobra.Command {
	d := &cobra.Command{
		Use:   "dev",
		Short: "Run Eddy on a local cluster on this machine (no Docker, no cloud)",
		Long: "Run Eddy on a local Kubernetes control plane built from upstream source (bin/k8s), with\n" +
			"each controller as its own process, syncing a Git repository from a directory or URL.\n" +
			"State lives in $XDG_STATE_HOME/eddy/dev (default ~/.local/state/eddy/dev).",
	}
	var up devFlags
	upCmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local cluster and controllers and sync a repository (foreground; --detach to return)",
		Example: "  eddy dev up\n  eddy dev up --repo ~/src/fleet --path ./clusters/staging --detach\n" +
			"  eddy dev up --repo https://github.com/stefanprodan/podinfo --path ./kustomize --branch master",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUp(cmd, g, &up) },
	}
	up.bind(upCmd)
	upCmd.Flags().BoolVar(&up.detach, "detach", false, "return once the repository is synced; eddy dev down stops the environment")
	upCmd.Flags().BoolVar(&up.installHook, "install-hook", false, "install a Git post-commit hook into --repo (a local Git work tree) that sends each commit "+
		"to the GitHub Receiver "+dev.Namespace+"/"+dev.HookReceiver+" (eddy dev creates it), so it is applied at once; an existing hook is left alone")
	d.AddCommand(upCmd)

	var sup devFlags
	supCmd := &cobra.Command{
		Use:    "supervise",
		Short:  "Own a detached environment (started by `eddy dev up --detach`)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return runSupervise(cmd, &sup) },
	}
	sup.bind(supCmd)
	supCmd.Flags().IntVar(&sup.lockFD, "lock-fd", 0, "the file descriptor of the state directory's lock, taken by eddy dev up --detach")
	d.AddCommand(supCmd)

	d.AddCommand(&cobra.Command{
		Use:   "down",
		Short: "Stop the environment: controllers, Git server and cluster, and remove its state",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runDown(cmd) },
	})
	d.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "List the environment's processes, their health and restarts",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runStatus(cmd) },
	})
	d.AddCommand(newDemoCommand())
	d.AddCommand(newHookCommand())
	return d
}

// newHookCommand is `eddy dev hook post-commit`, what the hook installed by
// `eddy dev up --install-hook` runs. It prints one line and exits 0 whatever
// happens, so a commit never fails because of it.
func newHookCommand() *cobra.Command {
	h := &cobra.Command{
		Use:    "hook",
		Short:  "Git hooks of eddy dev (installed by `eddy dev up --install-hook`)",
		Hidden: true,
	}
	var dir string
	pc := &cobra.Command{
		Use:   "post-commit",
		Short: "Send the commit at HEAD of the current work tree to the environment's GitHub Receiver",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				d, err := stateDir()
				if err != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "eddy dev: %v: commit not sent\n", err)
					return nil
				}
				dir = d
			}
			wd, err := os.Getwd()
			if err != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "eddy dev: %v: commit not sent\n", err)
				return nil
			}
			dev.PostCommit(cmd.Context(), dir, wd, cmd.OutOrStdout())
			return nil
		},
	}
	pc.Flags().StringVar(&dir, "state-dir", "", "the environment's state directory (default: eddy dev's)")
	h.AddCommand(pc)
	return h
}

// hookTarget returns the Git work tree that --install-hook installs into:
// the repository of src, or the running environment's when src is nil. A
// remote repository or a snapshot of a plain directory has none (error).
func hookTarget(dir string, src *dev.Source, running *dev.State) (string, error) {
	workTree, snapshot, bare := "", false, false
	switch {
	case src != nil:
		workTree, snapshot, bare = src.WorkTree, src.Snapshot, src.Bare
	case running != nil:
		workTree = running.WorkTree
		snapshot = workTree != "" && strings.HasPrefix(workTree, filepath.Join(dir, "git")+string(filepath.Separator))
		bare = workTree != "" && dev.IsBare(workTree)
	}
	if workTree == "" {
		return "", errors.New("--install-hook needs --repo to be a local Git work tree, not a URL")
	}
	if bare {
		return "", errors.New("--install-hook needs --repo to be a Git work tree: a bare repository gets pushes, not commits (pushes to it are picked up within 1m)")
	}
	if snapshot {
		return "", errors.New("--install-hook needs --repo to be the top of a Git work tree; a plain directory (such as the default example) is synced as a snapshot")
	}
	if _, err := dev.CheckHook(workTree); err != nil {
		return "", fmt.Errorf("--install-hook: %w", err)
	}
	return workTree, nil
}

// installHook installs the post-commit hook into workTree and says so.
func installHook(u *ui, workTree, dir string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	path, err := dev.InstallHook(workTree, exe, dir)
	if err != nil {
		return fmt.Errorf("--install-hook: %w", err)
	}
	u.Success("installed the post-commit hook %s: each commit is sent to Receiver %s/%s (created by eddy dev for GitRepository %s/%s)",
		path, dev.Namespace, dev.HookReceiver, dev.Namespace, dev.SyncName)
	return nil
}

func runUp(cmd *cobra.Command, g *globalFlags, f *devFlags) error {
	u := newUI(cmd.OutOrStdout())
	dir, err := stateDir()
	if err != nil {
		return err
	}
	root, err := findRoot()
	if err != nil {
		return err
	}
	if s := dev.Running(dir); s != nil {
		return upRunning(cmd, g, u, root, dir, s, f)
	}
	// The lock first: a second `up` at the same time stops here, before it
	// touches the state directory (snapshots, logs) of the first.
	lock, err := dev.Lock(dir)
	if err != nil {
		return err
	}
	defer lock.Close() // the environment's owner holds it (this process, or the supervisor's inherited copy)
	src, err := resolveSource(root, dir, f)
	if err != nil {
		return err
	}
	hookTree := ""
	if f.installHook {
		if hookTree, err = hookTarget(dir, src, nil); err != nil {
			return err
		}
	}
	if err := ensureBinaries(root, u, cmd.ErrOrStderr()); err != nil {
		return err
	}
	if f.detach {
		return upDetached(cmd, g, u, dir, lock, f, src, hookTree)
	}

	ctx, stopSignals := signal.NotifyContext(cmd.Context(), stopSignalsOf()...)
	defer stopSignals()
	begin := time.Now()
	opts := devOptions(root, dir, f, u)
	opts.Lock = lock
	env, err := dev.Start(ctx, opts)
	if err != nil {
		return oneLineErr(err)
	}
	defer func() {
		u.Action("stopping the controllers, the Git server and the cluster")
		env.Stop()
		u.Success("stopped; nothing of the environment is left running")
	}()
	src.SetServer(env.Git.URL)
	if err := syncSource(ctx, env.Client, u, src); err != nil {
		return err
	}
	if err := env.SetRunning(src.WorkTree); err != nil {
		return err
	}
	if hookTree != "" {
		if err := installHook(u, hookTree, dir); err != nil {
			return err
		}
	}
	werr := waitSynced(ctx, env.Client, u, g.timeout)
	u.Info("up in %s", time.Since(begin).Round(100*time.Millisecond))
	st := env.State()
	printExport(cmd.OutOrStdout(), env.Cluster.KubeconfigPath, src, hookTree != "")
	printNotification(ctx, cmd.OutOrStdout(), env.Client, &st, dir, "here")
	if werr != nil {
		u.Warning("%v; the environment keeps running: fix the repository and commit, or press Ctrl-C", werr)
	}
	u.Info("running in the foreground: press Ctrl-C to stop (or run `eddy dev down`)")
	<-ctx.Done()
	fmt.Fprintln(cmd.OutOrStdout())
	return nil
}

// devOptions are the options of dev.Start for the flags f; alerts go to u.
func devOptions(root, dir string, f *devFlags, u *ui) dev.Options {
	return dev.Options{Root: root, K8sBinDir: k8sBinDir(root), StateDir: dir, Nodes: f.nodes,
		Progress: func(s string) { u.Action("%s", s) }, AlertsSink: f.alertsSink,
		OnAlert: func(line string) { u.Alert("%s", line) }}
}

// oneLineErr puts a start-up error's first line first and the tails of the
// component logs it carries (localcluster appends them) after it.
func oneLineErr(err error) error {
	msg := err.Error()
	if first, rest, ok := strings.Cut(msg, "\n"); ok && rest != "" {
		return fmt.Errorf("%s\n\ncomponent logs (set EDDY_KEEP_CLUSTER_DIR=1 to keep them):\n%s", first, rest)
	}
	return err
}

func syncSource(ctx context.Context, c client.Client, u *ui, src *dev.Source) error {
	what := src.URL
	if src.WorkTree != "" {
		what = src.WorkTree
		if src.Snapshot {
			what += " (snapshot: commit there to change what is synced)"
		}
	}
	u.Action("syncing %s, branch %s, path %s", what, src.Branch, src.Path)
	return dev.ApplySync(ctx, c, src)
}

// resync points the running sync at src: it suspends the Kustomization,
// points the GitRepository at src, and once that fetched, sets the new path
// and resumes the Kustomization; so no path is built from the wrong
// repository's artifact. A source that cannot be fetched leaves the
// Kustomization suspended, with the error.
func resync(ctx context.Context, c client.Client, u *ui, dir string, src *dev.Source, timeout time.Duration) error {
	u.Action("syncing %s, branch %s, path %s", src.URL, src.Branch, src.Path)
	if err := dev.SuspendKustomization(ctx, c); err != nil {
		return err
	}
	if err := dev.ApplySource(ctx, c, src); err != nil {
		return err
	}
	// From here the GitRepository follows src: status and the hook say so.
	if err := dev.SetWorkTree(dir, src.WorkTree); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	repo := &sourcev1.GitRepository{}
	key := client.ObjectKey{Namespace: dev.Namespace, Name: dev.SyncName}
	stop := u.Spin("waiting for the GitRepository to fetch " + src.URL)
	err := waitFor(ctx, c, repo, key, func() (bool, error) {
		// source-controller handled the request ApplySource made, for this
		// generation: a failed fetch leaves status.observedGeneration behind,
		// so that is not waited for unless the fetch succeeded.
		ready := apimeta.FindStatusCondition(repo.Status.Conditions, meta.ReadyCondition)
		requested := repo.Annotations[meta.ReconcileRequestAnnotation]
		if ready == nil || ready.ObservedGeneration != repo.Generation || requested == "" || repo.Status.LastHandledReconcileAt != requested {
			return false, nil
		}
		if ready.Status == metav1.ConditionFalse && ready.Reason != meta.ProgressingReason && ready.Reason != meta.ProgressingWithRetryReason {
			return false, fmt.Errorf("GitRepository %s cannot fetch the repository: %s: %s (Kustomization %s stays suspended until a repository is fetched)",
				key, ready.Reason, oneLine(ready.Message), key)
		}
		return ready.Status == metav1.ConditionTrue && repo.Status.ObservedGeneration == repo.Generation, nil
	}, "GitRepository "+key.String())
	stop()
	if err != nil {
		return err
	}
	return dev.ApplyKustomization(ctx, c, src)
}

func printExport(w io.Writer, kubeconfig string, src *dev.Source, hook bool) {
	fmt.Fprintf(w, "\nexport KUBECONFIG=%s\n\n", shellWord(kubeconfig))
	switch {
	case src != nil && src.WorkTree != "" && hook:
		fmt.Fprintf(w, "Commits to %s (branch %s) are applied at once: its post-commit hook sends them to Receiver %s/%s.\n", src.WorkTree, src.Branch, dev.Namespace, dev.HookReceiver)
	case src != nil && src.Bare:
		fmt.Fprintf(w, "Pushes to %s (branch %s) are picked up within 1m, or at once with\n  eddy reconcile ks flux-system --with-source\n", src.WorkTree, src.Branch)
	case src != nil && src.WorkTree != "":
		fmt.Fprintf(w, "Commits to %s (branch %s) are picked up within 1m, or at once with\n  eddy reconcile ks flux-system --with-source\n", src.WorkTree, src.Branch)
	}
}

// shellWord returns s as one word for a POSIX shell: as it is when it has
// no character the shell treats specially, else in single quotes.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printNotification prints notification-controller's webhook receiver base
// URL, the URL of each Receiver that has a path, and the alerts sink, whose
// lines are printed where alertsTo says.
func printNotification(ctx context.Context, w io.Writer, c client.Client, s *dev.State, dir, alertsTo string) {
	if s.ReceiverURL == "" {
		return
	}
	fmt.Fprintf(w, "Webhook receiver (notification-controller): %s\n", s.ReceiverURL)
	if c != nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rs := &notificationv1.ReceiverList{}
		if err := c.List(ctx, rs); err == nil {
			for _, r := range rs.Items {
				if r.Status.WebhookPath != "" {
					fmt.Fprintf(w, "  Receiver %s/%s (%s): %s%s\n", r.Namespace, r.Name, r.Spec.Type, s.ReceiverURL, r.Status.WebhookPath)
				}
			}
		}
	}
	if s.AlertsSink != "" {
		fmt.Fprintf(w, "Alerts sink: %s (Secret %s/%s); alerts are printed %s and in %s\n", s.AlertsSink, dev.Namespace, dev.AlertsSinkSecret,
			alertsTo, filepath.Join(dir, "logs", "alerts.log"))
	}
}

// upRunning re-points a running environment at another repository or path;
// bad input leaves it as it was.
func upRunning(cmd *cobra.Command, g *globalFlags, u *ui, root, dir string, s *dev.State, f *devFlags) error {
	if s.Phase != dev.PhaseRunning {
		return fmt.Errorf("an eddy dev environment is already running (%s, pid %d): wait for it, or run `eddy dev down`", s.Phase, s.PID)
	}
	if f.alertsSink && s.AlertsSink == "" {
		return errors.New("--alerts-sink: the running environment was started without it: run `eddy dev down`, then `eddy dev up --alerts-sink`")
	}
	c, err := clientFor(s.Kubeconfig)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if f.repo == "" && f.path == "" && f.branch == "" {
		if f.installHook {
			tree, err := hookTarget(dir, nil, s)
			if err != nil {
				return err
			}
			if err := installHook(u, tree, dir); err != nil {
				return err
			}
		}
		u.Success("an eddy dev environment is already running (pid %d)", s.PID)
		printExport(cmd.OutOrStdout(), s.Kubeconfig, nil, false)
		printNotification(ctx, cmd.OutOrStdout(), c, s, dir, "by the environment (see `eddy dev status`)")
		return nil
	}
	src, err := resolveSource(root, dir, f)
	if err != nil {
		return err
	}
	hookTree := ""
	if f.installHook {
		if hookTree, err = hookTarget(dir, src, nil); err != nil {
			return err
		}
	}
	src.SetServer(s.GitServer)
	if err := resync(ctx, c, u, dir, src, g.timeout); err != nil {
		return err
	}
	if hookTree != "" {
		if err := installHook(u, hookTree, dir); err != nil {
			return err
		}
	}
	werr := waitSynced(ctx, c, u, g.timeout)
	printExport(cmd.OutOrStdout(), s.Kubeconfig, src, hookTree != "")
	printNotification(ctx, cmd.OutOrStdout(), c, s, dir, "by the environment (see `eddy dev status`)")
	return werr
}

func clientFor(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: dev.NewScheme()})
}

// upDetached starts `eddy dev supervise` as a daemon (own session, output to
// logs/supervise.log), waits until it reports the environment running, then
// shows the sync like the foreground does.
func upDetached(cmd *cobra.Command, g *globalFlags, u *ui, dir string, lock *os.File, f *devFlags, src *dev.Source, hookTree string) error {
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
	repo := f.repo
	if repo != "" && !dev.IsURL(repo) {
		repo, _ = filepath.Abs(repo)
	}
	args := []string{"dev", "supervise", "--repo=" + repo, "--path=" + f.path, "--branch=" + f.branch,
		"--target-namespace=" + f.targetNamespace, "--nodes=" + strconv.Itoa(f.nodes), "--alerts-sink=" + strconv.FormatBool(f.alertsSink),
		"--lock-fd=3"}
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
	for {
		s, _ := dev.ReadState(dir)
		if s != nil && s.PID == child.Process.Pid && s.Phase == dev.PhaseRunning {
			break
		}
		select {
		case <-exited:
			stop()
			if data, err := os.ReadFile(errPath); err == nil {
				return fmt.Errorf("%s (log: %s)", strings.TrimSpace(string(data)), logPath)
			}
			return fmt.Errorf("eddy dev supervise exited: %s", lastLine(logPath))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(begin) > g.timeout {
			stop()
			_ = child.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the environment did not start within %s: see %s", g.timeout, logPath)
		}
	}
	stop()
	s, _ := dev.ReadState(dir)
	u.Success("environment running (supervisor pid %d, started in %s)", s.PID, time.Since(begin).Round(100*time.Millisecond))
	c, err := clientFor(s.Kubeconfig)
	if err != nil {
		return err
	}
	src.SetServer(s.GitServer)
	if hookTree != "" {
		if err := installHook(u, hookTree, dir); err != nil {
			return err
		}
	}
	werr := waitSynced(cmd.Context(), c, u, g.timeout)
	u.Info("up in %s", time.Since(begin).Round(100*time.Millisecond))
	printExport(cmd.OutOrStdout(), s.Kubeconfig, src, hookTree != "")
	printNotification(cmd.Context(), cmd.OutOrStdout(), c, s, dir, "in "+logPath)
	fmt.Fprintln(cmd.OutOrStdout(), "Run `eddy dev down` to stop it.")
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

// runSupervise owns a detached environment until SIGTERM or SIGINT. A
// failure's first line also goes to logs/supervise.err, for `up` to show.
func runSupervise(cmd *cobra.Command, f *devFlags) (err error) {
	defer func() {
		if err != nil {
			if dir, derr := stateDir(); derr == nil {
				first, _, _ := strings.Cut(err.Error(), "\n")
				_ = os.WriteFile(filepath.Join(dir, "logs", "supervise.err"), []byte(first+"\n"), 0o600)
			}
		}
	}()
	u := newUI(cmd.OutOrStdout())
	dir, err := stateDir()
	if err != nil {
		return err
	}
	opts := dev.Options{}
	if f.lockFD > 0 {
		// The lock `eddy dev up --detach` took for this process; not passed on to the controllers.
		if err := syscall.Flock(f.lockFD, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			return fmt.Errorf("--lock-fd %d is not the lock of %s: %v", f.lockFD, dir, err)
		}
		syscall.CloseOnExec(f.lockFD)
		opts.Lock = os.NewFile(uintptr(f.lockFD), filepath.Join(dir, "lock"))
		defer opts.Lock.Close()
	}
	root, err := findRoot()
	if err != nil {
		return err
	}
	src, err := resolveSource(root, dir, f)
	if err != nil {
		return err
	}
	ctx, stopSignals := signal.NotifyContext(cmd.Context(), stopSignalsOf()...)
	defer stopSignals()
	o := devOptions(root, dir, f, u)
	o.Lock = opts.Lock
	env, err := dev.Start(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		u.Action("stopping")
		env.Stop()
		u.Success("stopped")
	}()
	src.SetServer(env.Git.URL)
	if err := syncSource(ctx, env.Client, u, src); err != nil {
		return err
	}
	if err := env.SetRunning(src.WorkTree); err != nil {
		return err
	}
	u.Success("running")
	<-ctx.Done()
	return nil
}

func runDown(cmd *cobra.Command) error {
	u := newUI(cmd.OutOrStdout())
	dir, err := stateDir()
	if err != nil {
		return err
	}
	s, err := dev.ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		u.Success("no eddy dev environment is running")
		return nil
	}
	if err != nil {
		return downUnreadable(u, dir, err)
	}
	pids := []int{}
	for _, p := range s.Cluster {
		pids = append(pids, p.PID)
	}
	for _, p := range s.Controllers {
		pids = append(pids, p.PID)
	}
	if dev.IsOwner(s.PID) {
		u.Action("stopping the environment (pid %d)", s.PID)
		_ = syscall.Kill(s.PID, syscall.SIGTERM)
		stop := u.Spin("waiting for the controllers, the Git server and the cluster to stop")
		deadline := time.Now().Add(60 * time.Second)
		for dev.IsOwner(s.PID) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		stop()
		if dev.IsOwner(s.PID) {
			u.Warning("pid %d did not stop within 60s: killing it", s.PID)
			_ = syscall.Kill(s.PID, syscall.SIGKILL)
		}
	}
	// Children die with their owner (parent-death signal); wait for that
	// and kill any left, e.g. after the owner itself was killed outright.
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range pids {
		for dev.Mentions(pid, dir) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if dev.Mentions(pid, dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	var busy []string
	for _, port := range s.Ports {
		if !portFree(port) {
			busy = append(busy, strconv.Itoa(port))
		}
	}
	removeState(dir)
	if len(busy) > 0 {
		return fmt.Errorf("stopped, but ports %s are still in use", strings.Join(busy, ", "))
	}
	u.Success("stopped: %d processes ended, %d ports released", len(pids)+1, len(s.Ports))
	return nil
}

// removeState removes what an environment leaves in its state directory
// besides logs/ and the webhook token.
func removeState(dir string) {
	for _, sub := range []string{"cluster", "storage", "sync.json", "state.json"} {
		_ = os.RemoveAll(filepath.Join(dir, sub))
	}
	_ = dev.RemoveServed(dir)
}

// downUnreadable stops an environment whose state file cannot be read
// (readErr): the process that holds the state directory's lock is its
// owner, which stops the rest; then the state is removed.
func downUnreadable(u *ui, dir string, readErr error) error {
	holders, ok := dev.LockHolders(dir)
	if !ok {
		return fmt.Errorf("%v: cannot tell which process owns the environment (no /proc): stop it, then remove %s, %s and %s",
			readErr, filepath.Join(dir, "state.json"), filepath.Join(dir, "cluster"), filepath.Join(dir, "storage"))
	}
	u.Warning("%v: stopping the process that holds %s, and removing the state", readErr, filepath.Join(dir, "lock"))
	stopped := 0
	for _, pid := range holders {
		if pid == os.Getpid() || !dev.IsOwner(pid) {
			continue
		}
		u.Action("stopping the environment (pid %d)", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(60 * time.Second)
		for dev.IsOwner(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if dev.IsOwner(pid) {
			u.Warning("pid %d did not stop within 60s: killing it", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		stopped++
	}
	lock, err := dev.Lock(dir)
	if err != nil {
		left, _ := dev.LockHolders(dir)
		return fmt.Errorf("processes %v still hold %s: stop them, then run `eddy dev down` again", left, filepath.Join(dir, "lock"))
	}
	defer lock.Close()
	removeState(dir)
	u.Success("stopped: %d process(es) ended; the unreadable state file is removed", stopped)
	return nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func runStatus(cmd *cobra.Command) error {
	out := cmd.OutOrStdout()
	dir, err := stateDir()
	if err != nil {
		return err
	}
	s, err := dev.ReadState(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && !dev.IsOwner(s.PID)) {
		return errors.New("no eddy dev environment is running: start one with `eddy dev up`")
	}
	if err != nil {
		if holders, _ := dev.LockHolders(dir); len(holders) > 0 {
			return fmt.Errorf("%v: the environment of pid %d cannot be shown: run `eddy dev down` to stop it and remove the file", err, holders[0])
		}
		return fmt.Errorf("%v: no environment holds %s: run `eddy dev down` to remove the file", err, filepath.Join(dir, "lock"))
	}
	fmt.Fprintf(out, "environment: %s (pid %d), up %s\n", s.Phase, s.PID, time.Since(s.StartedAt).Round(time.Second))
	fmt.Fprintf(out, "state:       %s\n", dir)
	if s.Kubeconfig != "" {
		fmt.Fprintf(out, "kubeconfig:  %s\n", s.Kubeconfig)
	}
	if s.WorkTree != "" {
		fmt.Fprintf(out, "repository:  %s (served at %s)\n", s.WorkTree, s.GitServer)
		if p, err := dev.HookPath(s.WorkTree); err == nil && dev.IsEddyHook(p) {
			fmt.Fprintf(out, "hook:        %s (commits are sent to Receiver %s/%s)\n", p, dev.Namespace, dev.HookReceiver)
		}
	}
	if s.NotificationAddr != "" {
		fmt.Fprintf(out, "events:      %s (recorded in %s, forwarded to notification-controller at %s)\n",
			s.EventsAddr, filepath.Join(dir, "logs", "events.log"), s.NotificationAddr)
		fmt.Fprintf(out, "receiver:    %s (webhook receivers; a Receiver's URL adds its status.webhookPath)\n", s.ReceiverURL)
	}
	if s.AlertsSink != "" {
		fmt.Fprintf(out, "alerts sink: %s (Secret %s/%s; alerts in %s)\n", s.AlertsSink, dev.Namespace, dev.AlertsSinkSecret,
			filepath.Join(dir, "logs", "alerts.log"))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "PROCESS\tPID\tHEALTH\tRESTARTS\tLAST EXIT\tLOG")
	for _, p := range s.Cluster {
		health := "running"
		if !dev.Alive(p.PID) {
			health = "exited"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t-\t\t%s\n", p.Name, p.PID, health, p.Log)
	}
	unhealthy := 0
	for _, p := range s.Controllers {
		health := "ready"
		switch {
		case !dev.Alive(p.PID):
			health, unhealthy = "down", unhealthy+1
		case !dev.Healthy(p.HealthURL):
			health, unhealthy = "not ready", unhealthy+1
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", p.Name, p.PID, health, p.Restarts, p.LastExit, p.LogPath)
	}
	_ = tw.Flush()
	if s.Kubeconfig != "" && s.Phase == dev.PhaseRunning {
		if c, err := clientFor(s.Kubeconfig); err == nil {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			fmt.Fprintln(out)
			printSyncTable(ctx, out, c)
		}
	}
	if unhealthy > 0 {
		return fmt.Errorf("%d controller(s) not ready", unhealthy)
	}
	return nil
}

// printSyncTable prints every GitRepository and Kustomization as `get -A` does.
func printSyncTable(ctx context.Context, w io.Writer, c client.Client) {
	var rs []row
	repos := &sourcev1.GitRepositoryList{}
	if err := c.List(ctx, repos); err == nil {
		for _, o := range repos.Items {
			r := row{namespace: o.Namespace, name: "gitrepository/" + o.Name, suspended: o.Spec.Suspend}
			if o.Status.Artifact != nil {
				r.revision = o.Status.Artifact.Revision
			}
			r.ready, r.message = readyOf(o.Status.Conditions)
			rs = append(rs, r)
		}
	}
	kss := &kustomizev1.KustomizationList{}
	if err := c.List(ctx, kss); err == nil {
		for _, o := range kss.Items {
			r := row{namespace: o.Namespace, name: "kustomization/" + o.Name, suspended: o.Spec.Suspend, revision: o.Status.LastAppliedRevision}
			r.ready, r.message = readyOf(o.Status.Conditions)
			rs = append(rs, r)
		}
	}
	if len(rs) > 0 {
		printTable(w, rs, true)
	}
}

// settled reports whether a Kustomization's last reconcile of its current
// generation has ended: Ready=True, Stalled, or failed with a reason (which
// includes waiting for a dependency that failed).
func settled(k *kustomizev1.Kustomization) bool {
	ready := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
	if ready == nil || ready.ObservedGeneration != k.Generation || k.Status.LastAttemptedRevision == "" && ready.Reason != meta.DependencyNotReadyReason {
		return false
	}
	return ready.Status == metav1.ConditionTrue || ready.Reason != meta.ProgressingReason && ready.Reason != meta.ProgressingWithRetryReason
}

// hint says how to fix the usual causes of a failed first sync, from the
// Ready message; "" when it knows none.
func hint(msg string) string {
	switch {
	case strings.Contains(msg, "namespace not specified"):
		return "objects without metadata.namespace: set it in the repository, or pass --target-namespace"
	case strings.Contains(msg, "no matches for kind"):
		return "a kind whose CRD is not installed: eddy dev installs the CRDs of source-controller (GitRepository), kustomize-controller and notification-controller only (no helm-controller yet)"
	case strings.Contains(msg, "kustomize build failed"), strings.Contains(msg, "yaml: "), strings.Contains(msg, "failed to decode"):
		return "the manifests do not parse: fix the file named in the message and commit"
	}
	return ""
}

// waitSynced prints each change of the sync objects' Ready status until the
// flux-system Kustomization and every Kustomization it created settled, then
// prints them. The error says which are not Ready and why.
func waitSynced(ctx context.Context, c client.Client, u *ui, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	seen := map[string]string{}
	stop := u.Spin("waiting for the GitRepository and the Kustomizations to be Ready")
	defer stop()
	for {
		repos := &sourcev1.GitRepositoryList{}
		kss := &kustomizev1.KustomizationList{}
		if err := c.List(ctx, repos); err != nil {
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if err := c.List(ctx, kss); err != nil {
			if ctx.Err() != nil {
				break
			}
			continue
		}
		report := func(key, ready, msg string) {
			line := ready + " " + oneLine(msg)
			if seen[key] != line {
				seen[key] = line
				switch ready {
				case "True":
					u.Success("%s: %s", key, oneLine(msg))
				case "False":
					u.Waiting("%s: %s", key, oneLine(msg))
				default:
					u.Waiting("%s: %s", key, oneLine(msg))
				}
			}
		}
		for _, o := range repos.Items {
			ready, msg := readyOf(o.Status.Conditions)
			report("GitRepository "+o.Namespace+"/"+o.Name, ready, msg)
		}
		artifact := ""
		for _, o := range repos.Items {
			if o.Namespace != dev.Namespace || o.Name != dev.SyncName {
				continue
			}
			if o.Status.Artifact != nil {
				artifact = o.Status.Artifact.Revision
			} else if r := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition); r != nil &&
				r.Status == metav1.ConditionFalse && r.ObservedGeneration == o.Generation && r.Reason != meta.ProgressingReason {
				stop()
				return fmt.Errorf("GitRepository %s/%s cannot fetch the repository: %s: %s", o.Namespace, o.Name, r.Reason, oneLine(r.Message))
			}
		}
		all := true
		rootDone := false
		for i := range kss.Items {
			k := &kss.Items[i]
			ready, msg := readyOf(k.Status.Conditions)
			report("Kustomization "+k.Namespace+"/"+k.Name, ready, msg)
			if !settled(k) {
				all = false
			} else if k.Namespace == dev.Namespace && k.Name == dev.SyncName && artifact != "" && k.Status.LastAttemptedRevision == artifact {
				rootDone = true
			}
		}
		if rootDone && all {
			stop()
			var failed []string
			sort.Slice(kss.Items, func(i, j int) bool { return kss.Items[i].Name < kss.Items[j].Name })
			for _, k := range kss.Items {
				if ready, _ := readyOf(k.Status.Conditions); ready != "True" {
					failed = append(failed, k.Namespace+"/"+k.Name)
				}
			}
			fmt.Fprintln(u.out)
			printSyncTable(ctx, u.out, c)
			if len(failed) > 0 {
				for _, k := range kss.Items {
					if _, msg := readyOf(k.Status.Conditions); hint(msg) != "" {
						u.Warning("Kustomization %s/%s: %s", k.Namespace, k.Name, hint(msg))
					}
				}
				return fmt.Errorf("not Ready: Kustomization %s (see the MESSAGE column)", strings.Join(failed, ", "))
			}
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
		if ctx.Err() != nil {
			break
		}
	}
	stop()
	fmt.Fprintln(u.out)
	printSyncTable(context.Background(), u.out, c)
	return fmt.Errorf("not all Kustomizations settled within %s (see the MESSAGE column)", timeout)
}

// stopSignalsOf lists the signals that stop a foreground environment:
// Ctrl-C, SIGTERM and SIGHUP (the terminal closed: a window, an ssh
// session), except a SIGHUP that the process was started to ignore
// (`nohup eddy dev up &`), since asking to be notified would undo nohup.
func stopSignalsOf() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

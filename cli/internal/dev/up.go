package dev

import (
	"context"
	"errors"
	"fmt"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Flags are the flags of `eddy dev up` (and of the hidden `supervise`).
type Flags struct {
	// Repo, Path, Branch and TargetNamespace: --repo, --path, --branch and
	// --target-namespace (defaults in resolveSource).
	Repo, Path, Branch string
	TargetNamespace    string
	Nodes              int    // --nodes: fake nodes
	Detach             bool   // --detach
	AlertsSink         bool   // --alerts-sink
	InstallHook        bool   // --install-hook
	LockFD             int    // supervise --lock-fd: the inherited lock's file descriptor
	Shards             int    // --shards: shard processes of each sharded controller
	Version            string // the eddy version (Options.Version)
	UI                 bool   // --ui: serve the web UI (eddy ui) from the environment's owner
	UIListen           string // --ui-listen: its host:port (default webui.DefaultListen; port 0: any free port)
	Node               string // --node: NodeKwok ("" too) or NodeReal
	RegistryAddr       string // --registry-addr: the local registry's host:port with --node real
	// ControllerFlags are the --controller-flags values, NAME=FLAGS (see
	// ParseControllerFlags).
	ControllerFlags []string
}

// resolveSource applies the defaults of --repo and --path and checks them;
// with --install-hook it also returns the work tree to install the hook
// into (see hookTarget).
func resolveSource(root, dir string, f *Flags) (src *Source, hookTree string, err error) {
	repo, p := f.Repo, f.Path
	example := filepath.Join(root, "examples", "platform-config")
	if repo == "" {
		repo = example
	}
	if p == "" {
		p = "./"
		if sameDir(repo, example) { // also when named with --repo
			p = "./clusters/dev"
		}
	}
	if src, err = PrepareSource(dir, repo, p, f.Branch); err != nil {
		return nil, "", err
	}
	src.TargetNamespace = f.TargetNamespace
	if f.InstallHook {
		if hookTree, err = hookTarget(dir, src, nil); err != nil {
			return nil, "", err
		}
	}
	return src, hookTree, nil
}

// hookTarget returns the Git work tree that --install-hook installs into:
// the repository of src, or the running environment's when src is nil. A
// remote repository or a snapshot of a plain directory has none (error).
func hookTarget(dir string, src *Source, running *State) (string, error) {
	workTree, snapshot, bare := "", false, false
	switch {
	case src != nil:
		workTree, snapshot, bare = src.WorkTree, src.Snapshot, src.Bare
	case running != nil:
		workTree = running.WorkTree
		snapshot = workTree != "" && strings.HasPrefix(workTree, filepath.Join(dir, "git")+string(filepath.Separator))
		bare = workTree != "" && IsBare(workTree)
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
	if _, err := CheckHook(workTree); err != nil {
		return "", fmt.Errorf("--install-hook: %w", err)
	}
	return workTree, nil
}

// installHook installs the post-commit hook into workTree and says so.
func installHook(u *ui.UI, workTree, dir string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	path, err := InstallHook(workTree, exe, dir)
	if err != nil {
		return fmt.Errorf("--install-hook: %w", err)
	}
	u.Success("installed the post-commit hook %s: each commit is sent to Receiver %s/%s (created by eddy dev for GitRepository %s/%s)",
		path, Namespace, HookReceiver, Namespace, SyncName)
	return nil
}

// Up is `eddy dev up`: it starts an environment for f and syncs its
// repository, in the foreground until a stop signal or ctx ends (or, with
// f.Detach, as a background `eddy dev supervise`); on a running environment
// it re-points the sync. Progress goes to out, build output to errOut;
// timeout bounds each wait for the sync.
func Up(ctx context.Context, out, errOut io.Writer, timeout time.Duration, f *Flags) error {
	u := ui.New(out)
	if f.Shards < 0 {
		return fmt.Errorf("--shards=%d: want 0 (no sharding) or the number of shard processes per controller", f.Shards)
	}
	if _, err := ParseControllerFlags(f.ControllerFlags); err != nil {
		return err // before anything is touched
	}
	if err := CheckNodeFlags(f); err != nil {
		return err
	}
	dir, err := DefaultStateDir()
	if err != nil {
		return err
	}
	root, err := FindRoot()
	if err != nil {
		return err
	}
	if s := Running(dir); s != nil {
		return upRunning(ctx, out, timeout, u, root, dir, s, f)
	}
	// The lock first: a second `up` at the same time stops here, before it
	// touches the state directory (snapshots, logs) of the first.
	lock, err := Lock(dir)
	if err != nil {
		return err
	}
	defer lock.Close() // the environment's owner holds it (this process, or the supervisor's inherited copy)
	src, hookTree, err := resolveSource(root, dir, f)
	if err != nil {
		return err
	}
	cflags, err := resolveControllerFlags(dir, f.ControllerFlags)
	if err != nil {
		return err
	}
	if err := EnsureBinaries(root, u, errOut); err != nil {
		return err
	}
	if err := checkControllerFlags(root, cflags, f.ControllerFlags); err != nil {
		return err
	}
	// Said at every up: a flag kept from another day changes what runs.
	for _, l := range cflags.Kept(f.ControllerFlags) {
		u.Warning("controller flags kept from an earlier `eddy dev up` (clear with --controller-flags %s=): %s", strings.SplitN(l, " ", 2)[0], l)
	}
	images, err := checkNode(root, f)
	if err != nil {
		return err
	}
	// Said before --detach hands over: the supervisor's lines go to its log.
	var optional Options
	if err := withOptional(&optional, root, src, u, images); err != nil {
		return err
	}
	if f.Detach {
		return upDetached(ctx, out, timeout, u, dir, lock, f, cflags, src, hookTree)
	}

	ctx, stopSignals := signal.NotifyContext(ctx, StopSignals()...)
	defer stopSignals()
	begin := time.Now()
	opts := optionsFor(root, dir, f, u)
	opts.Optional, opts.OptionalComponents = optional.Optional, optional.OptionalComponents
	opts.Lock, opts.ControllerFlags, opts.NodeImages = lock, cflags, images
	env, stop, err := startSync(ctx, u, opts, src, "stopping the controllers, the Git server and the cluster",
		"stopped; nothing of the environment is left running")
	if err != nil {
		return OneLineErr(err)
	}
	defer stop()
	if hookTree != "" {
		if err := installHook(u, hookTree, dir); err != nil {
			return err
		}
	}
	werr := waitSynced(ctx, env.Client, u, timeout)
	u.Success("up in %s", time.Since(begin).Round(100*time.Millisecond))
	st := env.State()
	printExport(out, env.Cluster.KubeconfigPath, src, hookTree != "")
	printPushes(out, &st, src)
	printUI(out, &st)
	printRegistry(out, &st)
	printNotification(ctx, out, env.Client, &st, dir, "here")
	if werr != nil {
		u.Warning("%v; the environment keeps running: fix the repository and commit, or press Ctrl-C", werr)
	}
	u.Waiting("running in the foreground: press Ctrl-C to stop (or run `eddy dev down`)")
	<-ctx.Done()
	fmt.Fprintln(out)
	return nil
}

// optionsFor returns the options of Start for the flags f; alerts go to u.
func optionsFor(root, dir string, f *Flags, u *ui.UI) Options {
	return Options{Root: root, K8sBinDir: K8sBinDir(root), StateDir: dir, Nodes: f.Nodes, Version: f.Version,
		Progress: func(s string) { u.Action("%s", s) }, AlertsSink: f.AlertsSink,
		OnAlert: func(line string) { u.Alert("%s", line) }, Shards: f.Shards, UI: f.UI, UIListen: f.UIListen,
		Node: f.Node, RegistryAddr: f.RegistryAddr}
}

// checkNode returns, for --node real, the images to install, once this
// machine can run the node profile; else an error of one line saying what
// is missing. Nothing for kwok's nodes.
func checkNode(root string, f *Flags) (*NodeImages, error) {
	if f.Node != NodeReal {
		return nil, nil
	}
	if err := localcluster.CheckNodeProfile(K8sBinDir(root)); err != nil {
		return nil, fmt.Errorf("--node real: %w", err)
	}
	dir, err := DefaultStateDir()
	if err != nil {
		return nil, err
	}
	// containerd's longest socket path, which the kernel limits.
	if sock := filepath.Join(dir, "cluster", "node", "containerd", "containerd.sock.ttrpc"); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("--node real: the state directory %s is too deep for containerd's sockets (%d characters, at most %d): "+
			"set XDG_STATE_HOME to a shorter directory", dir, len(sock), maxSocketPath)
	}
	return FindNodeImages(root, f.Version)
}

// maxSocketPath is the longest Unix socket path containerd takes.
const maxSocketPath = 104

// printRegistry prints the registry of --node real and the images it
// serves, by the names a repository gives them.
func printRegistry(w io.Writer, s *State) {
	if s.Registry == "" {
		return
	}
	fmt.Fprintf(w, "Registry: %s (the node pulls from it: name its images %s/<name>:<tag>; serving %s)\n",
		s.Registry, s.Registry, strings.Join(s.Images, ", "))
}

// startSync starts an environment with opts, points it at src and records
// it running. stop stops it, printing stopping before and stopped after; on
// error nothing is left running.
func startSync(ctx context.Context, u *ui.UI, opts Options, src *Source, stopping, stopped string) (env *Env, stop func(), err error) {
	if env, err = Start(ctx, opts); err != nil {
		return nil, nil, err
	}
	stop = func() {
		u.Action("%s", stopping)
		env.Stop()
		u.Success("%s", stopped)
	}
	src.SetServer(env.Git.URL)
	if err = SyncSource(ctx, env.Client, u, src); err == nil {
		err = env.SetRunning(src)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	return env, stop, nil
}

// OneLineErr puts a start-up error's first line first and the tails of the
// component logs it carries (localcluster appends them) after it.
func OneLineErr(err error) error {
	msg := err.Error()
	if first, rest, ok := strings.Cut(msg, "\n"); ok && rest != "" {
		return fmt.Errorf("%s\n\ncomponent logs (set EDDY_KEEP_CLUSTER_DIR=1 to keep them):\n%s", first, rest)
	}
	return err
}

// SyncSource says what it syncs and applies the flux-system GitRepository
// and Kustomization for src (see ApplySync).
func SyncSource(ctx context.Context, c client.Client, u *ui.UI, src *Source) error {
	what := src.URL
	if src.WorkTree != "" {
		what = src.WorkTree
		if src.Snapshot {
			what += " (snapshot: commit there to change what is synced)"
		}
	}
	u.Action("syncing %s, branch %s, path %s", what, src.Branch, src.Path)
	return ApplySync(ctx, c, src)
}

// resync points the running sync at src: it suspends the Kustomization,
// points the GitRepository at src, and once that fetched, sets the new path
// and resumes the Kustomization; so no path is built from the wrong
// repository's artifact. A source that cannot be fetched leaves the
// Kustomization suspended, with the error.
func resync(ctx context.Context, c client.Client, u *ui.UI, dir string, src *Source, timeout time.Duration) error {
	u.Action("syncing %s, branch %s, path %s", src.URL, src.Branch, src.Path)
	if err := SuspendKustomization(ctx, c); err != nil {
		return err
	}
	if err := ApplySource(ctx, c, src); err != nil {
		return err
	}
	// From here the GitRepository follows src: status and the hook say so.
	if err := SetSync(dir, src); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	repo := &sourcev1.GitRepository{}
	key := client.ObjectKey{Namespace: Namespace, Name: SyncName}
	stop := u.Spin("waiting for the GitRepository to fetch " + src.URL)
	err := status.WaitFor(ctx, c, repo, key, status.PollInterval, func() (bool, error) {
		// source-controller handled the request ApplySource made, for this
		// generation: a failed fetch leaves status.observedGeneration behind,
		// so that is not waited for unless the fetch succeeded.
		ready, current := kinds.ReadyCondition(repo)
		requested := repo.Annotations[meta.ReconcileRequestAnnotation]
		if ready == nil || !current || requested == "" || repo.Status.LastHandledReconcileAt != requested {
			return false, nil
		}
		if ready.Status == metav1.ConditionFalse && ready.Reason != meta.ProgressingReason && ready.Reason != meta.ProgressingWithRetryReason {
			return false, fmt.Errorf("GitRepository %s cannot fetch the repository: %s: %s (Kustomization %s stays suspended until a repository is fetched)",
				key, ready.Reason, ui.OneLine(ready.Message), key)
		}
		return ready.Status == metav1.ConditionTrue && repo.Status.ObservedGeneration == repo.Generation, nil
	}, "GitRepository "+key.String())
	stop()
	if err != nil {
		return err
	}
	return ApplyKustomization(ctx, c, src)
}

func printExport(w io.Writer, kubeconfig string, src *Source, hook bool) {
	fmt.Fprintf(w, "\nexport KUBECONFIG=%s\n\n", shellWord(kubeconfig))
	switch {
	case src != nil && src.WorkTree != "" && hook:
		fmt.Fprintf(w, "Commits to %s (branch %s) are applied at once: its post-commit hook sends them to Receiver %s/%s.\n", src.WorkTree, src.Branch, Namespace, HookReceiver)
	case src != nil && src.Bare:
		fmt.Fprintf(w, "Pushes to %s (branch %s) are picked up within 1m, or at once with\n  eddy reconcile ks flux-system --with-source\n", src.WorkTree, src.Branch)
	case src != nil && src.WorkTree != "":
		fmt.Fprintf(w, "Commits to %s (branch %s) are picked up within 1m, or at once with\n  eddy reconcile ks flux-system --with-source\n", src.WorkTree, src.Branch)
	}
}

// printUI prints the web UI's address (`UI: http://…/`) when the
// environment serves it (--ui).
func printUI(w io.Writer, s *State) {
	if s.UI != "" {
		fmt.Fprintf(w, "UI: %s\n", s.UI)
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
	return shellQuote(s)
}

// shellQuote returns s in single quotes, each single quote of s closing
// the quotes, escaped and reopening them: one word for a POSIX shell
// whatever s holds.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// printNotification prints notification-controller's webhook receiver base
// URL, the URL of each Receiver that has a path, and the alerts sink, whose
// lines are printed where alertsTo says.
func printNotification(ctx context.Context, w io.Writer, c client.Client, s *State, dir, alertsTo string) {
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
		fmt.Fprintf(w, "Alerts sink: %s (Secret %s/%s); alerts are printed %s and in %s\n", s.AlertsSink, Namespace, AlertsSinkSecret,
			alertsTo, filepath.Join(dir, "logs", "alerts.log"))
	}
}

// upRunning repairs a running environment (see repair) and re-points it at
// another repository or path; bad input leaves it as it was.
func upRunning(ctx context.Context, out io.Writer, timeout time.Duration, u *ui.UI, root, dir string, s *State, f *Flags) error {
	if s.Phase != PhaseRunning {
		return fmt.Errorf("an eddy dev environment is already running (%s, pid %d): wait for it, or run `eddy dev down`", s.Phase, s.PID)
	}
	if f.AlertsSink && s.AlertsSink == "" {
		return errors.New("--alerts-sink: the running environment was started without it: run `eddy dev down`, then `eddy dev up --alerts-sink`")
	}
	if f.Shards > 0 && f.Shards != s.Shards {
		return fmt.Errorf("--shards=%d: the running environment runs %d shard(s): run `eddy dev down`, then `eddy dev up --shards=%d`", f.Shards, s.Shards, f.Shards)
	}
	if f.Node != "" && f.Node != nodeOf(s) {
		return fmt.Errorf("--node %s: the running environment runs on %s nodes: run `eddy dev down`, then `eddy dev up --node %s`", f.Node, nodeOf(s), f.Node)
	}
	if f.UI && s.UI == "" {
		return errors.New("--ui: the running environment was started without it: run `eddy dev down`, then `eddy dev up --ui` (or run `eddy ui` beside it)")
	}
	if len(f.ControllerFlags) > 0 {
		cflags, err := resolveControllerFlags(dir, f.ControllerFlags)
		if err != nil {
			return err
		}
		if !cflags.Equal(s.ControllerFlags) {
			return errors.New("--controller-flags: the running environment's controllers run with other flags (see `eddy dev status`): " +
				"run `eddy dev down`, then `eddy dev up` with these flags")
		}
	}
	c, err := ClientFor(s.Kubeconfig)
	if err != nil {
		return err
	}
	if err := repair(ctx, c, u, dir, f.Version, s, timeout); err != nil {
		return err
	}
	if f.Repo == "" && f.Path == "" && f.Branch == "" {
		if f.InstallHook {
			tree, err := hookTarget(dir, nil, s)
			if err != nil {
				return err
			}
			if err := installHook(u, tree, dir); err != nil {
				return err
			}
		}
		if src := readSync(dir); src != nil {
			if err := checkOptionalRunning(root, src, s); err != nil {
				u.Warning("%v", err)
			}
		}
		u.Success("an eddy dev environment is already running (pid %d)", s.PID)
		printExport(out, s.Kubeconfig, nil, false)
		printUI(out, s)
		printRegistry(out, s)
		printNotification(ctx, out, c, s, dir, "by the environment (see `eddy dev status`)")
		return nil
	}
	src, hookTree, err := resolveSource(root, dir, f)
	if err != nil {
		return err
	}
	if err := checkOptionalRunning(root, src, s); err != nil {
		return err
	}
	src.SetServer(s.GitServer)
	if err := resync(ctx, c, u, dir, src, timeout); err != nil {
		return err
	}
	if hookTree != "" {
		if err := installHook(u, hookTree, dir); err != nil {
			return err
		}
	}
	werr := waitSynced(ctx, c, u, timeout)
	printExport(out, s.Kubeconfig, src, hookTree != "")
	printPushes(out, s, src)
	printUI(out, s)
	printRegistry(out, s)
	printNotification(ctx, out, c, s, dir, "by the environment (see `eddy dev status`)")
	return werr
}

// ClientFor returns an admin client of the cluster of kubeconfig, with
// Eddy's kinds in its scheme.
func ClientFor(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

// PostCommitHook is `eddy dev hook post-commit`, what the hook installed by
// --install-hook runs in a work tree: it sends the commit at HEAD of the
// working directory to the Receiver of the environment in stateDir (""
// for the default). It prints one line and never fails, so a commit never
// fails because of it.
func PostCommitHook(ctx context.Context, out io.Writer, stateDir string) {
	if stateDir == "" {
		d, err := DefaultStateDir()
		if err != nil {
			fmt.Fprintf(out, "eddy dev: %v: commit not sent\n", err)
			return
		}
		stateDir = d
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(out, "eddy dev: %v: commit not sent\n", err)
		return
	}
	PostCommit(ctx, stateDir, wd, out)
}

package main

import (
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/cli/internal/webui"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/spf13/cobra"
)

// bindDevFlags binds the flags of `eddy dev up` and `supervise` to f.
func bindDevFlags(cmd *cobra.Command, f *dev.Flags) {
	cmd.Flags().StringVar(&f.Repo, "repo", "", "the GitOps repository: a local directory or a Git URL (default: Eddy's example examples/platform-config)")
	cmd.Flags().StringVar(&f.Path, "path", "", "the directory in the repository that the flux-system Kustomization applies (default ./clusters/dev for the example, else ./)")
	cmd.Flags().StringVar(&f.Branch, "branch", "", "the branch to follow (default: the local repository's current branch, else main)")
	cmd.Flags().StringVar(&f.TargetNamespace, "target-namespace", "", "the namespace of objects that set none (the flux-system Kustomization's spec.targetNamespace)")
	cmd.Flags().IntVar(&f.Nodes, "nodes", 1, "the number of fake (kwok) nodes (--node real: refused but 1)")
	cmd.Flags().StringVar(&f.Node, "node", "", "the kind of node: kwok (the default: fake nodes, the controllers as local processes) or real "+
		"(a real kubelet and containerd on this machine, as root, with the controllers as pods from the images of make images, served by a local registry at --registry-addr)")
	cmd.Flags().StringVar(&f.RegistryAddr, "registry-addr", dev.DefaultRegistryAddr, "with --node real: the host:port of the local registry that serves the images "+
		"to the node (a repository names them <registry-addr>/<name>:<tag>)")
	cmd.Flags().IntVar(&f.Shards, "shards", 0, "run this many more processes of source-, kustomize- and helm-controller, <controller>-shard<i> (i = 1..N), "+
		"each reconciling the objects labelled sharding.fluxcd.io/key=shard<i>; the main ones then skip labelled objects (--node real: as Deployments, as eddy install --shards)")
	cmd.Flags().BoolVar(&f.AlertsSink, "alerts-sink", false, "start a local sink for alerts and point the Secret "+dev.AlertsSinkSecret+
		" (key address) at it: each alert a generic Provider sends there is printed as one line (not with --node real)")
	cmd.Flags().BoolVar(&f.UI, "ui", false, "serve the web UI (as eddy ui, with the environment's admin kubeconfig) from the process that owns the environment; "+
		"its address is printed (UI: http://…/) and shown by eddy dev status")
	cmd.Flags().StringVar(&f.UIListen, "ui-listen", webui.DefaultListen, "with --ui: the UI's host:port; a taken port fails (port 0: any free port)")
	cmd.Flags().StringArrayVar(&f.ControllerFlags, "controller-flags", nil, "extra flags of a controller, NAME=FLAGS (repeatable), e.g. "+
		"kustomize-controller=--feature-gates=StrictPostBuildSubstitutions=false (NAME an image controller too); FLAGS are separated by spaces, each --name=value; "+
		"kept for the next eddy dev up until given again (NAME= clears them); flags eddy dev sets itself (ports, paths, --kubeconfig) are refused; --node real appends them to the controller's Deployment's arguments")
}

func newDevCommand(g *globalFlags) *cobra.Command {
	d := &cobra.Command{
		Use:   "dev",
		Short: "Run Eddy on a local cluster on this machine (no Docker, no cloud)",
		Long: "Run Eddy on a local Kubernetes control plane built from upstream source (bin/k8s), with\n" +
			"each controller as its own process, syncing a Git repository from a directory or URL;\n" +
			"with --node real, on a real node of this machine with the controllers as pods.\n" +
			"State lives in $XDG_STATE_HOME/eddy/dev (default ~/.local/state/eddy/dev).",
	}
	up := dev.Flags{Version: version}
	upCmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local cluster and controllers and sync a repository (foreground; --detach to return)",
		Long: "Start the local cluster and controllers and sync a repository.\n\n" +
			"--node kwok (the default): kwok's fake nodes (no container runs) and each controller as a\n" +
			"process of this machine, from bin/.\n\n" +
			"--node real: a real node on this machine (containerd, kubelet, kube-proxy, CoreDNS; node IP\n" +
			localcluster.NodeIP + "), with Eddy installed as eddy install --registry does: the controllers run as\n" +
			"pods from their images. It needs root, `make tools` (bin/k8s) and the images of this eddy's\n" +
			"version: bin/images (`make images`), else bin/test-images (`make test-images`), and\n" +
			"bin/node-images (`make node-images`: the pause image and tinyapp). They are pushed to a local\n" +
			"registry at --registry-addr (default " + dev.DefaultRegistryAddr + "), which the node pulls from: a repository\n" +
			"names an image " + dev.DefaultRegistryAddr + "/<name>:<tag>, e.g. " + dev.DefaultRegistryAddr + "/tinyapp:<version>. Local\n" +
			"repositories are served to the pods from " + localcluster.NodeIP + ". --shards and --controller-flags\n" +
			"are honoured through the controllers' Deployments; --nodes, --alerts-sink and --install-hook are\n" +
			"refused. `eddy dev down` stops the node and removes its containers, mounts, devices and tables.",
		Example: "  eddy dev up\n  eddy dev up --repo ~/src/fleet --path ./clusters/staging --detach\n" +
			"  eddy dev up --repo https://github.com/stefanprodan/podinfo --path ./kustomize --branch master\n" +
			"  sudo eddy dev up --node real --repo ~/src/fleet --detach",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return dev.Up(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g.timeout, &up)
		},
	}
	bindDevFlags(upCmd, &up)
	upCmd.Flags().BoolVar(&up.Detach, "detach", false, "return once the repository is synced; eddy dev down stops the environment")
	upCmd.Flags().BoolVar(&up.InstallHook, "install-hook", false, "install a Git post-commit hook into --repo (a local Git work tree) that sends each commit "+
		"to the GitHub Receiver "+dev.Namespace+"/"+dev.HookReceiver+" (eddy dev creates it), so it is applied at once; an existing hook is left alone")
	d.AddCommand(upCmd)

	sup := dev.Flags{Version: version}
	supCmd := &cobra.Command{
		Use:    "supervise",
		Short:  "Own a detached environment (started by `eddy dev up --detach`)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return dev.Supervise(cmd.Context(), cmd.OutOrStdout(), &sup)
		},
	}
	bindDevFlags(supCmd, &sup)
	supCmd.Flags().IntVar(&sup.LockFD, "lock-fd", 0, "the file descriptor of the state directory's lock, taken by eddy dev up --detach")
	d.AddCommand(supCmd)

	d.AddCommand(&cobra.Command{
		Use:   "down",
		Short: "Stop the environment: controllers, Git server and cluster (with --node real: the node's containers, mounts, devices and tables), and remove its state",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return dev.Down(cmd.Context(), cmd.OutOrStdout()) },
	})
	d.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "List the environment's processes, their health and restarts",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return dev.PrintStatus(cmd.Context(), cmd.OutOrStdout()) },
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
			dev.PostCommitHook(cmd.Context(), cmd.OutOrStdout(), dir)
			return nil
		},
	}
	pc.Flags().StringVar(&dir, "state-dir", "", "the environment's state directory (default: eddy dev's)")
	h.AddCommand(pc)
	return h
}

// Command eddy is Eddy's command line: a local cluster for trying Eddy,
// install, bootstrap, get, reconcile and more, with the conventions of
// kubectl and flux.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "eddy",
		Short:         "Eddy keeps a Kubernetes cluster equal to what a Git repository declares",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	g := &globalFlags{}
	g.bind(root)
	root.AddCommand(newDevCommand(g), newGetCommand(g), newReconcileCommand(g), newEventsCommand(g))
	root.AddCommand(newInstallCommand(g), newUninstallCommand(g))
	root.AddCommand(newTreeCommand(g), newBuildCommand(g), newDiffCommand(g), newLogsCommand(g))
	root.AddCommand(newSuspendCommand(g), newResumeCommand(g), newExportCommand(g), newDeleteCommand(g), newCreateCommand(g))
	root.AddCommand(newVersionCommand(g), newCheckCommand(g))
	root.AddCommand(newBootstrapCommand(g))
	root.AddCommand(newPushCommand(g), newPullCommand(g), newTagCommand(g), newListCommand(g))
	root.AddCommand(newUICommand(g))
	root.AddCommand(newAppCommand(g))
	return root
}

func main() {
	// controller-runtime's clients log through its global logger; the CLI
	// reports errors itself, and without a logger controller-runtime prints
	// a stack trace to stderr after 30 s.
	ctrllog.SetLogger(logr.Discard())
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "✗", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

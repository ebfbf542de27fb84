package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/eddyops/eddy/cli/internal/inspect"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/spf13/cobra"
)

// exitError makes the command exit with code, printing err. Flux
// compatible: `diff` exits 1 when it finds a change, 2 when it fails.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func newDiffCommand(g *globalFlags) *cobra.Command {
	diff := &cobra.Command{Use: "diff", Short: "Diff a local build against the cluster"}
	var lb localBuild
	ks := &cobra.Command{
		Use:     "kustomization [name]",
		Aliases: []string{"ks"},
		Short:   "Diff a Kustomization built from a local directory against the cluster",
		Long: `Build a Kustomization from a local directory (as eddy build kustomization does),
dry-run each object with server-side apply as kustomize-controller, and print what would change:
objects created, fields that differ (path: cluster → local), objects deleted (in the
Kustomization's inventory and no longer built). Exits 0 with no change, 1 with changes, 2 on error.`,
		Example: `  # Preview local changes as they would be applied on the cluster
  eddy diff kustomization my-app --path ./path/to/local/manifests`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return &exitError{2, errors.New("kustomization name is required")}
			}
			changed, err := runDiff(cmd, g, &lb, args[0])
			if err != nil {
				return &exitError{2, err}
			}
			if changed {
				return &exitError{1, errors.New("identified at least one change, exiting with non-zero exit code")}
			}
			return nil
		},
	}
	lb.bind(ks)
	diff.AddCommand(ks, newDiffArtifactCommand(g))
	return diff
}

// runDiff prints the changes and reports whether there are any.
func runDiff(cmd *cobra.Command, g *globalFlags, lb *localBuild, name string) (bool, error) {
	c, err := g.client()
	if err != nil {
		return false, err
	}
	ctx, cancel := g.ctx(cmd)
	defer cancel()
	k, objs, err := lb.build(ctx, c, name, g.namespace)
	if err != nil {
		return false, err
	}
	diff, err := inspect.Diff(ctx, c, k, objs)
	if err != nil {
		return false, err
	}
	w := cmd.OutOrStdout()
	changed := false
	for _, d := range diff {
		switch d.Action {
		case inspect.ActionCreated:
			changed = true
			fmt.Fprintf(w, "► %s created\n", d)
		case inspect.ActionConfigured:
			changed = true
			fmt.Fprintf(w, "► %s drifted\n", d)
			printFields(w, d.Fields)
		case inspect.ActionDeleted:
			changed = true
			fmt.Fprintf(w, "► %s deleted\n", d)
		}
	}
	return changed, nil
}

// printFields lists each differing field as `<path>: <cluster> → <local>`,
// "<none>" standing for an absent value.
func printFields(w io.Writer, fields []ssa.FieldDrift) {
	for _, f := range fields {
		live, desired := f.Live, f.Desired
		desiredAbsent, liveAbsent := f.Absent()
		if liveAbsent {
			live = "<none>"
		}
		if desiredAbsent {
			desired = "<none>"
		}
		fmt.Fprintf(w, "  %s: %s → %s\n", f.Path, live, desired)
	}
}

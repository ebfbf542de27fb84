package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/eddyops/eddy/cli/internal/inspect"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

func newTreeCommand(g *globalFlags) *cobra.Command {
	tree := &cobra.Command{Use: "tree", Short: "Print the resources reconciled by an Eddy object"}
	var compact bool
	var output string
	ks := &cobra.Command{
		Use:     "kustomization [name]",
		Aliases: []string{"ks"},
		Short:   "Print the resource inventory of a Kustomization",
		Example: `  # Print the resources managed by the root Kustomization
  eddy tree kustomization flux-system

  # Print only the Flux objects it manages
  eddy tree kustomization flux-system --compact`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return errors.New("kustomization name is required")
			}
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: use json or yaml, or leave it out for the tree", output)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			t, err := inspect.TreeWithOptions(ctx, c, "Kustomization", g.namespace, args[0], inspect.TreeOptions{NoHealth: true})
			if err != nil {
				return err
			}
			root := fromInspect(t, compact)
			var out []byte
			switch output {
			case "json":
				out, err = json.MarshalIndent(root, "", "  ")
			case "yaml":
				out, err = yaml.Marshal(root)
			default:
				out = []byte(root.print())
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return err
		},
	}
	ks.Flags().BoolVar(&compact, "compact", false, "list Flux resources only.")
	ks.Flags().StringVarP(&output, "output", "o", "", "the format in which the tree should be printed. can be 'json' or 'yaml'")
	tree.AddCommand(ks)
	return tree
}

// treeNode is one object of a tree and what it manages. Its JSON shape is
// flux's (cli-utils' ObjMetadata without tags: Namespace, Name, GroupKind).
type treeNode struct {
	Resource  ssa.ObjMeta `json:"resource"`
	Resources []*treeNode `json:"resources,omitempty"`
}

func (t *treeNode) add(m ssa.ObjMeta) *treeNode {
	n := &treeNode{Resource: m}
	t.Resources = append(t.Resources, n)
	return n
}

// print draws the tree as flux does: the root, then each child behind
// "├── " or "└── " (the last), indented by "│   " or "    ".
func (t *treeNode) print() string {
	var b strings.Builder
	b.WriteString(t.Resource.String() + "\n")
	t.printChildren(&b, "")
	return b.String()
}

func (t *treeNode) printChildren(b *strings.Builder, indent string) {
	for i, c := range t.Resources {
		last := i == len(t.Resources)-1
		mark, next := "├── ", "│   "
		if last {
			mark, next = "└── ", "    "
		}
		b.WriteString(indent + mark + c.Resource.String() + "\n")
		c.printChildren(b, indent+next)
	}
}

// compactGroup is flux's --compact filter: objects of the toolkit's groups.
const compactGroup = "toolkit.fluxcd.io"

// fromInspect is n as flux's tree, less (compact) the objects outside the
// toolkit's groups. Flux compatible (flux tree kustomization).
func fromInspect(n *inspect.Node, compact bool) *treeNode {
	t := &treeNode{Resource: n.Meta()}
	for _, c := range n.Children {
		if compact && !strings.Contains(c.Meta().GroupKind.Group, compactGroup) {
			continue
		}
		t.Resources = append(t.Resources, fromInspect(c, compact))
	}
	return t
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

func newGetCommand(g *globalFlags) *cobra.Command {
	var allNamespaces bool
	var output string
	get := &cobra.Command{
		Use:   "get",
		Short: "Show the status of sources, Kustomizations and HelmReleases",
	}
	get.PersistentFlags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the objects of all namespaces")
	get.PersistentFlags().StringVarP(&output, "output", "o", "table", "output format: table, wide (the table with a SHARD column: each object's sharding.fluxcd.io/key label), yaml or json")

	list := func(cmd *cobra.Command, args []string, obj client.ObjectList, rows func() []status.Row, table tablePrinter) error {
		if output != "table" && output != "wide" && output != "yaml" && output != "json" {
			return fmt.Errorf("--output %q: use table, wide, yaml or json", output)
		}
		c, ctx, cancel, opts, err := g.listing(cmd, allNamespaces)
		if err != nil {
			return err
		}
		defer cancel()
		if len(args) == 1 {
			opts = append(opts, client.MatchingFields{"metadata.name": args[0]})
		}
		if err := c.List(ctx, obj, opts...); err != nil {
			return err
		}
		if len(args) == 0 { // by name, it is shown
			if err := kinds.HideApplicationSources(obj); err != nil {
				return err
			}
		}
		rs := rows()
		if len(args) == 1 && len(rs) == 0 {
			gvk, _ := apiutil.GVKForObject(obj, c.Scheme())
			return fmt.Errorf("%s %q not found in namespace %s", strings.TrimSuffix(gvk.Kind, "List"), args[0], g.namespace)
		}
		if output != "table" && output != "wide" {
			return printObjects(cmd.OutOrStdout(), c.Scheme(), obj, output, len(args) == 1)
		}
		if len(rs) == 0 {
			gvk, _ := apiutil.GVKForObject(obj, c.Scheme())
			where := g.namespace + " namespace"
			if allNamespaces {
				where = "any namespace"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "no %s objects found in %s\n", strings.TrimSuffix(gvk.Kind, "List"), where)
			return nil
		}
		table(cmd.OutOrStdout(), rs, allNamespaces, output == "wide")
		return nil
	}

	// kindCmd is the `get` subcommand of kind k.
	kindCmd := func(k kinds.Kind) *cobra.Command {
		use, aliases := k.Use, []string(nil)
		if !k.Source && !k.Image {
			use, aliases = k.Plural, append([]string{k.Use}, k.Aliases...)
		}
		return &cobra.Command{
			Use: use + " [NAME]", Aliases: aliases, Short: "Show the status of " + k.PluralKind(),
			Long: k.GetLong, Example: k.GetExample, Args: cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				l := k.NewList()
				return list(cmd, args, l, func() []status.Row { return status.Rows(k, l, "") },
					func(w io.Writer, rs []status.Row, withNamespace, withShard bool) {
						status.Print(k, w, rs, withNamespace, withShard)
					})
			},
		}
	}
	sources := &cobra.Command{Use: "sources", Aliases: []string{"source"}, Short: "Show the status of sources"}
	images := &cobra.Command{Use: "images", Aliases: []string{"image"}, Short: "Show the status of image automation objects"}
	var srcKinds, imageKinds []kinds.Kind
	for _, k := range kinds.Flux {
		switch {
		case k.Source:
			sources.AddCommand(kindCmd(k))
			srcKinds = append(srcKinds, k)
		case k.Image:
			images.AddCommand(kindCmd(k))
			imageKinds = append(imageKinds, k)
		default:
			get.AddCommand(kindCmd(k))
		}
	}
	images.AddCommand(g.getAllCommand(&allNamespaces, &output, imageKinds, "Show the status of all image automation objects", "",
		"  eddy get images all --namespace=flux-system\n  eddy get images all --all-namespaces"))
	sources.AddCommand(g.getAllCommand(&allNamespaces, &output, srcKinds, "Show the status of all sources", "",
		"  eddy get sources all\n  eddy get sources all -A"))
	get.AddCommand(images, sources, newGetAppsCommand(g, &allNamespaces, &output))
	get.AddCommand(g.getAllCommand(&allNamespaces, &output, kinds.Flux, "Show the status of all objects",
		"Show the status of every kind in a table of its own, each name prefixed with its kind; "+
			"kinds without objects, or whose CRD is not installed, are left out.",
		"  eddy get all\n  eddy get all -A"))
	return get
}

// getAllCommand is a `get … all` command: the tables of kinds ks (see
// printAll), with the get command's -A and -o.
func (g *globalFlags) getAllCommand(allNamespaces *bool, output *string, ks []kinds.Kind, short, long, example string) *cobra.Command {
	return &cobra.Command{
		Use: "all", Short: short, Long: long, Example: example, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.getAll(cmd, *allNamespaces, *output == "wide", ks)
		},
	}
}

// listing returns what listing objects takes: a client, a context bounded
// by --timeout (to cancel) and the options that select --namespace, or
// every namespace when allNamespaces.
func (g *globalFlags) listing(cmd *cobra.Command, allNamespaces bool) (client.Client, context.Context, context.CancelFunc, []client.ListOption, error) {
	c, err := g.client()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, cancel := g.ctx(cmd)
	var opts []client.ListOption
	if !allNamespaces {
		opts = append(opts, client.InNamespace(g.namespace))
	}
	return c, ctx, cancel, opts, nil
}

// tablePrinter prints rows as one of flux's `get` tables.
// withShard (-o wide) adds the SHARD column.
type tablePrinter func(w io.Writer, rs []status.Row, withNamespace, withShard bool)

// getAll lists kinds as `flux get all` does (see printAll).
func (g *globalFlags) getAll(cmd *cobra.Command, allNamespaces, withShard bool, ks []kinds.Kind) error {
	c, ctx, cancel, opts, err := g.listing(cmd, allNamespaces)
	if err != nil {
		return err
	}
	defer cancel()
	return printAll(ctx, c, cmd.OutOrStdout(), ui.New(cmd.ErrOrStderr()), ks, allNamespaces, withShard, opts...)
}

// printAll prints, as `flux get all`, a table per kind with objects (each
// followed by an empty line) to out, names prefixed with the kind in lower
// case, application-controller's source objects left out. A kind whose CRD is missing is skipped; another list error is a
// failure line on u, and the next kind is listed.
func printAll(ctx context.Context, c client.Client, out io.Writer, u *ui.UI, ks []kinds.Kind, allNamespaces, withShard bool, opts ...client.ListOption) error {
	for _, k := range ks {
		l := k.NewList()
		if err := c.List(ctx, l, opts...); err != nil {
			if !apimeta.IsNoMatchError(err) {
				u.Failure("%s", err)
			}
			continue
		}
		if err := kinds.HideApplicationSources(l); err != nil {
			return err
		}
		rs := status.Rows(k, l, strings.ToLower(k.Kind)+"/")
		if len(rs) == 0 {
			continue
		}
		status.Print(k, out, rs, allNamespaces, withShard)
		fmt.Fprintln(out)
	}
	return nil
}

// printObjects writes list as YAML or JSON: the one object when single, else
// a kubectl-style `kind: List`. Objects carry apiVersion and kind.
func printObjects(w io.Writer, scheme *runtime.Scheme, list client.ObjectList, format string, single bool) error {
	objs, err := apimeta.ExtractList(list)
	if err != nil {
		return err
	}
	var items []any
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			return err
		}
		o.GetObjectKind().SetGroupVersionKind(gvk)
		if m, ok := o.(metav1.Object); ok {
			m.SetManagedFields(nil) // as kubectl, without --show-managed-fields
		}
		items = append(items, o)
	}
	var doc any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	if single && len(items) == 1 {
		doc = items[0]
	}
	var data []byte
	if format == "json" {
		data, err = json.MarshalIndent(doc, "", "    ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(doc)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

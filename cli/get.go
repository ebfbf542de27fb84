package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

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

	// kindTable is one `get` subcommand: its list type and the list's
	// rows, printed by table.
	kindTable := func(use string, aliases []string, short, example string, rows listRows, table tablePrinter) *cobra.Command {
		return &cobra.Command{
			Use: use + " [NAME]", Aliases: aliases, Short: short, Example: example,
			Args: cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				l, r := rows()
				return list(cmd, args, l, r, table)
			},
		}
	}
	// kind is a kindTable with flux's table of revisions.
	kind := func(use string, aliases []string, short, example string, rows listRows) *cobra.Command {
		return kindTable(use, aliases, short, example, rows, status.PrintTable)
	}
	sources := &cobra.Command{Use: "sources", Aliases: []string{"source"}, Short: "Show the status of sources"}
	sources.AddCommand(
		kind("git", nil, "Show the status of GitRepositories", "  eddy get sources git\n  eddy get sources git flux-system -o yaml", gitRepositoryRows),
		kind("oci", nil, "Show the status of OCIRepositories", "  eddy get sources oci\n  eddy get sources oci --all-namespaces", ociRepositoryRows),
		kind("helm", nil, "Show the status of HelmRepositories", "  eddy get sources helm\n  eddy get sources helm -A", helmRepositoryRows),
		kind("chart", nil, "Show the status of HelmCharts", "  eddy get sources chart\n  eddy get sources chart flux-system-podinfo -o yaml", helmChartRows),
		&cobra.Command{
			Use: "all", Short: "Show the status of all sources", Args: cobra.NoArgs,
			Example: "  eddy get sources all\n  eddy get sources all -A",
			RunE: func(cmd *cobra.Command, _ []string) error {
				return g.getAll(cmd, allNamespaces, output == "wide", getAllKinds[:4])
			},
		})
	get.AddCommand(sources)
	get.AddCommand(kind("kustomizations", []string{"kustomization", "ks"}, "Show the status of Kustomizations",
		"  eddy get kustomizations\n  eddy get ks -A\n  eddy get ks flux-system -o json", kustomizationRows))
	hr := kind("helmreleases", []string{"helmrelease", "hr"}, "Show the status of HelmReleases",
		"  eddy get helmreleases\n  eddy get hr -A\n  eddy get hr podinfo -o yaml", helmReleaseRows)
	hr.Long = "Show the status of HelmReleases; REVISION is the chart version of the newest release (else the one last attempted), as flux shows it."
	get.AddCommand(hr)
	get.AddCommand(
		kindTable("receivers", []string{"receiver"}, "Show the status of Receivers", "  eddy get receivers\n  eddy get receiver github -o yaml",
			receiverRows, status.PrintSuspendedTable),
		kindTable("alert-providers", []string{"alert-provider"}, "Show the status of Providers", "  eddy get alert-providers -A",
			providerRows, status.PrintReadyTable),
		kindTable("alerts", []string{"alert"}, "Show the status of Alerts", "  eddy get alerts -n apps",
			alertRows, status.PrintSuspendedTable),
		&cobra.Command{
			Use: "all", Short: "Show the status of all objects", Args: cobra.NoArgs,
			Long: "Show the status of every kind in a table of its own, each name prefixed with its kind; " +
				"kinds without objects, or whose CRD is not installed, are left out.",
			Example: "  eddy get all\n  eddy get all -A",
			RunE: func(cmd *cobra.Command, _ []string) error {
				return g.getAll(cmd, allNamespaces, output == "wide", getAllKinds)
			},
		})
	return get
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

// listRows returns a new list of one kind and the rows of what it holds
// once listed.
type listRows func() (client.ObjectList, func() []status.Row)

// rowsOf is the listRows of the list type L (a pointer to T) whose
// rows rows makes.
func rowsOf[T any, L interface {
	*T
	client.ObjectList
}](rows func(L, string) []status.Row) listRows {
	return func() (client.ObjectList, func() []status.Row) {
		l := L(new(T))
		return l, func() []status.Row { return rows(l, "") }
	}
}

var (
	ociRepositoryRows  = rowsOf(status.OCIRepositoryRows)
	gitRepositoryRows  = rowsOf(status.GitRepositoryRows)
	helmRepositoryRows = rowsOf(status.HelmRepositoryRows)
	helmChartRows      = rowsOf(status.HelmChartRows)
	kustomizationRows  = rowsOf(status.KustomizationRows)
	helmReleaseRows    = rowsOf(status.HelmReleaseRows)
	receiverRows       = rowsOf(status.ReceiverRows)
	providerRows       = rowsOf(status.ProviderRows)
	alertRows          = rowsOf(status.AlertRows)
)

// getAllKinds are the kinds of `get all` in flux's order: the sources
// first (what `get sources all` shows), then the others.
var getAllKinds = []getKind{
	{ociRepositoryRows, status.PrintTable},
	{gitRepositoryRows, status.PrintTable},
	{helmRepositoryRows, status.PrintTable},
	{helmChartRows, status.PrintTable},
	{helmReleaseRows, status.PrintTable},
	{kustomizationRows, status.PrintTable},
	{receiverRows, status.PrintSuspendedTable},
	{providerRows, status.PrintReadyTable},
	{alertRows, status.PrintSuspendedTable},
}

// getKind is one kind of `get all`: its rows and table.
type getKind struct {
	rows  listRows
	table tablePrinter
}

// getAll lists kinds as `flux get all` does (see printAll).
func (g *globalFlags) getAll(cmd *cobra.Command, allNamespaces, withShard bool, kinds []getKind) error {
	c, ctx, cancel, opts, err := g.listing(cmd, allNamespaces)
	if err != nil {
		return err
	}
	defer cancel()
	return printAll(ctx, c, cmd.OutOrStdout(), ui.New(cmd.ErrOrStderr()), kinds, allNamespaces, withShard, opts...)
}

// printAll prints, as `flux get all`, a table per kind with objects (each
// followed by an empty line) to out, names prefixed with the kind in lower
// case. A kind whose CRD is missing is skipped; another list error is a
// failure line on u, and the next kind is listed.
func printAll(ctx context.Context, c client.Client, out io.Writer, u *ui.UI, kinds []getKind, allNamespaces, withShard bool, opts ...client.ListOption) error {
	for _, k := range kinds {
		l, rows := k.rows()
		if err := c.List(ctx, l, opts...); err != nil {
			if !apimeta.IsNoMatchError(err) {
				u.Failure("%s", err)
			}
			continue
		}
		rs := rows()
		if len(rs) == 0 {
			continue
		}
		gvk, err := apiutil.GVKForObject(l, c.Scheme())
		if err != nil {
			return err
		}
		prefix := strings.ToLower(strings.TrimSuffix(gvk.Kind, "List")) + "/"
		for i := range rs {
			rs[i].Name = prefix + rs[i].Name
		}
		k.table(out, rs, allNamespaces, withShard)
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

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/app"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// appPollInterval is how often the app commands read an Application while
// they wait.
const appPollInterval = 500 * time.Millisecond

// newGetAppsCommand is `get applications`: argocd app list's table of the
// Applications of -n (argocd when not given) or of every namespace with -A.
func newGetAppsCommand(g *globalFlags, allNamespaces *bool, output *string) *cobra.Command {
	k, _ := kinds.ByKind(argov1.ApplicationKind)
	cmd := &cobra.Command{
		Use: k.Plural + " [NAME]", Aliases: append([]string{k.Use}, k.Aliases...), Args: cobra.MaximumNArgs(1),
		Short: "Show Argo CD Applications as argocd app list does",
		Long:  k.GetLong, Example: k.GetExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			if *output != "table" && *output != "wide" && *output != "yaml" && *output != "json" {
				return fmt.Errorf("--output %q: use table, wide, yaml or json", *output)
			}
			c, ctx, cancel, _, err := g.listing(cmd, *allNamespaces)
			if err != nil {
				return err
			}
			defer cancel()
			ns := appNamespace(cmd, g)
			var opts []client.ListOption
			if !*allNamespaces {
				opts = append(opts, client.InNamespace(ns))
			}
			if len(args) == 1 {
				ns, name := app.ParseQualifiedName(args[0], ns)
				opts = append(opts, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
			}
			l := &argov1.ApplicationList{}
			if err := c.List(ctx, l, opts...); err != nil {
				if apimeta.IsNoMatchError(err) {
					return errors.New("the Application CRD (argoproj.io/v1alpha1) is not installed")
				}
				return err
			}
			if len(args) == 1 && len(l.Items) == 0 {
				return fmt.Errorf("Application %q not found in namespace %s", args[0], ns)
			}
			if *output == "yaml" || *output == "json" {
				return printObjects(cmd.OutOrStdout(), c.Scheme(), l, *output, len(args) == 1)
			}
			if len(l.Items) == 0 {
				where := ns + " namespace"
				if *allNamespaces {
					where = "any namespace"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "no Application objects found in %s\n", where)
				return nil
			}
			return app.PrintList(cmd.OutOrStdout(), l.Items, *output == "wide")
		},
	}
	// Their own -n and -o, shadowing the inherited ones, so that the help
	// shows what they mean for Applications.
	bindAppNamespace(cmd.Flags())
	cmd.Flags().StringVarP(output, "output", "o", "table", "output format: table, wide (the table with REPO, PATH and TARGET columns: "+
		"each Application's source repository, path and target revision), yaml or json")
	return cmd
}

// bindAppNamespace adds the app commands' -n, whose default is Argo CD's
// namespace rather than the global flux-system.
func bindAppNamespace(fs *pflag.FlagSet) {
	fs.StringP("namespace", "n", app.DefaultNamespace, "the namespace of the Applications (Argo CD's namespace by default)")
}

// appNamespace is the app command's -n (bindAppNamespace): as given, else
// Argo CD's namespace.
func appNamespace(cmd *cobra.Command, _ *globalFlags) string {
	if f := cmd.Flags().Lookup("namespace"); f != nil {
		return f.Value.String()
	}
	return app.DefaultNamespace
}

func newAppCommand(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use: "app", Aliases: []string{"application"},
		Short: "Show, diff, sync and roll back Argo CD Applications as the argocd CLI does",
		Long: "Show, diff, sync and roll back Argo CD Applications (argoproj.io/v1alpha1) with the argocd CLI's verbs, " +
			"talking to the Kubernetes API as kubectl does (no Argo CD API server). NAME is a name in -n " +
			"(argocd when not given) or namespace/name.",
	}
	bindAppNamespace(cmd.PersistentFlags())
	cmd.AddCommand(newAppGetCommand(g), newAppDiffCommand(g), newAppHistoryCommand(g))
	cmd.AddCommand(newAppSyncCommand(g), newAppRollbackCommand(g), newAppWaitCommand(g))
	return cmd
}

// appSession is what an app command works with: a client, a context bounded
// by --timeout, the Application's key and the command's UI on stdout.
type appSession struct {
	c   client.Client
	ctx context.Context
	key types.NamespacedName
	u   *ui.UI
	// requested is the Application as an operation request wrote it.
	requested *argov1.Application
}

// openApp starts an appSession for the Application named arg; the returned
// function ends it.
func (g *globalFlags) openApp(cmd *cobra.Command, arg string) (*appSession, func(), error) {
	c, err := g.client()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := g.ctx(cmd)
	ns, name := app.ParseQualifiedName(arg, appNamespace(cmd, g))
	return &appSession{c: c, ctx: ctx, key: types.NamespacedName{Namespace: ns, Name: name}, u: ui.New(cmd.OutOrStdout())}, cancel, nil
}

// readApp reads the Application named arg, warning on stderr when it was
// never reconciled (warnNotReconciled), as get and history show it.
func (g *globalFlags) readApp(cmd *cobra.Command, arg string) (*argov1.Application, error) {
	s, done, err := g.openApp(cmd, arg)
	if err != nil {
		return nil, err
	}
	defer done()
	a, err := s.get(s.ctx)
	if err != nil {
		return nil, err
	}
	warnNotReconciled(ui.New(cmd.ErrOrStderr()), a)
	return a, nil
}

// get reads the Application; NotFound worded with its name and namespace.
func (s *appSession) get(ctx context.Context) (*argov1.Application, error) {
	a := &argov1.Application{}
	if err := s.c.Get(ctx, s.key, a); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("Application %s not found in namespace %s", s.key.Name, s.key.Namespace)
		}
		if apimeta.IsNoMatchError(err) {
			return nil, errors.New("the Application CRD (argoproj.io/v1alpha1) is not installed")
		}
		return nil, err
	}
	return a, nil
}

func newAppGetCommand(g *globalFlags) *cobra.Command {
	var output string
	var showOperation bool
	cmd := &cobra.Command{
		Use: "get NAME", Short: "Show an Application's summary, conditions and resources as argocd app get",
		Args: cobra.ExactArgs(1), Example: "  eddy app get guestbook\n  eddy app get guestbook --show-operation\n  eddy app get team-a/guestbook -o yaml",
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "wide" && output != "yaml" && output != "json" {
				return fmt.Errorf("--output %q: use wide, yaml or json", output)
			}
			a, err := g.readApp(cmd, args[0])
			if err != nil {
				return err
			}
			if output != "wide" {
				return printObjects(cmd.OutOrStdout(), scheme.New(), &argov1.ApplicationList{Items: []argov1.Application{*a}}, output, true)
			}
			return app.PrintApp(cmd.OutOrStdout(), a, showOperation, time.Now())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "wide", "output format: wide, yaml or json")
	cmd.Flags().BoolVar(&showOperation, "show-operation", false, "show the last operation's result")
	return cmd
}

func newAppHistoryCommand(g *globalFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use: "history NAME", Short: "Show an Application's sync history as argocd app history",
		Args: cobra.ExactArgs(1), Example: "  eddy app history guestbook\n  eddy app history guestbook -o id",
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "wide" && output != "id" {
				return fmt.Errorf("--output %q: use wide or id", output)
			}
			a, err := g.readApp(cmd, args[0])
			if err != nil {
				return err
			}
			if output == "id" {
				for _, h := range a.Status.History {
					fmt.Fprintln(cmd.OutOrStdout(), h.ID)
				}
				return nil
			}
			return app.PrintHistory(cmd.OutOrStdout(), a.Status.History)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "wide", "output format: wide or id")
	return cmd
}

func newAppDiffCommand(g *globalFlags) *cobra.Command {
	var exitCode bool
	cmd := &cobra.Command{
		Use:   "diff NAME",
		Short: "Show what differs between Git and the live objects of an Application",
		Long: "Show, per object and field, what differs between Git and the live objects of an Application, " +
			"with the field manager that last changed each field: the pending diff application-controller publishes " +
			"(annotation eddy.dev/diff). Secret values are masked. Exit codes as argocd app diff: " +
			"0 when nothing differs, 1 when something does, 2 on errors, among them an Application whose last comparison " +
			"failed (its ComparisonError or InvalidSpecError is printed) or that was never reconciled.",
		Args: cobra.ExactArgs(1), Example: "  eddy app diff guestbook",
		RunE: func(cmd *cobra.Command, args []string) error {
			s, done, err := g.openApp(cmd, args[0])
			if err != nil {
				return &exitError{2, err}
			}
			defer done()
			a, err := s.get(s.ctx)
			if err != nil {
				return &exitError{2, err}
			}
			if app.NeverReconciled(a) {
				return &exitError{2, app.NotReconciledError(a)}
			}
			if failure := app.ComparisonFailure(a); failure != "" {
				return &exitError{2, fmt.Errorf("cannot diff %s: the last comparison failed: %s", app.QualifiedName(a), failure)}
			}
			objs, err := app.PendingDiff(a)
			if err != nil {
				return &exitError{2, err}
			}
			app.PrintDiff(cmd.OutOrStdout(), objs)
			if len(objs) > 0 && exitCode {
				if len(objs) == 1 {
					return &exitError{1, errors.New("1 object differs from Git")}
				}
				return &exitError{1, fmt.Errorf("%d objects differ from Git", len(objs))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&exitCode, "exit-code", true, "exit with 1 when something differs")
	return cmd
}

// kubeconfigUser is the user of the kubeconfig's current context (after
// --context), the initiator Argo CD records; "eddy" when there is none.
func (g *globalFlags) kubeconfigUser() string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if g.kubeconfig != "" {
		rules.ExplicitPath = g.kubeconfig
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.context}).RawConfig()
	if err != nil {
		return "eddy"
	}
	name := firstNonEmpty(g.context, raw.CurrentContext)
	if ctx, ok := raw.Contexts[name]; ok && ctx.AuthInfo != "" {
		return ctx.AuthInfo
	}
	return "eddy"
}

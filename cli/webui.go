package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/cli/internal/webui"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func newUICommand(g *globalFlags) *cobra.Command {
	opts := webui.Options{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a web UI of the cluster's GitOps state, acting with your credentials",
		Long: `Serve a web UI of the cluster's Flux objects: overview, object pages with conditions,
history, events and the inventory tree, drift, the dependency graph, live YAML and the diff of a
Kustomization. It reads and acts with your kubeconfig's credentials, so it shows what your RBAC
allows: every namespace you may read each kind in, or only the namespace of -n when -n is
given (for a user who may not list namespaces; without -n, the global default flux-system does
not apply). It listens on loopback unless told otherwise; a non-loopback --listen needs --auth-token
or TLS (then, without --auth-token, a random token is required and printed in the address).`,
		Example: "  eddy ui\n  eddy ui --read-only --listen 127.0.0.1:9090",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			opts.Config, opts.Context, opts.Log = cfg, g.currentContext(), cmd.ErrOrStderr()
			if cmd.Flags().Changed("namespace") { // else every namespace the user may read
				opts.Namespaces = []string{g.namespace}
			}
			srv, err := webui.Listen(opts)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// client-go's own log would repeat each watch failure on the
			// terminal; the server says once that the cluster went away.
			klog.LogToStderr(false)
			klog.SetOutput(io.Discard)
			u := ui.New(cmd.OutOrStdout())
			done := u.Spin("reading the cluster's Flux objects")
			err = srv.Start(ctx)
			done()
			if errors.Is(err, context.Canceled) {
				return nil // Ctrl-C while it started
			}
			if err != nil {
				return err
			}
			url := srv.URL()
			if opts.AuthToken != "" {
				url += "?token=<your --auth-token>"
			}
			if hidden := srv.Hidden(); len(hidden) > 0 {
				hint := ""
				if len(opts.Namespaces) == 0 {
					hint = "; if you may read them in some namespaces only, pass -n NAMESPACE"
				}
				u.Warning("not listed (not installed, or not readable with your credentials): %s%s", strings.Join(hidden, ", "), hint)
			}
			u.Success("eddy ui: %s (Ctrl-C stops it)", url)
			return srv.Serve(ctx)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Listen, "listen", webui.DefaultListen, "host:port to serve on (port 0: a free port)")
	fs.BoolVar(&opts.ReadOnly, "read-only", false, "no actions (reconcile, suspend, resume, sync)")
	fs.StringVar(&opts.AuthToken, "auth-token", "", "require this token (open the page once with ?token=...); needed for a non-loopback --listen without TLS, generated (and printed in the address) with TLS")
	fs.StringVar(&opts.TLSCertFile, "tls-cert-file", "", "serve HTTPS with this certificate (PEM)")
	fs.StringVar(&opts.TLSKeyFile, "tls-key-file", "", "the certificate's private key (PEM)")
	return cmd
}

// currentContext names the kubeconfig context in use, for display.
func (g *globalFlags) currentContext() string {
	if g.context != "" {
		return g.context
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if g.kubeconfig != "" {
		rules.ExplicitPath = g.kubeconfig
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

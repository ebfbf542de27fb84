package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"os"
	"time"

	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// globalFlags are kubectl's and flux's connection flags.
type globalFlags struct {
	kubeconfig string
	context    string
	namespace  string
	timeout    time.Duration
}

func (g *globalFlags) bind(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else a running eddy dev environment)")
	fs.StringVar(&g.context, "context", "", "kubeconfig context to use")
	fs.StringVarP(&g.namespace, "namespace", "n", "flux-system", "the namespace of the objects")
	fs.DurationVar(&g.timeout, "timeout", 5*time.Minute, "how long to wait for an operation")
}

// restConfig loads the client configuration the way kubectl does. With no
// configuration at all it uses the running `eddy dev` environment, if any.
func (g *globalFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if g.kubeconfig != "" {
		rules.ExplicitPath = g.kubeconfig
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.context})
	cfg, err := loader.ClientConfig()
	// The eddy dev fallback only when nothing names a kubeconfig: an explicit
	// $KUBECONFIG that does not exist must not quietly reach another cluster.
	if err != nil && clientcmd.IsEmptyConfig(err) && g.kubeconfig == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if dir, derr := dev.DefaultStateDir(); derr == nil {
			if s := dev.Running(dir); s != nil && s.Kubeconfig != "" {
				return clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
			}
		}
		return nil, errors.New("no cluster configured: pass --kubeconfig, set KUBECONFIG, or start one with `eddy dev up`")
	}
	if err != nil && clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no cluster configured: the kubeconfig %q does not exist or names no cluster", firstNonEmpty(g.kubeconfig, os.Getenv(clientcmd.RecommendedConfigPathEnvVar)))
	}
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

func (g *globalFlags) client() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

// ctx bounds a command by --timeout.
func (g *globalFlags) ctx(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), g.timeout)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

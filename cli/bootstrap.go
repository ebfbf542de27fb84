package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/eddyops/eddy/cli/internal/bootstrap"
	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// bootstrapFlags are flux bootstrap's persistent flags (flux2:cmd/flux/bootstrap.go)
// that Eddy supports.
type bootstrapFlags struct {
	version                        string
	components, componentsExtra    []string
	registry                       string
	branch                         string
	watchAllNamespaces             bool
	networkPolicy                  bool
	tokenAuth                      bool
	logLevel                       string
	clusterDomain                  string
	tolerationKeys                 []string
	shards                         []string
	secretName                     string
	sshHostname                    string
	caFile                         string
	privateKeyFile                 string
	authorName, authorEmail        string
	commitMessageAppendix          string
	sshKeyAlgorithm, sshECDSACurve string
}

func newBootstrapCommand(g *globalFlags) *cobra.Command {
	b := &bootstrapFlags{}
	def := install.DefaultOptions(version)
	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Deploy Eddy on a cluster the GitOps way",
		Long: "The bootstrap sub-commands push Eddy's manifests to a Git repository\n" +
			"and deploy Eddy on the cluster, which then syncs itself from that repository.",
	}
	fs := cmd.PersistentFlags()
	fs.StringVarP(&b.version, "version", "v", version, "Eddy version of the components")
	fs.StringSliceVar(&b.components, "components", def.Components, "list of components, accepts comma-separated values")
	fs.StringSliceVar(&b.componentsExtra, "components-extra", nil, "list of components in addition to those supplied or defaulted, accepts comma-separated values: "+
		install.ImageReflectorController+", "+install.ImageAutomationController+" (Flux's image automation), "+install.ApplicationController+" (Argo CD's Applications), "+install.SourceWatcher+" (ArtifactGenerators)")
	fs.StringVar(&b.registry, "registry", def.Registry, "container registry where the Eddy controller images are published")
	fs.StringVar(&b.branch, "branch", "main", "Git branch")
	fs.BoolVar(&b.watchAllNamespaces, "watch-all-namespaces", true, "watch for custom resources in all namespaces, if set to false it will only watch the namespace where the controllers are installed")
	fs.BoolVar(&b.networkPolicy, "network-policy", true, "setup Kubernetes network policies to deny ingress access to the controllers from other namespaces")
	fs.BoolVar(&b.tokenAuth, "token-auth", false, "when enabled, the password or personal access token will be used instead of an SSH deploy key")
	fs.StringVar(&b.logLevel, "log-level", "info", "log level, available options are: (debug, info, error)")
	fs.StringVar(&b.clusterDomain, "cluster-domain", def.ClusterDomain, "internal cluster domain")
	fs.StringSliceVar(&b.tolerationKeys, "toleration-keys", nil, "list of toleration keys used to schedule the controller pods onto nodes with matching taints")
	fs.StringSliceVar(&b.shards, "shards", nil, "shard names, comma-separated: a source-, kustomize- and helm-controller Deployment per shard, as eddy install --shards")
	fs.StringVar(&b.secretName, "secret-name", "flux-system", "name of the secret the sync credentials can be found in or stored to")
	fs.StringVar(&b.sshKeyAlgorithm, "ssh-key-algorithm", "ecdsa", "SSH public key algorithm (ecdsa)")
	fs.StringVar(&b.sshECDSACurve, "ssh-ecdsa-curve", "p384", "SSH ECDSA public key curve (p384)")
	fs.StringVar(&b.sshHostname, "ssh-hostname", "", "SSH hostname, to be used when the SSH host differs from the HTTPS one")
	fs.StringVar(&b.caFile, "ca-file", "", "path to TLS CA file used for validating self-signed certificates")
	fs.StringVar(&b.privateKeyFile, "private-key-file", "", "path to a private key file used for authenticating to the Git SSH server")
	fs.StringVar(&b.authorName, "author-name", "Eddy", "author name for Git commits")
	fs.StringVar(&b.authorEmail, "author-email", "", "author email for Git commits")
	fs.StringVar(&b.commitMessageAppendix, "commit-message-appendix", "", "string to add to the commit messages, e.g. '[ci skip]'")
	cmd.AddCommand(newBootstrapGitCommand(g, b), newBootstrapGitHubCommand(g, b))
	return cmd
}

// validate checks the flags shared by the sub-commands.
func (b *bootstrapFlags) validate() error {
	all := append(append([]string(nil), b.components...), b.componentsExtra...)
	for _, req := range []string{"source-controller", "kustomize-controller"} {
		if !contains(all, req) {
			return fmt.Errorf("component %s is required", req)
		}
	}
	if b.sshKeyAlgorithm != "ecdsa" || strings.ToLower(b.sshECDSACurve) != "p384" {
		return errors.New("only --ssh-key-algorithm=ecdsa with --ssh-ecdsa-curve=p384 is supported")
	}
	switch b.logLevel {
	case "debug", "info", "error":
	default:
		return fmt.Errorf("--log-level %q is not one of debug, info, error", b.logLevel)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (b *bootstrapFlags) installOptions(namespace string) install.Options {
	o := install.DefaultOptions(b.version)
	o.Namespace = namespace
	o.Components, o.ComponentsExtra = b.components, b.componentsExtra
	o.Registry = b.registry
	o.WatchAllNamespaces, o.NetworkPolicy = b.watchAllNamespaces, b.networkPolicy
	o.LogLevel, o.ClusterDomain, o.TolerationKeys = b.logLevel, b.clusterDomain, b.tolerationKeys
	o.Shards = b.shards
	return o
}

// options fills what both sub-commands share.
func (b *bootstrapFlags) options(g *globalFlags, path string, interval time.Duration) (bootstrap.Options, error) {
	p, err := bootstrap.CleanPath(path)
	if err != nil {
		return bootstrap.Options{}, err
	}
	o := bootstrap.Options{
		Namespace: g.namespace, Path: p, Interval: interval, SecretName: b.secretName,
		Author:         object.Signature{Name: b.authorName, Email: b.authorEmail},
		CommitAppendix: b.commitMessageAppendix,
		Install:        b.installOptions(g.namespace),
		Timeout:        g.timeout,
	}
	o.Remote.Branch = b.branch
	if b.caFile != "" {
		ca, err := os.ReadFile(b.caFile)
		if err != nil {
			return o, fmt.Errorf("unable to read TLS CA file: %w", err)
		}
		o.Remote.CABundle = ca
	}
	return o, nil
}

// runBootstrap runs bootstrap, bounded by --timeout.
func runBootstrap(cmd *cobra.Command, g *globalFlags, u *ui.UI, o bootstrap.Options) error {
	c, err := reachableClient(g)
	if err != nil {
		return err
	}
	ctx, cancel := g.ctx(cmd)
	defer cancel()
	return bootstrap.Run(ctx, u, c, o)
}

// syncFlags are the flags of what the cluster syncs, common to the
// bootstrap commands.
type syncFlags struct {
	interval time.Duration
	path     string
}

func (f *syncFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.interval, "interval", time.Minute, "sync interval")
	fs.StringVar(&f.path, "path", "", "path relative to the repository root, when specified the cluster sync will be scoped to this path")
}

type gitFlags struct {
	syncFlags
	url               string
	username          string
	password          string
	silent            bool
	allowInsecureHTTP bool
	withBearerToken   bool
}

func newBootstrapGitCommand(g *globalFlags, b *bootstrapFlags) *cobra.Command {
	f := &gitFlags{}
	cmd := &cobra.Command{
		Use:   "git",
		Short: "Deploy Eddy on a cluster connected to a Git repository",
		Long: "The bootstrap git command commits Eddy's manifests to the branch of a Git repository,\n" +
			"and then configures the target cluster to synchronize with that repository.\n" +
			"If the components are present on the cluster, bootstrap upgrades them through Git when needed.",
		Example: "  # HTTPS with a username and password (or token) that the cluster also uses\n" +
			"  eddy bootstrap git --url=https://example.com/fleet.git --username=me --password=<token> --token-auth --path=clusters/my-cluster\n\n" +
			"  # SSH with an existing private key\n" +
			"  eddy bootstrap git --url=ssh://git@example.com/fleet.git --private-key-file=<path/to/private.key> --path=clusters/my-cluster\n\n" +
			"  # SSH with a generated deploy key (printed for you to add to the repository) and your SSH agent\n" +
			"  eddy bootstrap git --url=ssh://git@example.com/fleet.git --path=clusters/my-cluster",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u := ui.New(cmd.OutOrStdout())
			o, err := f.options(cmd, g, b, u)
			if err != nil {
				return err
			}
			return runBootstrap(cmd, g, u, o)
		},
	}
	fs := cmd.Flags()
	f.register(fs)
	fs.StringVar(&f.url, "url", "", "Git repository URL")
	fs.StringVarP(&f.username, "username", "u", "git", "basic authentication username")
	fs.StringVarP(&f.password, "password", "p", "", "basic authentication password (default $GIT_PASSWORD)")
	fs.BoolVarP(&f.silent, "silent", "s", false, "assumes the deploy key is already setup, skips confirmation")
	fs.BoolVar(&f.allowInsecureHTTP, "allow-insecure-http", false, "allows insecure HTTP connections")
	fs.BoolVar(&f.withBearerToken, "with-bearer-token", false, "use password as bearer token for Authorization header")
	return cmd
}

// options maps the flags to bootstrap options as flux bootstrap git does:
// with --token-auth the cluster uses the same HTTP(S) credentials, else
// an SSH deploy key (from --private-key-file, or generated and shown for
// the user to add) on the ssh:// form of the URL.
func (f *gitFlags) options(cmd *cobra.Command, g *globalFlags, b *bootstrapFlags, u *ui.UI) (bootstrap.Options, error) {
	if f.withBearerToken {
		b.tokenAuth = true
	}
	if f.password == "" {
		f.password = os.Getenv("GIT_PASSWORD")
	}
	if err := b.validate(); err != nil {
		return bootstrap.Options{}, err
	}
	if f.url == "" {
		return bootstrap.Options{}, errors.New("--url is required, e.g. --url=https://example.com/fleet.git")
	}
	if b.tokenAuth && f.password == "" {
		return bootstrap.Options{}, errors.New("--token-auth needs the password or token: pass --password or set GIT_PASSWORD")
	}
	repoURL, err := url.Parse(f.url)
	if err != nil || repoURL.Host == "" {
		return bootstrap.Options{}, fmt.Errorf("--url %q is not a repository URL: use ssh://, https:// or http://", bootstrap.RedactURL(f.url))
	}
	switch repoURL.Scheme {
	case "http":
		if !f.allowInsecureHTTP {
			return bootstrap.Options{}, errors.New("scheme http is insecure, pass --allow-insecure-http=true to allow it")
		}
	case "https", "ssh":
	default:
		return bootstrap.Options{}, fmt.Errorf("scheme %q is not supported: use ssh://, https:// or http://", repoURL.Scheme)
	}
	o, err := b.options(g, f.path, f.interval)
	if err != nil {
		return o, err
	}
	o.Remote.URL = f.url
	if repoURL.Scheme == "ssh" {
		o.Remote.Password = f.password
		if b.privateKeyFile != "" {
			if o.Remote.PrivateKey, err = os.ReadFile(b.privateKeyFile); err != nil {
				return o, fmt.Errorf("failed to open private key file: %w", err)
			}
		}
	} else if f.withBearerToken {
		o.Remote.BearerToken = f.password
	} else {
		o.Remote.Username, o.Remote.Password = f.username, f.password
	}

	sync := *repoURL
	if b.tokenAuth {
		if f.withBearerToken {
			o.Secret.BearerToken = f.password
		} else {
			o.Secret.Username, o.Secret.Password = f.username, f.password
		}
		o.Secret.CACrt = o.Remote.CABundle
		if sync.Scheme != "https" && sync.Scheme != "http" {
			sync.Host = sync.Hostname()
		}
		sync.User = nil
		if !f.allowInsecureHTTP {
			sync.Scheme = "https"
		}
	} else {
		if sync.User == nil || f.username != "git" {
			sync.User = url.User(f.username)
		}
		sync.Scheme = "ssh"
		if b.sshHostname != "" {
			sync.Host = b.sshHostname
		}
		o.Secret.Password = f.password
		if b.privateKeyFile != "" {
			if o.Secret.KeyPair, err = bootstrap.LoadKeyPair(o.Remote.PrivateKey, f.password); err != nil {
				return o, err
			}
		} else {
			o.GenerateKey = true
		}
		o.KnownHostsFrom = sync.Host
		if repoURL.Scheme == "ssh" && o.Secret.KeyPair != nil {
			// Clone with the key the cluster gets, pinned to the scanned host key.
			o.Remote.KnownHosts = nil
		}
		in := cmd.InOrStdin()
		o.OnKey = func(_ context.Context, pub []byte) error { return promptPublicKey(u, in, pub, f.silent) }
	}
	o.SyncURL = sync.String()
	return o, nil
}

// promptPublicKey prints the deploy key and, unless silent, asks the user
// to confirm it was given access to the repository.
func promptPublicKey(u *ui.UI, in io.Reader, pub []byte, silent bool) error {
	u.Success("public key: %s", strings.TrimSpace(string(pub)))
	if silent {
		return nil
	}
	if !askYes(u.Out(), in, "Please give the key access to your repository [y/N]: ") {
		return errors.New("aborting: give the deploy key access to the repository, then run bootstrap again")
	}
	return nil
}

type githubFlags struct {
	syncFlags
	owner, repository string
	personal, private bool
	hostname, apiURL  string
	readWriteKey      bool
}

func newBootstrapGitHubCommand(g *globalFlags, b *bootstrapFlags) *cobra.Command {
	f := &githubFlags{}
	cmd := &cobra.Command{
		Use:   "github",
		Short: "Deploy Eddy on a cluster connected to a GitHub repository",
		Long: "The bootstrap github command creates the GitHub repository if it doesn't exist and commits\n" +
			"Eddy's manifests to the specified branch. Then it configures the target cluster to synchronize\n" +
			"with that repository. The personal access token is read from $GITHUB_TOKEN.",
		Example: "  export GITHUB_TOKEN=<my-token>\n" +
			"  eddy bootstrap github --owner=<org> --repository=<repository> --path=clusters/my-cluster\n\n" +
			"  # a personal repository, the cluster authenticating with the token over HTTPS\n" +
			"  eddy bootstrap github --owner=<user> --repository=<repository> --personal --token-auth --path=clusters/my-cluster",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token := os.Getenv("GITHUB_TOKEN")
			if token == "" {
				return errors.New("GITHUB_TOKEN is not set: export a GitHub personal access token with the repo scope")
			}
			if f.owner == "" || f.repository == "" {
				return errors.New("--owner and --repository are required")
			}
			if err := b.validate(); err != nil {
				return err
			}
			o, err := b.options(g, f.path, f.interval)
			if err != nil {
				return err
			}
			gc, err := bootstrap.NewGitHubClient(token, f.hostname, f.apiURL)
			if err != nil {
				return err
			}
			gh := &bootstrap.GitHub{Client: gc, Owner: f.owner, Repo: f.repository, Personal: f.personal, Private: f.private, ReadWriteKey: f.readWriteKey}
			u := ui.New(cmd.OutOrStdout())
			c, err := reachableClient(g)
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			// The cluster before GitHub: a wrong --path creates no repository.
			if err := bootstrap.Preflight(ctx, c, o); err != nil {
				return err
			}
			cloneURL, err := gh.ReconcileRepository(ctx, u)
			if err != nil {
				return err
			}
			// flux: clone and push over HTTPS as the owner with the token.
			o.Remote.URL, o.Remote.Username, o.Remote.Password = cloneURL, f.owner, token
			if b.tokenAuth {
				o.Secret.Username, o.Secret.Password, o.Secret.CACrt = "git", token, o.Remote.CABundle
				o.SyncURL = cloneURL
			} else {
				sshHost := f.hostname
				if b.sshHostname != "" {
					sshHost = b.sshHostname
				}
				o.SyncURL = fmt.Sprintf("ssh://git@%s/%s/%s", sshHost, f.owner, f.repository)
				o.GenerateKey, o.KnownHostsFrom = true, sshHost
				title := bootstrap.DeployKeyTitle(o.Namespace, o.Remote.Branch, o.SecretName, o.Path)
				o.OnKey = func(ctx context.Context, pub []byte) error { return gh.ReconcileDeployKey(ctx, u, title, pub) }
			}
			return bootstrap.Run(ctx, u, c, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.owner, "owner", "", "GitHub user or organization name")
	fs.StringVar(&f.repository, "repository", "", "GitHub repository name")
	fs.BoolVar(&f.personal, "personal", false, "if true, the owner is assumed to be a GitHub user; otherwise an org")
	fs.BoolVar(&f.private, "private", true, "if true, the repository is setup or configured as private")
	f.register(fs)
	fs.StringVar(&f.hostname, "hostname", "github.com", "GitHub hostname")
	fs.StringVar(&f.apiURL, "api-url", "", "GitHub API base URL (default https://api.github.com/, or https://<hostname>/api/v3/)")
	_ = fs.MarkHidden("api-url")
	fs.BoolVar(&f.readWriteKey, "read-write-key", false, "if true, the deploy key is configured with read/write permissions")
	return cmd
}

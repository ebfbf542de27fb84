package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/oci"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// The artifact verbs: `push|pull|tag|diff|build artifact` and `list
// artifacts`, with the flags, progress lines and messages of flux v2.9.5's.
// As there, progress lines go to stderr and results (JSON, YAML, tables) to
// stdout, and every failure exits 1. The cloud --provider logins are not
// implemented: --creds and the Docker config (~/.docker/config.json) are.

// registryFlags are the connection flags the artifact verbs share.
type registryFlags struct {
	creds    string
	insecure bool
}

func (r *registryFlags) bind(cmd *cobra.Command, insecureHelp string) {
	cmd.Flags().StringVar(&r.creds, "creds", "", "credentials for OCI registry in the format <username>[:<password>]")
	if insecureHelp != "" {
		cmd.Flags().BoolVar(&r.insecure, "insecure-registry", false, insecureHelp)
	}
}

// open checks the oci:// URL and returns the reference without scheme, the
// OCI client and the progress printer (on cmd's stderr), announcing the
// login as flux does.
func (r *registryFlags) open(cmd *cobra.Command, ociURL string) (string, *oci.Client, *ui.UI, error) {
	url, err := oci.ParseArtifactURL(ociURL)
	if err != nil {
		return "", nil, nil, err
	}
	u := ui.New(cmd.ErrOrStderr())
	if r.creds != "" {
		u.Action("logging in to registry with credentials")
	}
	c, err := oci.NewClient(oci.Options{Creds: r.creds, Insecure: r.insecure})
	if err != nil {
		return "", nil, nil, fmt.Errorf("could not login with credentials: %w", err)
	}
	return url, c, u, nil
}

// pushFlags are the flags of `push artifact`.
type pushFlags struct {
	reg                            registryFlags
	path, source, revision, output string
	ignorePaths, annotations       []string
	reproducible, resolveSymlinks  bool
}

func newPushCommand(g *globalFlags) *cobra.Command {
	push := &cobra.Command{Use: "push", Short: "Push artifacts to OCI registries"}
	var p pushFlags
	cmd := &cobra.Command{
		Use:   "artifact",
		Short: "Push artifact",
		Long: `The push artifact command creates a tarball from the given directory or the single file and uploads the artifact to an OCI repository.
The command can read the credentials from '~/.docker/config.json' but they can also be passed with --creds.`,
		Example: `  # Push manifests to GHCR using the short Git SHA as the OCI artifact tag
  eddy push artifact oci://ghcr.io/org/config/app:$(git rev-parse --short HEAD) \
	--path="./path/to/local/manifests" \
	--source="$(git config --get remote.origin.url)" \
	--revision="$(git branch --show-current)@sha1:$(git rev-parse HEAD)"

  # Push manifests passed into stdin, with custom OCI annotations
  kustomize build . | eddy push artifact oci://ghcr.io/org/config/app:$(git rev-parse --short HEAD) -f - \
	--source="$(git config --get remote.origin.url)" \
	--revision="$(git branch --show-current)@sha1:$(git rev-parse HEAD)" \
	--annotations='org.opencontainers.image.licenses=Apache-2.0'`,
		RunE: func(cmd *cobra.Command, args []string) error { return p.run(cmd, g, args) },
	}
	f := cmd.Flags()
	f.StringVarP(&p.path, "path", "f", "", "path to the directory where the Kubernetes manifests are located, or to a single file; - reads a file from stdin")
	f.StringVar(&p.source, "source", "", "the source address, e.g. the Git URL")
	f.StringVar(&p.revision, "revision", "", "the source revision in the format '<branch|tag>@sha1:<commit-sha>'")
	f.StringSliceVar(&p.ignorePaths, "ignore-paths", oci.DefaultIgnorePaths, "set paths to ignore in .gitignore format")
	f.StringArrayVarP(&p.annotations, "annotations", "a", nil, "Set custom OCI annotations in the format '<key>=<value>'")
	f.StringVarP(&p.output, "output", "o", "", "the format in which the artifact digest should be printed, can be 'json' or 'yaml'")
	f.BoolVar(&p.reproducible, "reproducible", false, "ensure reproducible image digests by setting the created timestamp to '1970-01-01T00:00:00Z'")
	f.BoolVar(&p.resolveSymlinks, "resolve-symlinks", false, "resolve symlinks by copying their targets into the artifact")
	p.reg.bind(cmd, "allows artifacts to be pushed without TLS")
	push.AddCommand(cmd)
	return push
}

// run pushes the path to the artifact URL args[0] and prints where it went:
// a ✔ line, or with --output the URL, repository, tag and digest as JSON
// or YAML on stdout.
func (p *pushFlags) run(cmd *cobra.Command, g *globalFlags, args []string) error {
	if len(args) < 1 {
		return errors.New("artifact URL is required")
	}
	if p.source == "" {
		return errors.New("--source is required")
	}
	if p.revision == "" {
		return errors.New("--revision is required")
	}
	if p.path == "" {
		return fmt.Errorf("invalid path %q", p.path)
	}
	if p.output != "" && p.output != "json" && p.output != "yaml" {
		return fmt.Errorf("invalid output format %q, can be 'json' or 'yaml'", p.output)
	}
	src, cleanup, err := pathOrStdin(p.path, cmd.InOrStdin(), p.resolveSymlinks)
	if err != nil {
		return err
	}
	defer cleanup()
	meta, err := p.metadata()
	if err != nil {
		return err
	}
	url, c, u, err := p.reg.open(cmd, args[0])
	if err != nil {
		return err
	}
	tag, err := name.NewTag(url)
	if err != nil {
		return fmt.Errorf("artifact tag parsing failed: %w", err)
	}
	if p.output == "" {
		u.Action("pushing artifact to %s", url)
	}
	ctx, cancel := g.ctx(cmd)
	defer cancel()
	digestURL, err := c.Push(ctx, url, src, oci.PushOptions{Metadata: meta, IgnorePaths: p.ignorePaths})
	if err != nil {
		return fmt.Errorf("pushing artifact failed: %w", err)
	}
	digest, err := name.NewDigest(digestURL)
	if err != nil {
		return fmt.Errorf("artifact digest parsing failed: %w", err)
	}
	info := struct {
		URL        string `json:"url"`
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
		Digest     string `json:"digest"`
	}{oci.URLPrefix + digestURL, digest.Repository.Name(), tag.TagStr(), digest.DigestStr()}
	var out []byte
	switch p.output {
	case "json":
		out, err = json.MarshalIndent(&info, "", "  ")
		out = append(out, '\n')
	case "yaml":
		out, err = yaml.Marshal(&info)
	default:
		u.Success("artifact successfully pushed to %s", digestURL)
		return nil
	}
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(out)
	return err
}

// metadata is the artifact's metadata from --source, --revision,
// --annotations (each key=value) and --reproducible.
func (p *pushFlags) metadata() (oci.Metadata, error) {
	meta := oci.Metadata{Source: p.source, Revision: p.revision, Annotations: map[string]string{}}
	for _, a := range p.annotations {
		kv := strings.Split(a, "=")
		if len(kv) != 2 {
			return oci.Metadata{}, fmt.Errorf("invalid annotation %s, must be in the format key=value", a)
		}
		meta.Annotations[kv[0]] = kv[1]
	}
	if p.reproducible {
		meta.Created = oci.ReproducibleCreated
	}
	return meta, nil
}

// pathOrStdin returns path, which must exist, or for "-" a temporary
// .yaml file holding stdin (trailing newlines trimmed, as flux does), and
// its cleanup. With resolve, what it returns is a copy with the symbolic
// links resolved (oci.ResolveSymlinks).
func pathOrStdin(path string, stdin io.Reader, resolve bool) (string, func(), error) {
	src, cleanup, err := readPath(path, stdin)
	if err != nil || !resolve {
		return src, cleanup, err
	}
	resolved, cleanResolved, err := oci.ResolveSymlinks(src)
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("resolving symlinks failed: %w", err)
	}
	return resolved, func() { cleanResolved(); cleanup() }, nil
}

func readPath(path string, stdin io.Reader) (string, func(), error) {
	if path != "-" {
		if _, err := os.Stat(path); err != nil {
			return "", nil, fmt.Errorf("invalid path '%s', must point to an existing directory or file", path)
		}
		return path, func() {}, nil
	}
	b, err := io.ReadAll(bufio.NewReader(stdin))
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp("", "*.yaml")
	if err != nil {
		return "", nil, errors.New("unable to create temp dir for stdin")
	}
	cleanup := func() { os.Remove(f.Name()) }
	_, err = f.Write(bytes.TrimRight(b, "\r\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("error writing stdin to file: %w", err)
	}
	return f.Name(), cleanup, nil
}

func newPullCommand(g *globalFlags) *cobra.Command {
	pull := &cobra.Command{Use: "pull", Short: "Pull artifacts from OCI registries"}
	var (
		reg    registryFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "artifact",
		Short: "Pull artifact",
		Long: `The pull artifact command downloads and extracts the OCI artifact content to the given path.
The command can read the credentials from '~/.docker/config.json' but they can also be passed with --creds.
The content is checked before anything is written: an entry with an absolute name, one outside
the output path, or a link fails the pull.`,
		Example: `  # Pull an OCI artifact created by flux or eddy from GHCR
  eddy pull artifact oci://ghcr.io/org/manifests/app:v0.0.1 --output ./path/to/local/manifests`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return errors.New("artifact URL is required")
			}
			if output == "" {
				return errors.New("output path cannot be empty")
			}
			if fi, err := os.Stat(output); err != nil || !fi.IsDir() {
				return fmt.Errorf("invalid output path %q: it must be an existing directory", output)
			}
			url, c, u, err := reg.open(cmd, args[0])
			if err != nil {
				return err
			}
			u.Action("pulling artifact from %s", url)
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			meta, err := c.Pull(ctx, url, output, oci.PullOptions{})
			if err != nil {
				return err
			}
			if meta.Source != "" {
				u.Success("source %s", meta.Source)
			}
			if meta.Revision != "" {
				u.Success("revision %s", meta.Revision)
			}
			u.Success("digest %s", meta.Digest)
			u.Success("artifact content extracted to %s", output)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "path where the artifact content should be extracted.")
	reg.bind(cmd, "allows artifacts to be pulled without TLS")
	pull.AddCommand(cmd)
	return pull
}

func newTagCommand(g *globalFlags) *cobra.Command {
	tagCmd := &cobra.Command{Use: "tag", Short: "Tag artifacts in OCI registries"}
	var (
		reg  registryFlags
		tags []string
	)
	cmd := &cobra.Command{
		Use:   "artifact",
		Short: "Tag artifact",
		Long: `The tag artifact command creates tags for the given OCI artifact.
The command can read the credentials from '~/.docker/config.json' but they can also be passed with --creds.`,
		Example: `  # Tag an artifact version as latest
  eddy tag artifact oci://ghcr.io/org/manifests/app:v0.0.1 --tag latest`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return errors.New("artifact name is required")
			}
			if len(tags) < 1 {
				return errors.New("--tag is required")
			}
			url, c, u, err := reg.open(cmd, args[0])
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			u.Action("tagging artifact")
			for _, tag := range tags {
				img, err := c.Tag(ctx, url, tag)
				if err != nil {
					return fmt.Errorf("tagging artifact failed: %w", err)
				}
				u.Success("artifact tagged as %s", img)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&tags, "tag", nil, "tag name")
	reg.bind(cmd, "allows the artifact to be tagged without TLS")
	tagCmd.AddCommand(cmd)
	return tagCmd
}

func newListCommand(g *globalFlags) *cobra.Command {
	list := &cobra.Command{Use: "list", Short: "List artifacts in OCI registries"}
	var (
		reg           registryFlags
		semver, regex string
	)
	cmd := &cobra.Command{
		Use:   "artifacts",
		Short: "list artifacts",
		Long: `The list command fetches the tags and their metadata from a remote OCI repository.
The command can read the credentials from '~/.docker/config.json' but they can also be passed with --creds.`,
		Example: `  # List the artifacts stored in an OCI repository
  eddy list artifacts oci://ghcr.io/org/config/app`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return errors.New("artifact repository URL is required")
			}
			url, c, _, err := reg.open(cmd, args[0])
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			metas, err := c.List(ctx, url, oci.ListOptions{SemverFilter: semver, RegexFilter: regex})
			if err != nil {
				return err
			}
			rows := [][]string{{"ARTIFACT", "DIGEST", "SOURCE", "REVISION"}}
			for _, m := range metas {
				rows = append(rows, []string{m.URL, m.Digest, m.Source, m.Revision})
			}
			return ui.WriteTable(cmd.OutOrStdout(), rows, 3)
		},
	}
	cmd.Flags().StringVar(&semver, "filter-semver", "", "filter tags returned from the oci repository using semver")
	cmd.Flags().StringVar(&regex, "filter-regex", "", "filter tags returned from the oci repository using regex")
	reg.bind(cmd, "allows the remote artifacts list to be fetched without TLS")
	list.AddCommand(cmd)
	return list
}

func newDiffArtifactCommand(g *globalFlags) *cobra.Command {
	var (
		reg         registryFlags
		path        string
		ignorePaths []string
	)
	cmd := &cobra.Command{
		Use:   "artifact",
		Short: "Diff Artifact",
		Long: `The diff artifact command computes the diff between the remote OCI artifact and a local directory or file.
It builds the path as push artifact would and compares the result with the artifact's content layer.
Exits 0 when they are the same, 1 when they differ or the comparison fails.`,
		Example: `  # Check if local files differ from remote
  eddy diff artifact oci://ghcr.io/stefanprodan/manifests/podinfo:6.2.0 --path=./kustomize`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return errors.New("artifact URL is required")
			}
			if path == "" {
				return fmt.Errorf("invalid path %q", path)
			}
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("invalid path '%s', must point to an existing directory or file", path)
			}
			url, c, u, err := reg.open(cmd, args[0])
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			if err := c.Diff(ctx, url, path, ignorePaths); err != nil {
				return err
			}
			u.Success("no changes detected")
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "path", "", "path to the directory where the Kubernetes manifests are located")
	cmd.Flags().StringSliceVar(&ignorePaths, "ignore-paths", oci.DefaultIgnorePaths, "set paths to ignore in .gitignore format")
	reg.bind(cmd, "allows the remote artifact to be pulled without TLS")
	return cmd
}

func newBuildArtifactCommand() *cobra.Command {
	var (
		path, output    string
		ignorePaths     []string
		resolveSymlinks bool
	)
	cmd := &cobra.Command{
		Use:   "artifact",
		Short: "Build artifact",
		Long: `The build artifact command creates a tgz file with the manifests
from the given directory or a single manifest file, byte for byte as flux build artifact does.`,
		Example: `  # Build the given manifests directory into an artifact
  eddy build artifact --path ./path/to/local/manifests --output ./path/to/artifact.tgz

  # List the files bundled in the artifact
  tar -ztvf ./path/to/artifact.tgz`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return fmt.Errorf("invalid path %q", path)
			}
			src, cleanup, err := pathOrStdin(path, cmd.InOrStdin(), resolveSymlinks)
			if err != nil {
				return err
			}
			defer cleanup()
			u := ui.New(cmd.ErrOrStderr())
			u.Action("building artifact from %s", path)
			if err := oci.Build(output, src, ignorePaths); err != nil {
				return fmt.Errorf("building artifact failed, error: %w", err)
			}
			u.Success("artifact created at %s", output)
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "path", "p", "", "Path to the directory where the Kubernetes manifests are located.")
	cmd.Flags().StringVarP(&output, "output", "o", "artifact.tgz", "Path to where the artifact tgz file should be written.")
	cmd.Flags().StringSliceVar(&ignorePaths, "ignore-paths", oci.DefaultIgnorePaths, "set paths to ignore in .gitignore format")
	cmd.Flags().BoolVar(&resolveSymlinks, "resolve-symlinks", false, "resolve symlinks by copying their targets into the artifact")
	return cmd
}

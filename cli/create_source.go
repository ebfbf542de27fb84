package main

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sourceMeta is a new source's metadata (createFlags.meta), once its
// --url, rawURL, is given: flux's "url is required" otherwise.
func (f *createFlags) sourceMeta(g *globalFlags, args []string, rawURL string) (metav1.ObjectMeta, error) {
	om, err := f.meta(g, args)
	if err != nil {
		return om, err
	}
	if rawURL == "" {
		return om, errors.New("url is required")
	}
	return om, nil
}

// sourceURL parses a source's --url, one of schemes; what names it in
// flux's errors ("git URL", "url").
func sourceURL(raw, what string, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s parse failed: %w", what, err)
	}
	if !slices.Contains(schemes, u.Scheme) {
		last := len(schemes) - 1
		return nil, fmt.Errorf("%s scheme '%s' not supported, can be: %s and %s", what, u.Scheme, strings.Join(schemes[:last], ", "), schemes[last])
	}
	return u, nil
}

// timeout is --fetch-timeout as a source's spec.timeout, nil when unset.
func (f *createFlags) timeout() *metav1.Duration {
	if f.fetchTimeout <= 0 {
		return nil
	}
	return &metav1.Duration{Duration: f.fetchTimeout}
}

// ignoreOf is --ignore-paths as a source's spec.ignore (one path a line),
// nil for none.
func ignoreOf(paths []string) *string {
	if len(paths) == 0 {
		return nil
	}
	s := strings.Join(paths, "\n")
	return &s
}

// sourceDone is flux's last line of `create source`: the fetched
// revision; no artifact after Ready is an error.
func sourceDone(kind string, src sourcev1.Source) func(*ui.UI) error {
	return func(u *ui.UI) error {
		a := src.GetArtifact()
		if a == nil {
			return fmt.Errorf("%s source reconciliation completed but no artifact was found", kind)
		}
		u.Success("fetched revision: %s", a.Revision)
		return nil
	}
}

func newCreateSourceGitCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var gitURL, branch, tag, semver, refName, commit, secretRef, provider string
	var ignorePaths []string
	var recurseSubmodules bool
	cmd := &cobra.Command{
		Use:   "git [name]",
		Short: "Create or update a GitRepository source",
		Example: "  eddy create source git podinfo --url=https://github.com/stefanprodan/podinfo --branch=master\n" +
			"  eddy create source git podinfo --url=https://github.com/stefanprodan/podinfo --tag-semver='>=6.0.0' --export",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.sourceMeta(g, args, gitURL)
			if err != nil {
				return err
			}
			u, err := sourceURL(gitURL, "git URL", "ssh", "http", "https")
			if err != nil {
				return err
			}
			if branch == "" && tag == "" && semver == "" && commit == "" && refName == "" {
				return errors.New("a Git ref is required, use one of the following: --branch, --tag, --commit, --ref-name or --tag-semver")
			}
			if u.Scheme == "ssh" && secretRef == "" && !f.export {
				return errors.New("an ssh URL needs --secret-ref: eddy does not generate deploy keys")
			}
			repo := &sourcev1.GitRepository{ObjectMeta: om, Spec: sourcev1.GitRepositorySpec{
				URL: gitURL, Interval: metav1.Duration{Duration: f.interval},
				RecurseSubmodules: recurseSubmodules, Reference: &sourcev1.GitRepositoryRef{}, Provider: provider,
			}}
			repo.Spec.Ignore, repo.Spec.Timeout = ignoreOf(ignorePaths), f.timeout()
			// flux's precedence of the ref flags.
			switch ref := repo.Spec.Reference; {
			case commit != "":
				ref.Commit, ref.Branch = commit, branch
			case refName != "":
				ref.Name = refName
			case semver != "":
				ref.SemVer = semver
			case tag != "":
				ref.Tag = tag
			default:
				ref.Branch = branch
			}
			if secretRef != "" {
				repo.Spec.SecretRef = &meta.LocalObjectReference{Name: secretRef}
			}
			return g.create(cmd, f, creation{obj: repo, kind: "GitRepository source", created: "GitRepository source",
				completed: "GitRepository source reconciliation completed",
				done:      sourceDone(sourcev1.GitRepositoryKind, repo)})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&gitURL, "url", "", "git address, e.g. ssh://git@host/org/repository")
	fs.StringVar(&branch, "branch", "", "git branch")
	fs.StringVar(&tag, "tag", "", "git tag")
	fs.StringVar(&semver, "tag-semver", "", "git tag semver range")
	fs.StringVar(&refName, "ref-name", "", "git reference name")
	fs.StringVar(&commit, "commit", "", "git commit")
	fs.StringVar(&secretRef, "secret-ref", "", "the name of an existing secret containing SSH or basic credentials")
	fs.StringVar(&provider, "provider", "", "the Git provider name (generic, azure or github)")
	fs.BoolVar(&recurseSubmodules, "recurse-submodules", false, "when enabled, configures the GitRepository source to initialize and include Git submodules in the artifact it produces")
	fs.StringSliceVar(&ignorePaths, "ignore-paths", nil, "set paths to ignore in git resource (can specify multiple paths with commas: path1,path2)")
	return cmd
}

func newCreateSourceHelmCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var repoURL, secretRef string
	var passCredentials bool
	cmd := &cobra.Command{
		Use:     "helm [name]",
		Short:   "Create or update a HelmRepository source",
		Example: "  eddy create source helm podinfo --url=https://stefanprodan.github.io/podinfo",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.sourceMeta(g, args, repoURL)
			if err != nil {
				return err
			}
			u, err := sourceURL(repoURL, "url", "http", "https", "oci")
			if err != nil {
				return err
			}
			if u.Host == "" {
				return errors.New("url host is required")
			}
			repo := &sourcev1.HelmRepository{ObjectMeta: om, Spec: sourcev1.HelmRepositorySpec{
				URL: repoURL, Interval: metav1.Duration{Duration: f.interval}, PassCredentials: passCredentials,
			}}
			oci := u.Scheme == "oci"
			if oci {
				repo.Spec.Type = sourcev1.HelmRepositoryTypeOCI
			}
			repo.Spec.Timeout = f.timeout()
			if secretRef != "" {
				repo.Spec.SecretRef = &meta.LocalObjectReference{Name: secretRef}
			}
			c := creation{obj: repo, kind: "HelmRepository source", created: "source",
				completed: "HelmRepository source reconciliation completed"}
			if !oci { // an OCI HelmRepository has no artifact
				c.done = sourceDone(sourcev1.HelmRepositoryKind, repo)
			}
			return g.create(cmd, f, c)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&repoURL, "url", "", "Helm repository address")
	fs.StringVar(&secretRef, "secret-ref", "", "the name of an existing secret containing TLS, basic auth or docker-config credentials")
	fs.BoolVar(&passCredentials, "pass-credentials", false, "pass credentials to all domains")
	return cmd
}

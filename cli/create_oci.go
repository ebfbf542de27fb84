package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ociProviders are the values of `create source oci --provider`, flux's.
var ociProviders = []string{"generic", "aws", "azure", "gcp"}

// ociProviderFlag is --provider of `create source oci`: one of
// ociProviders, refused at parse time as flux does.
type ociProviderFlag string

func (p *ociProviderFlag) String() string { return string(*p) }
func (p *ociProviderFlag) Type() string   { return strings.Join(ociProviders, "|") }
func (p *ociProviderFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("no source OCI provider given, please specify the OCI provider name")
	}
	if !slices.Contains(ociProviders, s) {
		return fmt.Errorf("source OCI provider '%s' is not supported, must be one of: %s", s, strings.Join(ociProviders, ", "))
	}
	*p = ociProviderFlag(s)
	return nil
}

// ociLayerSelector parses flux's --layer-selector '<media-type>:<operation>'
// (operation extract or copy); nil for "".
func ociLayerSelector(s string) (*sourcev1.OCILayerSelector, error) {
	if s == "" {
		return nil, nil
	}
	mediaType, op, ok := strings.Cut(s, ":")
	if !ok || mediaType == "" || op == "" {
		return nil, fmt.Errorf("invalid --layer-selector %q: must be in the format '<media-type>:<operation>'", s)
	}
	if op != sourcev1.OCILayerExtract && op != sourcev1.OCILayerCopy {
		return nil, fmt.Errorf("invalid --layer-selector %q: operation must be %q or %q", s, sourcev1.OCILayerExtract, sourcev1.OCILayerCopy)
	}
	return &sourcev1.OCILayerSelector{MediaType: mediaType, Operation: op}, nil
}

// newCreateSourceOCICommand is `create source oci`, with flux v2.9.5's
// flags, checks, output and precedence (tag over semver over digest, as
// flux sets each given one and the controller picks), but without the
// signature verification flags.
func newCreateSourceOCICommand(g *globalFlags, f *createFlags) *cobra.Command {
	var ociURL, tag, semver, dgst, secretRef, certRef, proxyRef, serviceAccount, layerSelector string
	var ignorePaths []string
	var insecure bool
	provider := ociProviderFlag("generic")
	cmd := &cobra.Command{
		Use:   "oci [name]",
		Short: "Create or update an OCIRepository",
		Example: "  eddy create source oci podinfo --url=oci://ghcr.io/stefanprodan/manifests/podinfo --tag=6.6.2 --interval=10m\n" +
			"  eddy create source oci app --url=oci://registry.example/app --tag-semver='>=1.0.0' --secret-ref=regcred --export",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.sourceMeta(g, args, ociURL)
			if err != nil {
				return err
			}
			if semver == "" && tag == "" && dgst == "" {
				return errors.New("--tag, --tag-semver or --digest is required")
			}
			selector, err := ociLayerSelector(layerSelector)
			if err != nil {
				return err
			}
			repo := &sourcev1.OCIRepository{ObjectMeta: om, Spec: sourcev1.OCIRepositorySpec{
				URL: ociURL, Provider: provider.String(), Insecure: insecure,
				Interval:      &metav1.Duration{Duration: f.interval},
				Reference:     &sourcev1.OCIRepositoryRef{Tag: tag, SemVer: semver, Digest: dgst},
				LayerSelector: selector, ServiceAccountName: serviceAccount,
			}}
			repo.Spec.Ignore, repo.Spec.Timeout = ignoreOf(ignorePaths), f.timeout()
			for _, ref := range []struct {
				name string
				to   **meta.LocalObjectReference
			}{{secretRef, &repo.Spec.SecretRef}, {certRef, &repo.Spec.CertSecretRef}, {proxyRef, &repo.Spec.ProxySecretRef}} {
				if ref.name != "" {
					*ref.to = &meta.LocalObjectReference{Name: ref.name}
				}
			}
			return g.create(cmd, f, creation{obj: repo, kind: sourcev1.OCIRepositoryKind, created: sourcev1.OCIRepositoryKind,
				noGenerate: true, completed: "OCIRepository reconciliation completed",
				done: sourceDone(sourcev1.OCIRepositoryKind, repo)})
		},
	}
	fs := cmd.Flags()
	fs.Var(&provider, "provider", "the OCI provider name, available options are: (generic, aws, azure, gcp)")
	fs.StringVar(&ociURL, "url", "", "the OCI repository URL")
	fs.StringVar(&tag, "tag", "", "the OCI artifact tag")
	fs.StringVar(&semver, "tag-semver", "", "the OCI artifact tag semver range")
	fs.StringVar(&dgst, "digest", "", "the OCI artifact digest")
	fs.StringVar(&secretRef, "secret-ref", "", "the name of the Kubernetes image pull secret (type 'kubernetes.io/dockerconfigjson')")
	fs.StringVar(&proxyRef, "proxy-secret-ref", "", "the name of an existing secret containing the proxy address and credentials")
	fs.StringVar(&serviceAccount, "service-account", "", "the name of the Kubernetes service account that refers to an image pull secret")
	fs.StringVar(&certRef, "cert-ref", "", "the name of a secret to use for TLS certificates")
	fs.StringSliceVar(&ignorePaths, "ignore-paths", nil, "set paths to ignore resources (can specify multiple paths with commas: path1,path2)")
	fs.BoolVar(&insecure, "insecure", false, "for when connecting to a non-TLS registries over plain HTTP")
	fs.StringVar(&layerSelector, "layer-selector", "", "the OCI artifact layer selector in the format '<media-type>:<operation>'")
	return cmd
}

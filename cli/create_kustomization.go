package main

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newCreateKustomizationCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var source, ksPath, targetNamespace, serviceAccount, decryptionProvider, decryptionSecret string
	var prune, wait bool
	var healthChecks, dependsOn []string
	var healthTimeout, retryInterval time.Duration
	cmd := &cobra.Command{
		Use:     "kustomization [name]",
		Aliases: []string{"ks"},
		Short:   "Create or update a Kustomization",
		Example: "  eddy create kustomization apps --source=GitRepository/flux-system --path=./apps --prune --interval=5m\n" +
			"  eddy create ks apps --source=podinfo.flux-system --path=./kustomize --depends-on=infra --export",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if ksPath == "" {
				return errors.New("path is required")
			}
			cleanPath := safeRelativePath(ksPath)
			kind, name, ns := kindNameNamespace(source)
			if name == "" {
				return errors.New("source is required")
			}
			row, _ := kinds.ByKind(kustomizev1.KustomizationKind)
			sourceKinds := row.SourceKinds
			if kind == "" {
				kind = sourcev1.GitRepositoryKind
			} else if k, ok := oneOfFold(sourceKinds, kind); ok {
				kind = k
			} else {
				return fmt.Errorf("source kind '%s' is not supported, must be one of: %s", kind, strings.Join(sourceKinds, ", "))
			}
			ks := &kustomizev1.Kustomization{ObjectMeta: om, Spec: kustomizev1.KustomizationSpec{
				Interval: metav1.Duration{Duration: f.interval}, Path: cleanPath, Prune: prune,
				SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: kind, Name: name, Namespace: ns},
				TargetNamespace: targetNamespace, ServiceAccountName: serviceAccount,
			}}
			if len(dependsOn) > 0 {
				ks.Spec.DependsOn = meta.MakeDependsOn(dependsOn)
			}
			if len(healthChecks) > 0 && !wait {
				for _, hc := range healthChecks {
					ref, err := healthCheck(hc)
					if err != nil {
						return err
					}
					ks.Spec.HealthChecks = append(ks.Spec.HealthChecks, ref)
				}
				ks.Spec.Timeout = &metav1.Duration{Duration: healthTimeout}
			}
			if wait {
				ks.Spec.Wait = true
				ks.Spec.Timeout = &metav1.Duration{Duration: healthTimeout}
			}
			if retryInterval > 0 {
				ks.Spec.RetryInterval = &metav1.Duration{Duration: retryInterval}
			}
			if cmd.Flags().Changed("decryption-provider") || decryptionProvider != "" {
				// Flux compatible messages (flux create ks --decryption-provider).
				switch strings.TrimSpace(decryptionProvider) {
				case "sops":
				case "":
					return errors.New("invalid argument \"\" for \"--decryption-provider\" flag: no decryption provider given, must be one of: sops")
				default:
					return fmt.Errorf("invalid argument %q for \"--decryption-provider\" flag: unsupported decryption provider '%s', must be one of: sops", decryptionProvider, decryptionProvider)
				}
				ks.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops"}
				if decryptionSecret != "" {
					ks.Spec.Decryption.SecretRef = &meta.LocalObjectReference{Name: decryptionSecret}
				}
			}
			return g.create(cmd, f, creation{obj: ks, kind: kustomizev1.KustomizationKind, created: kustomizev1.KustomizationKind,
				done: func(u *ui.UI) error {
					u.Success("applied revision %s", ks.Status.LastAppliedRevision)
					return nil
				}})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&source, "source", "", "source that contains the Kubernetes manifests in the format '[<kind>/]<name>.<namespace>', where kind must be one of: (OCIRepository, GitRepository, Bucket), if kind is not specified it defaults to GitRepository")
	fs.StringVar(&ksPath, "path", "./", "path to the directory containing a kustomization.yaml file")
	fs.BoolVar(&prune, "prune", false, "enable garbage collection")
	fs.BoolVar(&wait, "wait", false, "enable health checking of all the applied resources")
	fs.StringSliceVar(&healthChecks, "health-check", nil, "workload to be included in the health assessment, in the format '<kind>/<name>.<namespace>'")
	fs.DurationVar(&healthTimeout, "health-check-timeout", 2*time.Minute, "timeout of health checking operations")
	fs.StringSliceVar(&dependsOn, "depends-on", nil, "Kustomization that must be ready before this Kustomization can be applied, supported formats '<name>' and '<namespace>/<name>', also accepts comma-separated values")
	fs.StringVar(&serviceAccount, "service-account", "", "the name of the service account to impersonate when reconciling this Kustomization")
	fs.StringVar(&targetNamespace, "target-namespace", "", "overrides the namespace of all Kustomization objects reconciled by this Kustomization")
	fs.DurationVar(&retryInterval, "retry-interval", 0, "the interval at which to retry a previously failed reconciliation")
	fs.StringVar(&decryptionProvider, "decryption-provider", "", "decryption provider, available options are: (sops)")
	fs.StringVar(&decryptionSecret, "decryption-secret", "", "the name of the Secret holding the age or OpenPGP keys used for sops decryption")
	return cmd
}

// safeRelativePath is flux's cleaning of --path: a path inside the
// source's root (".." cannot leave it), written "./<clean path>".
func safeRelativePath(p string) string {
	return "./" + strings.TrimPrefix(path.Clean("/"+strings.TrimSpace(p)), "/")
}

// healthCheck parses flux's `<kind>/<name>.<namespace>` health check.
func healthCheck(s string) (meta.NamespacedObjectKindReference, error) {
	kind, nameNs, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(nameNs, "/") {
		return meta.NamespacedObjectKindReference{}, fmt.Errorf("invalid health check '%s' must be in the format 'kind/name.namespace'", s)
	}
	if !slices.Contains([]string{"Deployment", "DaemonSet", "StatefulSet", helmv2.HelmReleaseKind}, kind) {
		return meta.NamespacedObjectKindReference{}, fmt.Errorf("invalid health check kind '%s' can be HelmRelease, Deployment, DaemonSet or StatefulSet", kind)
	}
	parts := strings.Split(nameNs, ".")
	if len(parts) != 2 {
		return meta.NamespacedObjectKindReference{}, fmt.Errorf("invalid health check '%s' must be in the format 'kind/name.namespace'", s)
	}
	ref := meta.NamespacedObjectKindReference{Kind: kind, Name: parts[0], Namespace: parts[1]}
	if kind == helmv2.HelmReleaseKind {
		ref.APIVersion = helmv2.GroupVersion.String()
	}
	return ref, nil
}

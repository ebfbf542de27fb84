package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/helmvalues"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// createFlags are the flags every `create` subcommand has (flux's).
type createFlags struct {
	interval     time.Duration
	export       bool
	labels       []string
	fetchTimeout time.Duration
}

// objectName is flux's rule for a created object's name (RFC 1123).
var objectName = regexp.MustCompile(`^[a-z0-9]([a-z0-9\-]){0,61}[a-z0-9]$`)

// meta is the name (args[0]), namespace and --label labels of a new object.
func (f *createFlags) meta(g *globalFlags, args []string) (metav1.ObjectMeta, error) {
	if len(args) < 1 {
		return metav1.ObjectMeta{}, errors.New("name is required")
	}
	name := args[0]
	if !objectName.MatchString(name) {
		return metav1.ObjectMeta{}, fmt.Errorf("name '%s' is invalid, it should adhere to standard defined in RFC 1123, the name can only contain alphanumeric characters or '-'", name)
	}
	var labels map[string]string
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.Contains(v, "=") {
			return metav1.ObjectMeta{}, fmt.Errorf("invalid label format '%s', must be key=value", l)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return metav1.ObjectMeta{}, fmt.Errorf("invalid label '%s': %v", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return metav1.ObjectMeta{}, fmt.Errorf("invalid label value '%s': %v", v, errs)
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: g.namespace, Labels: labels}, nil
}

// creation is what one `create` subcommand makes, with flux's wording.
type creation struct {
	obj     client.Object
	kind    string // in "generating …", "applying …", "waiting for … reconciliation"
	created string // in "… created", "… updated"
	// noGenerate leaves out the "generating …" line (flux's create source
	// oci has none).
	noGenerate bool
	completed  string // the line after the wait; "" for flux's "<Kind> <name> is ready"
	// done prints the lines after the wait, or fails.
	done func(u *ui.UI) error
}

// create prints c.obj as `--export` YAML, or creates or updates it
// (labels and spec; other metadata kept) and waits until it is ready as
// flux judges it.
func (g *globalFlags) create(cmd *cobra.Command, f *createFlags, c creation) error {
	if f.export {
		doc, err := exported(scheme.New(), c.obj)
		if err != nil {
			return err
		}
		return printExport(cmd.OutOrStdout(), doc)
	}
	cl, err := g.client()
	if err != nil {
		return err
	}
	ctx, cancel := g.ctx(cmd)
	defer cancel()
	u := ui.New(cmd.OutOrStdout())
	if !c.noGenerate {
		u.Generate("generating %s", c.kind)
	}
	u.Action("applying %s", c.kind)

	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.obj)
	if err != nil {
		return err
	}
	existing := &unstructured.Unstructured{}
	gvk, err := cl.GroupVersionKindFor(c.obj)
	if err != nil {
		return err
	}
	existing.SetGroupVersionKind(gvk)
	switch err := cl.Get(ctx, client.ObjectKeyFromObject(c.obj), existing); {
	case apierrors.IsNotFound(err):
		if err := cl.Create(ctx, c.obj); err != nil {
			return err
		}
		u.Success("%s created", c.created)
	case err != nil:
		return err
	default:
		existing.SetLabels(c.obj.GetLabels())
		existing.Object["spec"] = want["spec"]
		if err := cl.Update(ctx, existing); err != nil {
			return err
		}
		u.Success("%s updated", c.created)
	}

	k, _ := kinds.Of(c.obj)
	stop := u.Spin(fmt.Sprintf("waiting for %s reconciliation", c.kind))
	err = waitReady(ctx, cl, k, c.obj, c.kind+" reconciliation")
	stop()
	if err != nil {
		return err
	}
	if c.completed != "" {
		u.Success("%s", c.completed)
	} else {
		u.Success("%s %s is ready", c.kind, c.obj.GetName())
	}
	if c.done != nil {
		return c.done(u)
	}
	return nil
}

// kindNameNamespace splits flux's `[<kind>/]<name>[.<namespace>]`.
func kindNameNamespace(s string) (kind, name, namespace string) {
	if k, n, ok := strings.Cut(s, "/"); ok {
		kind, name = k, n
	} else {
		name = s
	}
	if i := strings.LastIndex(name, "."); i >= 0 {
		name, namespace = name[:i], name[i+1:]
	}
	return kind, name, namespace
}

// oneOfFold returns the item of list equal to s under case folding.
func oneOfFold(list []string, s string) (string, bool) {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return l, true
		}
	}
	return "", false
}

func newCreateCommand(g *globalFlags) *cobra.Command {
	f := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create or update Flux objects",
		Long: "Create makes an object (or updates the labels and spec of an existing one) and waits until its " +
			"controller reports it ready; with --export it prints the object as YAML instead, without a cluster.",
	}
	fs := cmd.PersistentFlags()
	fs.DurationVar(&f.interval, "interval", time.Minute, "source sync interval")
	fs.BoolVar(&f.export, "export", false, "export in YAML format to stdout")
	fs.StringSliceVar(&f.labels, "label", nil, "set labels on the resource (can specify multiple labels with commas: label1=value1,label2=value2)")

	src := &cobra.Command{Use: "source", Short: "Create or update sources"}
	src.PersistentFlags().DurationVar(&f.fetchTimeout, "fetch-timeout", 0, "set a timeout for fetch operations performed by source-controller (e.g. 'git clone' or 'helm repo add')")
	src.AddCommand(newCreateSourceGitCommand(g, f), newCreateSourceHelmCommand(g, f), newCreateSourceOCICommand(g, f))
	cmd.AddCommand(src, newCreateKustomizationCommand(g, f), newCreateHelmReleaseCommand(g, f),
		newCreateAlertCommand(g, f), newCreateAlertProviderCommand(g, f), newCreateReceiverCommand(g, f))
	unknownKind(cmd)
	unknownKind(src)
	return cmd
}

// sourceDone is flux's last line of `create source`: the fetched
// revision; no artifact after Ready is an error.
func sourceDone(kind string, artifact func() *meta.Artifact) func(*ui.UI) error {
	return func(u *ui.UI) error {
		a := artifact()
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
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if gitURL == "" {
				return errors.New("url is required")
			}
			u, err := url.Parse(gitURL)
			if err != nil {
				return fmt.Errorf("git URL parse failed: %w", err)
			}
			if u.Scheme != "ssh" && u.Scheme != "http" && u.Scheme != "https" {
				return fmt.Errorf("git URL scheme '%s' not supported, can be: ssh, http and https", u.Scheme)
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
			if len(ignorePaths) > 0 {
				s := strings.Join(ignorePaths, "\n")
				repo.Spec.Ignore = &s
			}
			if f.fetchTimeout > 0 {
				repo.Spec.Timeout = &metav1.Duration{Duration: f.fetchTimeout}
			}
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
				done:      sourceDone(sourcev1.GitRepositoryKind, func() *meta.Artifact { return repo.Status.Artifact })})
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
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if repoURL == "" {
				return errors.New("url is required")
			}
			u, err := url.Parse(repoURL)
			if err != nil {
				return fmt.Errorf("url parse failed: %w", err)
			}
			if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "oci" {
				return fmt.Errorf("url scheme '%s' not supported, can be: http, https and oci", u.Scheme)
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
			if f.fetchTimeout > 0 {
				repo.Spec.Timeout = &metav1.Duration{Duration: f.fetchTimeout}
			}
			if secretRef != "" {
				repo.Spec.SecretRef = &meta.LocalObjectReference{Name: secretRef}
			}
			c := creation{obj: repo, kind: "HelmRepository source", created: "source",
				completed: "HelmRepository source reconciliation completed"}
			if !oci { // an OCI HelmRepository has no artifact
				c.done = sourceDone(sourcev1.HelmRepositoryKind, func() *meta.Artifact { return repo.Status.Artifact })
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
			kinds := []string{sourcev1.OCIRepositoryKind, sourcev1.GitRepositoryKind}
			if kind == "" {
				kind = sourcev1.GitRepositoryKind
			} else if k, ok := oneOfFold(kinds, kind); ok {
				kind = k
			} else {
				return fmt.Errorf("source kind '%s' is not supported, must be one of: %s", kind, strings.Join(kinds, ", "))
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
	fs.StringVar(&source, "source", "", "source that contains the Kubernetes manifests in the format '[<kind>/]<name>.<namespace>', where kind must be one of: (OCIRepository, GitRepository), if kind is not specified it defaults to GitRepository")
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

func newCreateHelmReleaseCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var releaseName, source, chart, chartVersion, targetNamespace, storageNamespace, serviceAccount, strategy, chartRef string
	var dependsOn, valuesFiles, valuesFrom []string
	var createNamespace bool
	var chartInterval time.Duration
	cmd := &cobra.Command{
		Use:     "helmrelease [name]",
		Aliases: []string{"hr"},
		Short:   "Create or update a HelmRelease",
		Example: "  eddy create hr podinfo --source=HelmRepository/podinfo --chart=podinfo --chart-version='>6.0.0'\n" +
			"  eddy create hr podinfo --source=HelmRepository/podinfo.flux-system --chart=podinfo --values=./values.yaml --target-namespace=apps --export",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if storageNamespace == "" && targetNamespace != "" {
				storageNamespace = targetNamespace
			}
			if chart == "" && chartRef == "" {
				return errors.New("chart or chart-ref is required")
			}
			if chart != "" && chartRef != "" {
				return errors.New("cannot use --chart in combination with --chart-ref")
			}
			if strategy != "Revision" && strategy != "ChartVersion" {
				return fmt.Errorf("'%s' is an invalid reconcile strategy(valid: Revision, ChartVersion)", strategy)
			}
			hr := &helmv2.HelmRelease{ObjectMeta: om, Spec: helmv2.HelmReleaseSpec{
				ReleaseName: releaseName, Interval: metav1.Duration{Duration: f.interval},
				TargetNamespace: targetNamespace, StorageNamespace: storageNamespace, ServiceAccountName: serviceAccount,
			}}
			if len(dependsOn) > 0 {
				hr.Spec.DependsOn = meta.MakeDependsOn(dependsOn)
			}
			if chart != "" {
				kind, name, ns := kindNameNamespace(source)
				kinds := []string{sourcev1.HelmRepositoryKind, sourcev1.GitRepositoryKind}
				if kind == "" || name == "" {
					return fmt.Errorf("invalid helm chart source '%s', must be in format <kind>/<name>", source)
				}
				k, ok := oneOfFold(kinds, kind)
				if !ok {
					return fmt.Errorf("source kind '%s' is not supported, must be one of: %s", kind, strings.Join(kinds, ", "))
				}
				hr.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: chart, Version: chartVersion, ReconcileStrategy: strategy,
					SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: k, Name: name, Namespace: ns},
				}}
				if chartInterval != 0 {
					hr.Spec.Chart.Spec.Interval = &metav1.Duration{Duration: chartInterval}
				}
			} else {
				kind, name, ns := kindNameNamespace(chartRef)
				if kind != sourcev1.HelmChartKind {
					return fmt.Errorf("chart reference kind '%s' is not supported, must be one of: %s", kind, sourcev1.HelmChartKind)
				}
				hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: kind, Name: name, Namespace: ns}
			}
			if createNamespace {
				hr.Spec.Install = &helmv2.Install{CreateNamespace: true}
			}
			if len(valuesFiles) > 0 {
				values := map[string]any{}
				for _, v := range valuesFiles {
					data, err := os.ReadFile(v)
					if err != nil {
						return fmt.Errorf("reading values from %s failed: %w", v, errors.Unwrap(err))
					}
					m := map[string]any{}
					if err := yaml.Unmarshal(data, &m); err != nil {
						return fmt.Errorf("converting values to JSON from %s failed: %w", v, err)
					}
					values = helmvalues.Merge(values, m)
				}
				raw, err := json.Marshal(values)
				if err != nil {
					return fmt.Errorf("marshaling values failed: %w", err)
				}
				hr.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
			}
			for _, v := range valuesFrom {
				kind, name, ok := strings.Cut(v, "/")
				if !ok || kind == "" {
					return fmt.Errorf("invalid Kubernetes object reference '%s', must be in format <kind>/<name>", v)
				}
				k, ok := oneOfFold([]string{"Secret", "ConfigMap"}, kind)
				if !ok {
					return fmt.Errorf("reference kind '%s' is not supported, must be one of: Secret, ConfigMap", kind)
				}
				hr.Spec.ValuesFrom = append(hr.Spec.ValuesFrom, meta.ValuesReference{Kind: k, Name: name})
			}
			return g.create(cmd, f, creation{obj: hr, kind: helmv2.HelmReleaseKind, created: helmv2.HelmReleaseKind,
				done: func(u *ui.UI) error {
					u.Success("applied revision %s", kinds.HelmReleaseRevision(hr))
					return nil
				}})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&releaseName, "release-name", "", "name used for the Helm release, defaults to a composition of '[<target-namespace>-]<HelmRelease-name>'")
	fs.StringVar(&source, "source", "", "source that contains the chart in the format '<kind>/<name>.<namespace>', where kind must be one of: (HelmRepository, GitRepository)")
	fs.StringVar(&chart, "chart", "", "Helm chart name or path")
	fs.StringVar(&chartVersion, "chart-version", "", "Helm chart version, accepts a semver range (ignored for charts from GitRepository sources)")
	fs.StringSliceVar(&dependsOn, "depends-on", nil, "HelmReleases that must be ready before this release can be installed, supported formats '<name>' and '<namespace>/<name>'")
	fs.StringVar(&targetNamespace, "target-namespace", "", "namespace to install this release, defaults to the HelmRelease namespace")
	fs.StringVar(&storageNamespace, "storage-namespace", "", "namespace to store the Helm release, defaults to the target namespace")
	fs.BoolVar(&createNamespace, "create-target-namespace", false, "create the target namespace if it does not exist")
	fs.StringVar(&serviceAccount, "service-account", "", "the name of the service account to impersonate when reconciling this HelmRelease")
	fs.StringVar(&strategy, "reconcile-strategy", "ChartVersion", "the reconcile strategy for helm chart created by the helm release(accepted values: Revision and ChartRevision)")
	fs.DurationVar(&chartInterval, "chart-interval", 0, "the interval of which to check for new chart versions")
	fs.StringSliceVar(&valuesFiles, "values", nil, "local path to values.yaml files, also accepts comma-separated values")
	fs.StringSliceVar(&valuesFrom, "values-from", nil, "a Kubernetes object reference that contains the values.yaml data key in the format '<kind>/<name>', where kind must be one of: (Secret,ConfigMap)")
	fs.StringVar(&chartRef, "chart-ref", "", "the name of the HelmChart resource to use as source for the HelmRelease, in the format '<kind>/<name>.<namespace>', where kind must be one of: (HelmChart)")
	return cmd
}

func newCreateAlertCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var providerRef, severity string
	var eventSources []string
	cmd := &cobra.Command{
		Use:     "alert [name]",
		Short:   "Create or update an Alert",
		Example: "  eddy create alert --event-severity info --event-source Kustomization/flux-system --provider-ref slack flux-system",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if providerRef == "" {
				return errors.New("provider ref is required")
			}
			var sources []notificationv1.CrossNamespaceObjectReference
			for _, es := range eventSources {
				kind, name, ns := kindNameNamespace(es)
				if kind == "" {
					return fmt.Errorf("invalid event source '%s', must be in format <kind>/<name>", es)
				}
				sources = append(sources, notificationv1.CrossNamespaceObjectReference{Kind: kind, Name: name, Namespace: ns})
			}
			if len(sources) == 0 {
				return errors.New("at least one event source is required")
			}
			alert := &notificationv1.Alert{ObjectMeta: om, Spec: notificationv1.AlertSpec{
				ProviderRef: meta.LocalObjectReference{Name: providerRef}, EventSeverity: severity, EventSources: sources,
			}}
			return g.create(cmd, f, creation{obj: alert, kind: notificationv1.AlertKind, created: notificationv1.AlertKind})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&providerRef, "provider-ref", "", "reference to provider")
	fs.StringVar(&severity, "event-severity", "", "severity of events to send alerts for")
	fs.StringSliceVar(&eventSources, "event-source", nil, "sources that should generate alerts (<kind>/<name>), also accepts comma-separated values")
	return cmd
}

func newCreateAlertProviderCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var typ, channel, username, address, secretRef string
	cmd := &cobra.Command{
		Use:     "alert-provider [name]",
		Short:   "Create or update a Provider",
		Example: "  eddy create alert-provider slack --type slack --channel general --address https://hooks.slack.com/services/... --secret-ref webhook-url",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if typ == "" {
				return errors.New("Provider type is required")
			}
			p := &notificationv1.Provider{ObjectMeta: om, Spec: notificationv1.ProviderSpec{
				Type: typ, Channel: channel, Username: username, Address: address,
			}}
			if secretRef != "" {
				p.Spec.SecretRef = &meta.LocalObjectReference{Name: secretRef}
			}
			return g.create(cmd, f, creation{obj: p, kind: notificationv1.ProviderKind, created: notificationv1.ProviderKind})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&typ, "type", "", "type of provider")
	fs.StringVar(&channel, "channel", "", "channel to send messages to in the case of a chat provider")
	fs.StringVar(&username, "username", "", "bot username used by the provider")
	fs.StringVar(&address, "address", "", "path to either the git repository, chat provider or webhook")
	fs.StringVar(&secretRef, "secret-ref", "", "name of secret containing authentication token")
	return cmd
}

// receiverTypes are flux's `create receiver --type` values.
var receiverTypes = []string{
	notificationv1.GenericReceiver, notificationv1.GenericHMACReceiver, notificationv1.GitHubReceiver,
	notificationv1.GitLabReceiver, notificationv1.BitbucketReceiver, notificationv1.HarborReceiver,
	notificationv1.DockerHubReceiver, notificationv1.QuayReceiver, notificationv1.GCRReceiver,
	notificationv1.NexusReceiver, notificationv1.ACRReceiver, notificationv1.CDEventsReceiver,
}

func newCreateReceiverCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var typ, secretRef string
	var events, resources []string
	cmd := &cobra.Command{
		Use:   "receiver [name]",
		Short: "Create or update a Receiver",
		Example: "  eddy create receiver github-receiver --type github --event ping --event push " +
			"--secret-ref webhook-token --resource GitRepository/webapp",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if typ == "" {
				return errors.New("Receiver type is required")
			}
			if !slices.Contains(receiverTypes, typ) {
				return fmt.Errorf("receiver type '%s' is not supported, must be one of: %s", typ, strings.Join(receiverTypes, ", "))
			}
			if secretRef == "" {
				return errors.New("secret ref is required")
			}
			var refs []notificationv1.ReceiverResource
			for _, r := range resources {
				kind, name, ok := strings.Cut(r, "/")
				if !ok || kind == "" {
					return fmt.Errorf("invalid event source '%s', must be in format <kind>/<name>", r)
				}
				refs = append(refs, notificationv1.ReceiverResource{CrossNamespaceObjectReference: notificationv1.CrossNamespaceObjectReference{Kind: kind, Name: name}})
			}
			if len(refs) == 0 {
				return errors.New("atleast one resource is required")
			}
			rcv := &notificationv1.Receiver{ObjectMeta: om, Spec: notificationv1.ReceiverSpec{
				Type: typ, Events: events, Resources: refs, SecretRef: &meta.LocalObjectReference{Name: secretRef},
			}}
			return g.create(cmd, f, creation{obj: rcv, kind: notificationv1.ReceiverKind, created: notificationv1.ReceiverKind,
				done: func(u *ui.UI) error {
					u.Success("generated webhook URL %s", rcv.Status.WebhookPath)
					return nil
				}})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&typ, "type", "", "the receiver type")
	fs.StringVar(&secretRef, "secret-ref", "", "the name of the Secret holding the webhook token")
	fs.StringSliceVar(&events, "event", nil, "also accepts comma-separated values")
	fs.StringSliceVar(&resources, "resource", nil, "also accepts comma-separated values")
	return cmd
}

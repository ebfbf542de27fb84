package render

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderHelm renders a chart as Argo CD's `helm template <chart>
// --name-template <release> --namespace <ns> --kube-version <v>
// [--api-versions ...] [--include-crds] [--skip-tests]` does
// (argocd-contract §1.4, §7.1), with the Helm SDK in client-only mode: no
// cluster, `lookup` empty, no release stored. The objects are the
// manifest (CRDs of crds/ first unless skipCrds) then the hook manifests,
// annotations kept (the sync engine maps helm.sh/hook to Argo CD hooks);
// test hooks are left out only with skipTests. NOTES.txt is not rendered.
// A chart whose Chart.yaml dependencies are not vendored under charts/ is
// refused: Eddy does not run `helm dependency build`.
func renderHelm(ctx context.Context, in Input) ([]*unstructured.Unstructured, error) {
	dir, err := appDir(in.Root, in.Source)
	if err != nil {
		return nil, err
	}
	app := appRel(in.Source)
	h := in.Source.Helm
	if h == nil {
		h = &argov1.ApplicationSourceHelm{}
	}
	name := in.Source.Chart
	if name == "" {
		name = in.Source.Path
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart at '%s': %s", name, scrub(err.Error(), dir))
	}
	if err := checkDependencies(ch); err != nil {
		return nil, err
	}
	vals, err := helmValues(in, app, h, env(in))
	if err != nil {
		return nil, err
	}
	inst, err := templateAction(in, h)
	if err != nil {
		return nil, err
	}
	rel, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("helm template of '%s' failed: %s", name, scrub(err.Error(), dir))
	}
	var out strings.Builder
	out.WriteString(rel.Manifest)
	for _, hook := range rel.Hooks {
		if h.SkipTests && slices.Contains(hook.Events, release.HookTest) {
			continue
		}
		fmt.Fprintf(&out, "\n---\n# Source: %s\n%s\n", hook.Path, hook.Manifest)
	}
	return decodeStream([]byte(out.String()), "helm template output of '"+name+"'")
}

// templateAction is the client-only install `helm template` runs: release
// name helm.releaseName or the app's name, namespace helm.namespace or the
// destination's, kube and API versions from the source, else the cluster's.
func templateAction(in Input, h *argov1.ApplicationSourceHelm) (*action.Install, error) {
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	inst := action.NewInstall(cfg)
	inst.DryRun, inst.DryRunOption = true, "client"
	inst.ClientOnly = true
	inst.Replace = true
	inst.ReleaseName = h.ReleaseName
	if inst.ReleaseName == "" {
		inst.ReleaseName = in.AppName
	}
	inst.Namespace = h.Namespace
	if inst.Namespace == "" {
		inst.Namespace = in.Namespace
	}
	inst.IncludeCRDs = !h.SkipCrds
	inst.SkipSchemaValidation = h.SkipSchemaValidation
	kv := h.KubeVersion
	if kv == "" {
		kv = in.KubeVersion
	}
	if kv != "" {
		v, err := chartutil.ParseKubeVersion(kv)
		if err != nil {
			return nil, fmt.Errorf("could not parse kubernetes version %s: %s", kv, err)
		}
		inst.KubeVersion = v
	}
	inst.APIVersions = chartutil.VersionSet(in.APIVersions)
	if len(h.APIVersions) > 0 {
		inst.APIVersions = chartutil.VersionSet(h.APIVersions)
	}
	return inst, nil
}

// checkDependencies refuses a chart whose Chart.yaml dependencies are not
// all vendored under charts/, naming each missing one with its
// repository.
func checkDependencies(ch *chart.Chart) error {
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	var missing []string
	for _, d := range ch.Metadata.Dependencies {
		if d == nil || have[d.Name] {
			continue
		}
		m := d.Name
		if d.Repository != "" {
			m += " (" + d.Repository + ")"
		}
		missing = append(missing, m)
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("chart %q has dependencies that are not vendored: %s; Eddy does not run helm dependency build", ch.Name(), strings.Join(missing, ", "))
}

// refRoot splits a value file "$ref/path" whose $ref names a multi-source
// ref into that source's root and the path inside it.
func refRoot(in Input, p string) (root, rest string, ok bool) {
	if !strings.HasPrefix(p, "$") {
		return "", "", false
	}
	ref, rest, _ := strings.Cut(p, "/")
	root, ok = in.RefRoots[ref]
	if !ok {
		return "", "", false
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	return root, rest, true
}

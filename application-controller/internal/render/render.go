// Package render turns one Application source into Kubernetes objects the
// way Argo CD's repo-server does (argocd-contract §1.2, §1.4–1.6, §7.1–7.3):
// source-type detection, plain YAML/JSON and jsonnet directories, kustomize
// with the source's overrides, and Helm charts rendered as `helm template`
// renders them. It is pure Go: no git, helm, kustomize or jsonnet process is
// run, nothing is fetched over the network, and nothing outside the
// repository checkout is read.
package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
)

// Input is one source to render.
type Input struct {
	// Root is the directory holding the repository checkout (or, for a
	// Helm-repository chart, the unpacked chart directory).
	Root string
	// Source is the Application source; Source.Path is relative to Root.
	Source argov1.ApplicationSource
	// AppName is the Application's name: the default Helm release name and
	// $ARGOCD_APP_NAME.
	AppName string
	// AppNamespace is the Application's own namespace. Argo CD's
	// $ARGOCD_APP_NAMESPACE is the destination namespace (Namespace), so
	// nothing in rendering reads it; it is kept for callers' messages.
	AppNamespace string
	// Project is the Application's project ($ARGOCD_APP_PROJECT_NAME).
	Project string
	// Namespace is the destination namespace: Helm's --namespace default
	// and $ARGOCD_APP_NAMESPACE; kustomize output is left untouched.
	Namespace string
	// Revision is the resolved revision (commit SHA or chart version), for
	// $ARGOCD_APP_REVISION, _SHORT (7 characters) and _SHORT_8.
	Revision string
	// KubeVersion is the target cluster's version, e.g. "v1.37.2"; ""
	// means Helm's default. source.helm.kubeVersion overrides it.
	KubeVersion string
	// APIVersions are the target cluster's group/versions for Helm's
	// .Capabilities; source.helm.apiVersions overrides them.
	APIVersions []string
	// RefRoots maps a multi-source ref ("$values") to that ref source's
	// Root, for Helm value files written "$values/...".
	RefRoots map[string]string
}

// Result is a rendered source.
type Result struct {
	// Objects in rendered order; `kind: List` items are expanded and null
	// documents dropped.
	Objects []*unstructured.Unstructured
	// SourceType is argov1.SourceTypeHelm, SourceTypeKustomize or
	// SourceTypeDirectory.
	SourceType string
}

// ErrPlugin is returned (wrapped by nothing) for a source with a plugin
// block: Eddy runs no config management plugin sidecars, so such an
// Application gets Argo CD's ComparisonError with this message.
var ErrPlugin = errors.New("config management plugins are not supported by Eddy")

// Render renders in.Source from the checkout at in.Root, with the tool
// DetectType picks after the app path's `.argocd-source.yaml` and
// `.argocd-source-<AppName>.yaml` overrides are merged into the source.
// Errors are stable and name paths as the source writes them or relative
// to the repository root, never the checkout's directory: a path, value
// file, kustomize resource, jsonnet import or symlink that leaves Root is
// refused (argocd-contract §1.2, Argo CD's out-of-bounds checks), a plugin
// source returns ErrPlugin itself, a chart whose dependencies are not
// vendored under charts/ is refused (no `helm dependency build`).
//
// Render returns when ctx ends even if the render does not: neither
// go-jsonnet nor Helm's templates can be stopped, so a render that loops
// goes on in the background (using a CPU) and its result is dropped; the
// error is then ErrTimeout, and the caller should not start the same render
// again (Argo CD bounds the repo-server's manifest call the same way).
func Render(ctx context.Context, in Input) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := renderWithin(ctx, in)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ErrTimeout
		}
		return nil, ctx.Err()
	}
}

// ErrTimeout is Render's error when its context's deadline passed first.
var ErrTimeout = errors.New("rendering the manifests did not finish in time")

// renderWithin is Render without the deadline.
func renderWithin(ctx context.Context, in Input) (*Result, error) {
	root, err := filepath.Abs(in.Root)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, errors.New("repository checkout is missing")
	}
	in.Root = root
	res, err := renderSource(ctx, in)
	if err != nil && !errors.Is(err, ErrPlugin) && !errors.Is(err, ctx.Err()) {
		return nil, errors.New(scrub(err.Error(), root))
	}
	return res, err
}

// renderSource is Render on a checkout whose Root is absolute and resolved.
func renderSource(ctx context.Context, in Input) (*Result, error) {
	if _, err := DetectType(in.Root, in.Source); err != nil {
		return nil, err
	}
	if err := symlinks.check(in.Root); err != nil {
		return nil, err
	}
	var err error
	if in.Source, err = mergeSourceFiles(in.Root, in.Source, in.AppName); err != nil {
		return nil, err
	}
	typ, err := DetectType(in.Root, in.Source)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	switch typ {
	case argov1.SourceTypeHelm:
		objs, err = renderHelm(ctx, in)
	case argov1.SourceTypeKustomize:
		objs, err = renderKustomize(in)
	default:
		objs, err = renderDirectory(in)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Objects: objs, SourceType: typ}, nil
}

// DetectType is the source type Render would use (argocd-contract §1.2):
// a set tool block (helm, kustomize, directory, plugin) wins, and more than
// one is the error "multiple application sources defined: <types>"; a
// plugin block returns SourceTypePlugin with ErrPlugin. Otherwise a chart
// source (Source.Chart) is Helm; a kustomization.yaml, kustomization.yml or
// Kustomization at the path's root is Kustomize (even beside a Chart.yaml);
// a Chart.yaml is Helm; anything else is Directory. A path that is
// absolute, leaves root, or is not a directory is an error naming it.
func DetectType(root string, src argov1.ApplicationSource) (string, error) {
	var set []string
	if src.Kustomize != nil {
		set = append(set, argov1.SourceTypeKustomize)
	}
	if src.Helm != nil {
		set = append(set, argov1.SourceTypeHelm)
	}
	if src.Directory != nil {
		set = append(set, argov1.SourceTypeDirectory)
	}
	if src.Plugin != nil {
		set = append(set, argov1.SourceTypePlugin)
	}
	if len(set) > 1 {
		return "", fmt.Errorf("multiple application sources defined: %s", strings.Join(set, ","))
	}
	if len(set) == 1 && set[0] == argov1.SourceTypePlugin {
		return argov1.SourceTypePlugin, ErrPlugin
	}
	dir, err := appDir(root, src)
	if err != nil {
		return "", err
	}
	if len(set) == 1 {
		return set[0], nil
	}
	if src.Chart != "" {
		return argov1.SourceTypeHelm, nil
	}
	if kustomizationFile(dir) != "" {
		return argov1.SourceTypeKustomize, nil
	}
	if fi, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err == nil && fi.Mode().IsRegular() {
		return argov1.SourceTypeHelm, nil
	}
	return argov1.SourceTypeDirectory, nil
}

// kustomizationFile is the name of dir's kustomization file (the first of
// the names kustomize recognises, in its order), or "".
func kustomizationFile(dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
			return n
		}
	}
	return ""
}

// appDir is the absolute directory of src inside root: root itself for a
// chart source, else root/src.Path, checked as Argo CD checks an app path.
func appDir(root string, src argov1.ApplicationSource) (string, error) {
	if src.Chart != "" {
		return root, nil
	}
	if filepath.IsAbs(src.Path) || strings.HasPrefix(src.Path, "/") {
		return "", fmt.Errorf("%s: app path is absolute", src.Path)
	}
	dir, err := inRoot(root, ".", src.Path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("%s: app path does not exist", src.Path)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s: app path is not a directory", src.Path)
	}
	return dir, nil
}

// appRel is src's path relative to root, slash-separated, "." for root.
func appRel(src argov1.ApplicationSource) string {
	if src.Chart != "" {
		return "."
	}
	return cleanRel(src.Path)
}

// scrub removes root from a message, so that no checkout directory (a
// temporary, random path) reaches a condition.
func scrub(msg, root string) string {
	msg = strings.ReplaceAll(msg, root+string(filepath.Separator), "")
	return strings.ReplaceAll(msg, root, ".")
}

// env is Argo CD's build environment (its build-environment docs):
// the $ARGOCD_APP_* variables of a render.
func env(in Input) map[string]string {
	short := func(n int) string {
		if len(in.Revision) > n {
			return in.Revision[:n]
		}
		return in.Revision
	}
	return map[string]string{
		"ARGOCD_APP_NAME":                   in.AppName,
		"ARGOCD_APP_NAMESPACE":              in.Namespace,
		"ARGOCD_APP_PROJECT_NAME":           in.Project,
		"ARGOCD_APP_REVISION":               in.Revision,
		"ARGOCD_APP_REVISION_SHORT":         short(7),
		"ARGOCD_APP_REVISION_SHORT_8":       short(8),
		"ARGOCD_APP_SOURCE_REPO_URL":        in.Source.RepoURL,
		"ARGOCD_APP_SOURCE_PATH":            in.Source.Path,
		"ARGOCD_APP_SOURCE_TARGET_REVISION": in.Source.TargetRevision,
	}
}

// envsubst expands $VAR and ${VAR} from vars as Argo CD does: an unknown
// variable becomes "", and "$$" is a literal "$".
func envsubst(s string, vars map[string]string) string {
	return os.Expand(s, func(k string) string {
		if k == "$" {
			return "$"
		}
		return vars[k]
	})
}

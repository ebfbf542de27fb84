package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/cli/internal/inspect"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// localBuild are the flags of `build kustomization` and `diff kustomization`.
type localBuild struct {
	path, kustomizationFile string
	dryRun, strictSubst     bool
}

// bind adds the flags both commands have. Flux compatible: substitution
// is not strict unless --strict-substitute (the controller's default is).
func (lb *localBuild) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&lb.path, "path", "", "path to a local directory that matches the specified Kustomization.spec.path")
	cmd.Flags().StringVar(&lb.kustomizationFile, "kustomization-file", "", "path to the Flux Kustomization YAML file")
	cmd.Flags().BoolVar(&lb.strictSubst, "strict-substitute", false, "when enabled, the post build substitutions will fail if a var without a default value is declared in files but is missing from the input vars")
}

func newBuildCommand(g *globalFlags) *cobra.Command {
	build := &cobra.Command{Use: "build", Short: "Build a Kustomization locally, as the cluster would"}
	var lb localBuild
	ks := &cobra.Command{
		Use:     "kustomization [name]",
		Aliases: []string{"ks"},
		Short:   "Build a Kustomization from a local directory",
		Long: `Build a Kustomization from a local directory as kustomize-controller builds it: the
directory stands for spec.path; a kustomization.yaml is generated where there is none, the
spec's overlays are merged and postBuild substitution applied (substituteFrom ConfigMaps and
Secrets are read from the cluster, unless --dry-run). The objects are printed as YAML.`,
		Example: `  # Build the local manifests as the cluster would
  eddy build kustomization my-app --path ./path/to/local/manifests

  # Build without a cluster, from a Kustomization file
  eddy build kustomization my-app --path ./manifests --kustomization-file ./my-app.yaml --dry-run`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return errors.New("kustomization name is required")
			}
			if lb.dryRun && lb.kustomizationFile == "" {
				return errors.New("dry-run mode requires a kustomization file")
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			var c client.Client
			if !lb.dryRun {
				var err error
				if c, err = g.client(); err != nil {
					return err
				}
			}
			_, objs, err := lb.build(ctx, c, args[0], g.namespace)
			if err != nil {
				return err
			}
			out, err := objectsYAML(objs)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	lb.bind(ks)
	ks.Flags().BoolVar(&lb.dryRun, "dry-run", false, "build without a cluster: the Kustomization from --kustomization-file, no substituteFrom")
	build.AddCommand(ks, newBuildArtifactCommand())
	return build
}

// build builds lb.path as the Kustomization namespace/name would be built:
// the Kustomization is read from --kustomization-file (with the status of
// the cluster's, when c is set and has it), else from the cluster (c);
// substituteFrom is read from the cluster unless c is nil
// (--dry-run: only spec.postBuild.substitute counts). The objects carry
// the owner labels the controller sets before it applies them.
func (lb *localBuild) build(ctx context.Context, c client.Client, name, namespace string) (*kustomizev1.Kustomization, []*unstructured.Unstructured, error) {
	if lb.path == "" {
		return nil, nil, fmt.Errorf("invalid resource path %q: set --path to a local directory", lb.path)
	}
	src, err := inspect.ReadLocalSource(lb.path)
	if err != nil {
		return nil, nil, err
	}
	k := &kustomizev1.Kustomization{}
	if lb.kustomizationFile != "" {
		if k, err = readKustomizationFile(lb.kustomizationFile, name, namespace); err != nil {
			return nil, nil, err
		}
		// Flux compatible: the live object's status (its inventory, so
		// that diff lists deletions) goes with the file's spec.
		live := &kustomizev1.Kustomization{}
		if c != nil && c.Get(ctx, client.ObjectKeyFromObject(k), live) == nil {
			k.Status = live.Status
		}
	} else if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, k); err != nil {
		return nil, nil, err
	}
	var r client.Reader
	if c != nil {
		r = c
	}
	objs, err := inspect.Build(ctx, r, k, src.Tree, src.Path, lb.strictSubst) // the local directory is spec.path
	if err != nil && src.Confined {
		return nil, nil, fmt.Errorf("%w (no Git repository holds %s, nor the working directory: only the files under it were read; run eddy inside the repository)", err, lb.path)
	}
	if err != nil {
		return nil, nil, err
	}
	return k, objs, nil
}

// readKustomizationFile returns the Kustomization name of namespace (or
// of no namespace: then it gets namespace) among the YAML or JSON
// documents of file. Flux compatible: a file may hold several objects, as
// a cluster directory's files often do.
func readKustomizationFile(file, name, namespace string) (*kustomizev1.Kustomization, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("invalid kustomization file %q: cannot be read", file)
	}
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		// Each document as a map first: other kinds need not fit a Kustomization.
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("invalid kustomization file %q: it holds no %s Kustomization %q in namespace %q", file, kustomizev1.GroupVersion.Group, name, namespace)
		} else if err != nil {
			return nil, fmt.Errorf("invalid kustomization file %q: not YAML or JSON: %s", file, strings.ReplaceAll(err.Error(), "\n", " "))
		}
		if u.GetKind() != kustomizev1.KustomizationKind || !strings.HasPrefix(u.GetAPIVersion(), kustomizev1.GroupVersion.Group+"/") ||
			u.GetName() != name || (u.GetNamespace() != namespace && u.GetNamespace() != "") {
			continue
		}
		k := &kustomizev1.Kustomization{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, k); err != nil {
			return nil, fmt.Errorf("invalid kustomization file %q: Kustomization %q: %s", file, name, strings.ReplaceAll(err.Error(), "\n", " "))
		}
		k.Namespace = namespace
		return k, nil
	}
}

// objectsYAML is each object as a YAML document behind "---".
func objectsYAML(objs []*unstructured.Unstructured) ([]byte, error) {
	docs, err := kustomize.YAMLStream(objs)
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	return append([]byte("---\n"), docs...), nil
}

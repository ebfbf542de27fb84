package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func newTreeCommand(g *globalFlags) *cobra.Command {
	tree := &cobra.Command{Use: "tree", Short: "Print the resources reconciled by an Eddy object"}
	var compact bool
	var output string
	ks := &cobra.Command{
		Use:     "kustomization [name]",
		Aliases: []string{"ks"},
		Short:   "Print the resource inventory of a Kustomization",
		Example: `  # Print the resources managed by the root Kustomization
  eddy tree kustomization flux-system

  # Print only the Flux objects it manages
  eddy tree kustomization flux-system --compact`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return errors.New("kustomization name is required")
			}
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: use json or yaml, or leave it out for the tree", output)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			k := &kustomizev1.Kustomization{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: g.namespace, Name: args[0]}, k); err != nil {
				return err
			}
			root := &treeNode{Resource: ssa.ObjMeta{Namespace: k.Namespace, Name: k.Name,
				GroupKind: schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: "Kustomization"}}}
			if err := treeKustomization(ctx, c, root, k, compact); err != nil {
				return err
			}
			var out []byte
			switch output {
			case "json":
				out, err = json.MarshalIndent(root, "", "  ")
			case "yaml":
				out, err = yaml.Marshal(root)
			default:
				out = []byte(root.print())
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return err
		},
	}
	ks.Flags().BoolVar(&compact, "compact", false, "list Flux resources only.")
	ks.Flags().StringVarP(&output, "output", "o", "", "the format in which the tree should be printed. can be 'json' or 'yaml'")
	tree.AddCommand(ks)
	return tree
}

// treeNode is one object of a tree and what it manages. Its JSON shape is
// flux's (cli-utils' ObjMetadata without tags: Namespace, Name, GroupKind).
type treeNode struct {
	Resource  ssa.ObjMeta `json:"resource"`
	Resources []*treeNode `json:"resources,omitempty"`
}

func (t *treeNode) add(m ssa.ObjMeta) *treeNode {
	n := &treeNode{Resource: m}
	t.Resources = append(t.Resources, n)
	return n
}

// print draws the tree as flux does: the root, then each child behind
// "├── " or "└── " (the last), indented by "│   " or "    ".
func (t *treeNode) print() string {
	var b strings.Builder
	b.WriteString(t.Resource.String() + "\n")
	t.printChildren(&b, "")
	return b.String()
}

func (t *treeNode) printChildren(b *strings.Builder, indent string) {
	for i, c := range t.Resources {
		last := i == len(t.Resources)-1
		mark, next := "├── ", "│   "
		if last {
			mark, next = "└── ", "    "
		}
		b.WriteString(indent + mark + c.Resource.String() + "\n")
		c.printChildren(b, indent+next)
	}
}

// compactGroup is flux's --compact filter: objects of the toolkit's groups.
const compactGroup = "toolkit.fluxcd.io"

// treeKustomization adds k's inventory under node: nested Kustomizations
// (not of a remote cluster) are walked, HelmReleases expanded from their
// Helm storage. Flux compatible (flux tree kustomization).
func treeKustomization(ctx context.Context, c client.Client, node *treeNode, k *kustomizev1.Kustomization, compact bool) error {
	if k.Status.Inventory == nil {
		return nil
	}
	for _, e := range k.Status.Inventory.Entries {
		m, err := ssa.ParseID(e.ID)
		if err != nil {
			return err
		}
		if compact && !strings.Contains(m.GroupKind.Group, compactGroup) {
			continue
		}
		isKs := m.GroupKind == schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: "Kustomization"}
		if isKs && m.Namespace == k.Namespace && m.Name == k.Name {
			continue // a Kustomization that manages itself
		}
		child := node.add(m)
		switch {
		case m.GroupKind == schema.GroupKind{Group: helmv2.GroupVersion.Group, Kind: "HelmRelease"}:
			objs, err := helmReleaseObjects(ctx, c, client.ObjectKey{Namespace: m.Namespace, Name: m.Name})
			if err != nil {
				return err
			}
			for _, o := range objs {
				if !compact || strings.Contains(o.GroupKind.Group, compactGroup) {
					child.add(o)
				}
			}
		case isKs && k.Spec.KubeConfig == nil:
			nested := &kustomizev1.Kustomization{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, nested); err != nil {
				return fmt.Errorf("failed to find object: %w", err)
			}
			if err := treeKustomization(ctx, c, child, nested, compact); err != nil {
				return err
			}
		}
	}
	return nil
}

// helmReleaseObjects lists the objects of a HelmRelease's latest release,
// read from its Helm storage Secret sh.helm.release.v1.<name>.v<version>
// in status.storageNamespace. None for a release of a remote cluster, one
// not installed yet, or whose Secret is gone. Objects without a namespace
// that are namespaced get the release's.
func helmReleaseObjects(ctx context.Context, c client.Client, key client.ObjectKey) ([]ssa.ObjMeta, error) {
	hr := &helmv2.HelmRelease{}
	if err := c.Get(ctx, key, hr); err != nil {
		return nil, err
	}
	if hr.Spec.KubeConfig != nil || hr.Status.StorageNamespace == "" || len(hr.Status.History) == 0 {
		return nil, nil
	}
	latest := hr.Status.History[0]
	secret := &corev1.Secret{}
	name := fmt.Sprintf("sh.helm.release.v1.%s.v%d", latest.Name, latest.Version)
	if err := c.Get(ctx, client.ObjectKey{Namespace: hr.Status.StorageNamespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to find the Helm storage object for HelmRelease '%s': %w", key, err)
	}
	objs, err := decodeHelmRelease(secret.Data["release"])
	if err != nil {
		return nil, fmt.Errorf("failed to decode the Helm storage object for HelmRelease '%s': %w", key, err)
	}
	var out []ssa.ObjMeta
	for _, u := range objs {
		if u.GetNamespace() == "" {
			gvk := u.GroupVersionKind()
			if mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && mapping.Scope.Name() == "namespace" {
				u.SetNamespace(latest.Namespace)
			}
		}
		out = append(out, ssa.MetaOf(u))
	}
	return out, nil
}

// decodeHelmRelease reads the objects of a Helm storage record: the
// Secret's "release" value is base64 of (optionally gzipped) JSON whose
// "manifest" is the rendered multi-document YAML.
func decodeHelmRelease(data []byte) ([]*unstructured.Unstructured, error) {
	if len(data) == 0 {
		return nil, errors.New("no release data")
	}
	b, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b, 0x08}) {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if b, err = io.ReadAll(r); err != nil {
			return nil, err
		}
	}
	var rls struct {
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal(b, &rls); err != nil {
		return nil, err
	}
	return readObjects(strings.NewReader(rls.Manifest))
}

// readObjects decodes a multi-document YAML stream; empty documents are
// skipped.
func readObjects(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
}

// Package inspect reads what Eddy's objects applied, for `eddy tree`,
// `eddy diff` and `eddy ui`: the resource tree of a Kustomization or
// HelmRelease with each object's kstatus health, and the diff of a
// Kustomization's desired state (built from its source artifact) against
// the cluster.
package inspect

import (
	"context"
	"fmt"
	"strings"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/pkg/health"
	"github.com/eddyops/eddy/pkg/helmstorage"
	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kstatus health of a Node (sigs.k8s.io/cli-utils kstatus), and the
// messages of the nodes Tree cannot read.
const (
	HealthCurrent     = "Current"
	HealthInProgress  = "InProgress"
	HealthFailed      = "Failed"
	HealthTerminating = "Terminating"
	HealthNotFound    = "NotFound"
	HealthUnknown     = "Unknown"

	// MessageNotReadable is the message of a node the user may not get (403).
	MessageNotReadable = "not readable"
	// MessageRemote is the message of an object of a Kustomization or
	// HelmRelease that applies to another cluster (spec.kubeConfig).
	MessageRemote = "in a remote cluster"
)

// Node is one object of a tree and, for a Kustomization or HelmRelease,
// what it applied (Children, in inventory or manifest order).
type Node struct {
	APIVersion string `json:"apiVersion"` // e.g. "apps/v1"
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"` // "" for cluster-scoped objects
	Name       string `json:"name"`
	// Health is one of the Health constants ("" with TreeOptions.NoHealth);
	// Message says why (kstatus's message, MessageNotReadable, …).
	Health   string  `json:"health,omitempty"`
	Message  string  `json:"message,omitempty"`
	Children []*Node `json:"children,omitempty"`
}

// String is `Kind/namespace/name`, or `Kind/name` for a cluster-scoped object.
func (n *Node) String() string { return n.Meta().String() }

// Meta is the node's kind (group from APIVersion), namespace and name.
func (n *Node) Meta() ssa.ObjMeta {
	gv, _ := schema.ParseGroupVersion(n.APIVersion)
	return ssa.ObjMeta{Namespace: n.Namespace, Name: n.Name, GroupKind: schema.GroupKind{Group: gv.Group, Kind: n.Kind}}
}

// TreeOptions change what Tree reads.
type TreeOptions struct {
	// NoHealth leaves Health and Message empty and reads no inventory
	// object other than nested Kustomizations and HelmReleases, failing when
	// one cannot be read, as `flux tree` does (`eddy tree`).
	NoHealth bool
}

var (
	kustomizationGK = schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: kustomizev1.KustomizationKind}
	helmReleaseGK   = schema.GroupKind{Group: helmv2.GroupVersion.Group, Kind: helmv2.HelmReleaseKind}
)

// Tree returns the Kustomization or HelmRelease kind (namespace, name) and
// what it applied: a Kustomization's status.inventory, nested
// Kustomizations walked (unless the parent applies to a remote cluster,
// MessageRemote), HelmReleases expanded from the Helm storage Secret of
// their latest release; each node with its live kstatus health. A node the
// user may not get is Health Unknown with MessageNotReadable, one deleted
// since is NotFound; neither is an error. Errors: kind neither
// "Kustomization" nor "HelmRelease"; the root's Get error (NotFound,
// Forbidden: apierrors tells); an inventory id that does not parse; an API
// error other than 403/404 on an object or a Helm storage Secret.
func Tree(ctx context.Context, c client.Client, kind, namespace, name string) (*Node, error) {
	return TreeWithOptions(ctx, c, kind, namespace, name, TreeOptions{})
}

// TreeWithOptions is Tree with opts.
func TreeWithOptions(ctx context.Context, c client.Client, kind, namespace, name string, opts TreeOptions) (*Node, error) {
	k, ok := kinds.ByKind(kind)
	if !ok || !k.Applier {
		return nil, fmt.Errorf("kind %q has no tree: use Kustomization or HelmRelease", kind)
	}
	gvk := k.GVK()
	root := &Node{APIVersion: gvk.GroupVersion().String(), Kind: kind, Namespace: namespace, Name: name}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return nil, err
	}
	w := &walker{c: c, opts: opts, path: map[string]bool{}}
	w.setHealth(root, u)
	if err := w.expand(ctx, root, u); err != nil {
		return nil, err
	}
	return root, nil
}

type walker struct {
	c    client.Client
	opts TreeOptions
	// path holds the Kustomizations and HelmReleases being expanded, root
	// down: one met again is a cycle (A applies B, B applies A), shown
	// but not walked again.
	path map[string]bool
}

// MessageCycle is the message of a Kustomization or HelmRelease that its
// own descendants apply: shown once more, not walked again.
const MessageCycle = "applied by its own descendant: not expanded again"

func (w *walker) setHealth(n *Node, u *unstructured.Unstructured) {
	if w.opts.NoHealth {
		return
	}
	res, err := health.Compute(u)
	if err != nil {
		n.Health, n.Message = HealthUnknown, err.Error()
		return
	}
	n.Health, n.Message = string(res.Status), res.Message
}

// expand adds the children of n, whose live object is u (a Kustomization
// or a HelmRelease; other kinds have none).
func (w *walker) expand(ctx context.Context, n *Node, u *unstructured.Unstructured) error {
	key := n.String()
	if w.path[key] {
		if !w.opts.NoHealth {
			n.Message = strings.TrimPrefix(n.Message+"; "+MessageCycle, "; ")
		}
		return nil
	}
	w.path[key] = true
	defer delete(w.path, key)
	switch u.GroupVersionKind().GroupKind() {
	case kustomizationGK:
		k := &kustomizev1.Kustomization{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, k); err != nil {
			return fmt.Errorf("Kustomization %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		return w.kustomization(ctx, n, k)
	case helmReleaseGK:
		hr := &helmv2.HelmRelease{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hr); err != nil {
			return fmt.Errorf("HelmRelease %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		return w.helmRelease(ctx, n, hr)
	}
	return nil
}

func (w *walker) kustomization(ctx context.Context, n *Node, k *kustomizev1.Kustomization) error {
	if k.Status.Inventory == nil {
		return nil
	}
	remote := k.Spec.KubeConfig != nil
	for _, e := range k.Status.Inventory.Entries {
		m, err := ssa.ParseID(e.ID)
		if err != nil {
			return err
		}
		if m.GroupKind == kustomizationGK && m.Namespace == k.Namespace && m.Name == k.Name {
			continue // a Kustomization that manages itself
		}
		gvk := m.GroupKind.WithVersion(e.Version)
		child := &Node{APIVersion: gvk.GroupVersion().String(), Kind: m.GroupKind.Kind, Namespace: m.Namespace, Name: m.Name}
		n.Children = append(n.Children, child)
		if remote {
			if !w.opts.NoHealth {
				child.Health, child.Message = HealthUnknown, MessageRemote
			}
			continue
		}
		applier, known := kinds.ByGroupKind(m.GroupKind)
		walk := known && applier.Applier
		if w.opts.NoHealth && !walk {
			continue
		}
		live, err := w.get(ctx, child, gvk)
		if err != nil {
			return err
		}
		if live != nil {
			w.setHealth(child, live)
			if walk {
				if err := w.expand(ctx, child, live); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// get reads the object of n; nil (with n's health set) when it is gone,
// not readable or of a kind the cluster does not serve.
func (w *walker) get(ctx context.Context, n *Node, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := w.c.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Name}, u)
	if err != nil && w.opts.NoHealth {
		return nil, fmt.Errorf("failed to find object: %w", err) // as flux tree
	}
	switch {
	case err == nil:
		return u, nil
	case apierrors.IsNotFound(err):
		n.Health, n.Message = HealthNotFound, ""
	case apierrors.IsForbidden(err):
		n.Health, n.Message = HealthUnknown, MessageNotReadable
	case meta.IsNoMatchError(err):
		n.Health, n.Message = HealthUnknown, fmt.Sprintf("kind %s not served by the cluster", gvk.GroupKind())
	default:
		return nil, fmt.Errorf("failed to get %s: %w", n, err)
	}
	return nil, nil
}

// helmRelease adds the objects of the HelmRelease's latest release, read
// from its Helm storage Secret sh.helm.release.v1.<name>.v<version> in
// status.storageNamespace. None for a release of a remote cluster, one not
// installed yet, or whose Secret is gone; a Secret the user may not read
// is said in n.Message. Objects without a namespace that are namespaced
// get the release's.
func (w *walker) helmRelease(ctx context.Context, n *Node, hr *helmv2.HelmRelease) error {
	key := client.ObjectKeyFromObject(hr)
	if hr.Spec.KubeConfig != nil || hr.Status.StorageNamespace == "" || len(hr.Status.History) == 0 {
		return nil
	}
	latest := hr.Status.History[0]
	secret := &corev1.Secret{}
	name := helmstorage.SecretName(latest.Name, latest.Version)
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: hr.Status.StorageNamespace, Name: name}, secret); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsForbidden(err) && !w.opts.NoHealth:
			n.Message = strings.TrimPrefix(n.Message+"; Helm storage "+MessageNotReadable, "; ")
			return nil
		}
		return fmt.Errorf("failed to find the Helm storage object for HelmRelease '%s': %w", key, err)
	}
	objs, err := helmstorage.Objects(secret.Data["release"])
	if err != nil {
		return fmt.Errorf("failed to decode the Helm storage object for HelmRelease '%s': %w", key, err)
	}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		if u.GetNamespace() == "" {
			if mapping, err := w.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				u.SetNamespace(latest.Namespace)
			}
		}
		child := &Node{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		n.Children = append(n.Children, child)
		if w.opts.NoHealth {
			continue
		}
		live, err := w.get(ctx, child, gvk)
		if err != nil {
			return err
		}
		if live != nil {
			w.setHealth(child, live)
		}
	}
	return nil
}

package dev

import (
	"context"
	"fmt"
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/cli/internal/ui"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// repair puts back what the running environment s of the state directory
// dir created in the cluster and what is gone or was changed: the
// flux-system namespace (after waiting for a terminating one to go), the
// install bundle's objects, eddy dev's Secrets, the Receiver HookReceiver
// and, when missing, the sync objects of the source recorded in sync.json.
// It says what it re-created. A Kustomization that prunes flux-system (as
// Flux would, when a repository declared it) takes all of this away; the
// controllers then exit until the namespace of their leases is back.
func repair(ctx context.Context, c client.Client, u *ui.UI, dir, version string, s *State, timeout time.Duration) error {
	ns := &corev1.Namespace{}
	err := c.Get(ctx, client.ObjectKey{Name: Namespace}, ns)
	if err == nil && ns.DeletionTimestamp != nil {
		// Its objects' finalizers wait for controllers that cannot take their
		// leases in a terminating namespace: nothing would ever remove them.
		n, ferr := dropFinalizers(ctx, c)
		if ferr != nil {
			return ferr
		}
		if n > 0 {
			u.Warning("namespace %s is being deleted: removed the finalizers of its %d Flux object(s), which no controller can handle without its lease there", Namespace, n)
		}
		stop := u.Spin("namespace " + Namespace + " is being deleted: waiting for it to go, to re-create it")
		werr := wait.PollUntilContextTimeout(ctx, status.PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
			err = c.Get(ctx, client.ObjectKey{Name: Namespace}, ns)
			return apierrors.IsNotFound(err), nil
		})
		stop()
		if werr != nil {
			return fmt.Errorf("namespace %s is still being deleted after %s: run `eddy dev up` again once it is gone", Namespace, timeout)
		}
	}
	recreate := apierrors.IsNotFound(err)
	if err != nil && !recreate {
		return fmt.Errorf("namespace %s: %w", Namespace, err)
	}
	if err := reinstall(ctx, c, version, s); err != nil {
		return err
	}
	token, err := WebhookToken(dir)
	if err != nil {
		return err
	}
	if err := applySecret(ctx, c, WebhookSecret, map[string]string{"token": token}); err != nil {
		return err
	}
	if s.AlertsSink != "" {
		if err := applySecret(ctx, c, AlertsSinkSecret, map[string]string{"address": s.AlertsSink}); err != nil {
			return err
		}
	}
	if err := ApplyHookReceiver(ctx, c); err != nil {
		return err
	}
	src := readSync(dir)
	missing, err := syncMissing(ctx, c)
	if err != nil || !missing || src == nil {
		if recreate {
			u.Success("re-created namespace %s with eddy dev's objects; the controllers take their leases again when they restart", Namespace)
		}
		return err
	}
	if err := ApplySync(ctx, c, src); err != nil {
		return err
	}
	u.Success("re-created namespace %s, eddy dev's objects and the sync of %s (branch %s, path %s); the controllers take their leases again when they restart",
		Namespace, src.URL, src.Branch, src.Path)
	return nil
}

// reinstall applies the install bundle of the running environment s again:
// the controllers' pods of --node real, else their Deployments of 0
// replicas with the CRDs and the namespace.
func reinstall(ctx context.Context, c client.Client, version string, s *State) error {
	if s.Node == NodeReal {
		objs, err := nodeBundle(s, version)
		if err == nil {
			_, err = install.Apply(ctx, c, objs)
		}
		return err
	}
	objs, err := install.Objects(BundleOptions(version, s.OptionalComponents...))
	if err != nil {
		return err
	}
	return installBundle(ctx, c, objs)
}

// syncMissing reports whether the GitRepository or the Kustomization
// flux-system/flux-system is gone.
func syncMissing(ctx context.Context, c client.Client) (bool, error) {
	key := client.ObjectKey{Namespace: Namespace, Name: SyncName}
	for _, obj := range []client.Object{&sourcev1.GitRepository{}, &kustomizev1.Kustomization{}} {
		if err := c.Get(ctx, key, obj); apierrors.IsNotFound(err) {
			return true, nil
		} else if err != nil {
			return false, err
		}
	}
	return false, nil
}

// dropFinalizers removes the finalizers of the objects of Flux's kinds
// (the toolkit.fluxcd.io groups) in Namespace and returns how many it
// changed.
func dropFinalizers(ctx context.Context, c client.Client) (int, error) {
	n := 0
	for gvk := range scheme.New().AllKnownTypes() {
		if !strings.HasSuffix(gvk.Group, ".toolkit.fluxcd.io") || !strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk)
		if err := c.List(ctx, list, client.InNamespace(Namespace)); err != nil {
			if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue // a version the cluster does not serve
			}
			return n, fmt.Errorf("listing %s in %s: %w", gvk.Kind, Namespace, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if len(obj.Finalizers) == 0 {
				continue
			}
			patch := client.MergeFrom(obj.DeepCopy())
			obj.Finalizers = nil
			if err := c.Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
				return n, fmt.Errorf("removing the finalizers of %s %s/%s: %w", strings.TrimSuffix(gvk.Kind, "List"), obj.Namespace, obj.Name, err)
			}
			n++
		}
	}
	return n, nil
}

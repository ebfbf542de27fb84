package controller

import (
	"context"
	"errors"
	"fmt"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/remotecluster"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// workloadIdentityRefusal is the message of a spec.kubeConfig.configMapRef:
// Flux gets the remote cluster's credentials from a cloud provider's
// identity service with it, and there is none here.
const workloadIdentityRefusal = "spec.kubeConfig.configMapRef (workload identity) is not supported by Eddy yet: " +
	"it needs a cloud provider's identity service, which Eddy does not implement; use spec.kubeConfig.secretRef"

// kubeConfigRefusal stalls a HelmRelease whose spec.kubeConfig Eddy cannot
// ever use (configMapRef), before anything else is done; nil otherwise.
func kubeConfigRefusal(obj *helmv2.HelmRelease) *failure {
	if kc := obj.Spec.KubeConfig; kc != nil && kc.ConfigMapRef != nil && kc.SecretRef == nil {
		return fail(meta.ReconciliationFailedReason, workloadIdentityRefusal).Stall()
	}
	return nil
}

// clusterConfig is the rest.Config of the cluster obj's release lives in:
// the manager's, or that of the kubeconfig in the Secret
// spec.kubeConfig.secretRef names (key secretRef.key, else 'value', else
// 'value.yaml'), which must be self-contained (remotecluster.RESTConfig).
// The release, its storage and its waits are then all on that cluster, as
// in Flux. Flux compatible messages; an error that retrying will not mend
// (the Secret or its key missing, a kubeconfig refused) is an
// ErrKubeConfig.
func (r *HelmReleaseReconciler) clusterConfig(ctx context.Context, obj *helmv2.HelmRelease) (*rest.Config, error) {
	kc := obj.Spec.KubeConfig
	if kc == nil {
		if r.Config == nil {
			return nil, errors.New("no REST configuration")
		}
		return rest.CopyConfig(r.Config), nil
	}
	switch {
	case kc.ConfigMapRef != nil && kc.SecretRef == nil:
		return nil, remotecluster.Refuse(workloadIdentityRefusal)
	case kc.SecretRef == nil || kc.ConfigMapRef != nil:
		return nil, errors.New("exactly one of .spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be set")
	}
	name := types.NamespacedName{Namespace: obj.Namespace, Name: kc.SecretRef.Name}
	var secret corev1.Secret
	if err := r.Get(ctx, name, &secret); err != nil {
		err = fmt.Errorf("could not get KubeConfig secret '%s': %w", name, err)
		if apierrors.IsNotFound(err) {
			return nil, remotecluster.Refuse("%s", err)
		}
		return nil, err
	}
	var data []byte
	switch key := kc.SecretRef.Key; {
	case key != "":
		if data = secret.Data[key]; data == nil {
			return nil, remotecluster.Refuse("KubeConfig secret '%s' does not contain a '%s' key with data", name, key)
		}
	case secret.Data["value"] != nil:
		data = secret.Data["value"]
	case secret.Data["value.yaml"] != nil:
		data = secret.Data["value.yaml"]
	default:
		return nil, remotecluster.Refuse("KubeConfig secret '%s' does not contain a 'value' or 'value.yaml' key with data", name)
	}
	cfg, _, err := remotecluster.RESTConfig(data, name.String(), r.KubeConfig, ControllerName)
	return cfg, err
}

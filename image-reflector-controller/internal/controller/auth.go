package controller

import (
	"context"
	"fmt"
	"net/url"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/image-reflector-controller/internal/registry"
	"github.com/eddyops/eddy/pkg/cloudauth"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/secretopts"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// registryOptions reads what repo's spec names (secretRef, the
// ServiceAccount's imagePullSecrets, certSecretRef, proxySecretRef) into
// the options of its registry calls; with a cloud provider its token
// service's credentials replace the pull secrets, as Flux's. Errors name
// the objects and keys, never their content.
func registryOptions(ctx context.Context, c client.Reader, repo *imagev1.ImageRepository) (registry.Options, error) {
	o := registry.Options{Insecure: repo.Spec.Insecure, Timeout: repo.GetTimeout()}
	if repo.GetProvider() == imagev1.GenericProvider {
		kc, err := pullSecretKeychain(ctx, c, repo)
		if err != nil {
			return o, err
		}
		o.Keychain = kc
	}
	ns := repo.Namespace
	if ref := repo.Spec.CertSecretRef; ref != nil {
		s, err := getSecret(ctx, c, ns, ref.Name)
		if err != nil {
			return o, err
		}
		if o.TLS, err = registry.TLSFromSecretData(s.Data); err != nil {
			return o, fmt.Errorf("secret '%s/%s': %w", ns, ref.Name, err)
		}
	}
	if ref := repo.Spec.ProxySecretRef; ref != nil {
		s, err := getSecret(ctx, c, ns, ref.Name)
		if err != nil {
			return o, err
		}
		if o.Proxy, err = registry.ProxyFromSecretData(s.Data); err != nil {
			return o, fmt.Errorf("secret '%s/%s': %w", ns, ref.Name, err)
		}
	}
	if repo.GetProvider() != imagev1.GenericProvider {
		kc, err := providerKeychain(ctx, repo, o.Proxy)
		if err != nil {
			return o, err
		}
		o.Keychain = kc
	}
	return o, nil
}

// pullSecretKeychain reads spec.secretRef and the ServiceAccount's
// imagePullSecrets, in that order; nil when there are none.
func pullSecretKeychain(ctx context.Context, c client.Reader, repo *imagev1.ImageRepository) (registry.Keychain, error) {
	ns := repo.Namespace
	var docs [][]byte
	if ref := repo.Spec.SecretRef; ref != nil {
		s, err := getSecret(ctx, c, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		d, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			return nil, fmt.Errorf("secret '%s/%s' has no %s key", ns, ref.Name, corev1.DockerConfigJsonKey)
		}
		docs = append(docs, d)
	}
	if name := repo.Spec.ServiceAccountName; name != "" {
		sa := &corev1.ServiceAccount{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sa); err != nil {
			return nil, fmt.Errorf("getting service account '%s/%s': %s", ns, name, reasonOf(err))
		}
		for _, ps := range sa.ImagePullSecrets {
			s, err := getSecret(ctx, c, ns, ps.Name)
			if err != nil {
				return nil, err
			}
			if d, ok := s.Data[corev1.DockerConfigJsonKey]; ok {
				docs = append(docs, d)
			}
		}
	}
	if len(docs) == 0 {
		return nil, nil
	}
	return registry.NewKeychain(docs...)
}

// providerKeychain holds spec.provider's credentials for the registry of
// spec.image, from the cloud's token service reached through proxy (as
// Flux: spec.proxySecretRef's, not certSecretRef's TLS). Every provider
// but generic is passed to package cloudauth, which refuses those it does
// not implement; its errors carry no token.
func providerKeychain(ctx context.Context, repo *imagev1.ImageRepository, proxy *url.URL) (registry.Keychain, error) {
	hc, err := cloudauth.HTTPClient(nil, proxy)
	if err != nil {
		return nil, err
	}
	if t := repo.GetTimeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	creds, err := cloudauth.RegistryCredentials(ctx, repo.GetProvider(), repo.Spec.Image, hc)
	if err != nil {
		return nil, err
	}
	ac := authn.AuthConfig{Username: creds.Username, Password: creds.Password}
	if creds.Username == "" {
		ac = authn.AuthConfig{RegistryToken: creds.Password}
	}
	host := secretopts.RegistryHost(registry.Host(repo.Spec.Image))
	return registry.Keychain{secretopts.Credentials{host: ac}}, nil
}

// identityFailure refuses spec.serviceAccountName with a cloud provider
// (object-level workload identity), stalled as Flux with its feature gate
// off, its default; where names the field for the message.
func identityFailure(repo *imagev1.ImageRepository, where string) *reconciler.Failure {
	p := repo.GetProvider()
	if p == imagev1.GenericProvider || repo.Spec.ServiceAccountName == "" {
		return nil
	}
	return reconciler.Fail(meta.FeatureGateDisabledReason, "%s with provider '%s' is not supported: "+
		"Eddy implements no object-level workload identity; the controller's own identity is used without it", where, p).Stall()
}

func getSecret(ctx context.Context, c client.Reader, ns, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return nil, fmt.Errorf("getting secret '%s/%s': %s", ns, name, reasonOf(err))
	}
	return s, nil
}

// reasonOf is a stable text for an API error.
func reasonOf(err error) string {
	if apierrors.IsNotFound(err) {
		return "not found"
	}
	if apierrors.IsForbidden(err) {
		return "forbidden"
	}
	return err.Error()
}

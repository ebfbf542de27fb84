package controller

import (
	"context"
	"fmt"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/image-reflector-controller/internal/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// registryOptions reads what repo's spec names (secretRef, the
// ServiceAccount's imagePullSecrets, certSecretRef, proxySecretRef) into
// the options of its registry calls. Errors name the objects and keys,
// never their content.
func registryOptions(ctx context.Context, c client.Reader, repo *imagev1.ImageRepository) (registry.Options, error) {
	o := registry.Options{Insecure: repo.Spec.Insecure, Timeout: repo.GetTimeout()}
	ns := repo.Namespace
	var docs [][]byte
	if ref := repo.Spec.SecretRef; ref != nil {
		s, err := getSecret(ctx, c, ns, ref.Name)
		if err != nil {
			return o, err
		}
		d, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			return o, fmt.Errorf("secret '%s/%s' has no %s key", ns, ref.Name, corev1.DockerConfigJsonKey)
		}
		docs = append(docs, d)
	}
	if name := repo.Spec.ServiceAccountName; name != "" {
		sa := &corev1.ServiceAccount{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sa); err != nil {
			return o, fmt.Errorf("getting service account '%s/%s': %s", ns, name, reasonOf(err))
		}
		for _, ps := range sa.ImagePullSecrets {
			s, err := getSecret(ctx, c, ns, ps.Name)
			if err != nil {
				return o, err
			}
			if d, ok := s.Data[corev1.DockerConfigJsonKey]; ok {
				docs = append(docs, d)
			}
		}
	}
	if len(docs) > 0 {
		kc, err := registry.NewKeychain(docs...)
		if err != nil {
			return o, err
		}
		o.Keychain = kc
	}
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
	return o, nil
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

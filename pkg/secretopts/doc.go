// Package secretopts reads the Secrets a Flux object names for its client
// into options: Docker configs (spec.secretRef, a ServiceAccount's
// imagePullSecrets) into a go-containerregistry authn.Keychain,
// spec.certSecretRef (or a secretRef's TLS keys) into a *tls.Config and
// spec.proxySecretRef into a proxy URL. The key names are Flux's
// (flux-contract §3, image-automation.md). source-controller
// (OCIRepository, HelmRepository) and image-reflector-controller
// (ImageRepository) read them so.
//
// Errors are typed or sentinel values that name keys and registries, never
// a value, so that each controller words its own (Flux's) message.
package secretopts

package source

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// Argo CD's declarative repository Secrets and ConfigMaps
// (argocd-contract §8.3).
const (
	secretTypeRepository = "repository"
	secretTypeRepoCreds  = "repo-creds"
	// knownHostsConfigMap holds the SSH known hosts Argo CD trusts, one
	// known_hosts file under the key ssh_known_hosts.
	knownHostsConfigMap = "argocd-ssh-known-hosts-cm"
	knownHostsKey       = "ssh_known_hosts"
	// tlsCertsConfigMap holds PEM CA certificates keyed by server name.
	tlsCertsConfigMap = "argocd-tls-certs-cm"
)

// credentialKeys are the keys that make a repository Secret carry
// credentials; without any, Argo CD takes them from the repo-creds Secret
// whose url is the longest prefix of the repository's.
var credentialKeys = []string{"username", "password", "bearerToken", "sshPrivateKey", "tlsClientCertData",
	"tlsClientCertKey", "githubAppPrivateKey", "gcpServiceAccountKey", "azureServicePrincipalClientSecret"}

// unsupportedKeys are credentials Eddy cannot hand to source-controller.
var unsupportedKeys = map[string]string{
	"githubAppPrivateKey":               "GitHub App",
	"gcpServiceAccountKey":              "Google Cloud service account",
	"azureServicePrincipalClientSecret": "Azure service principal",
}

// repoData returns the Argo CD repository settings for repoURL in m.Namespace:
// the data of the repository Secret whose url is the same repository
// (normalURL), preferring one whose project is project over one with no
// project, with the credentials of the longest-prefix repo-creds Secret
// filled in when it has none (nil when nothing matches), and the
// credential scope: project when the chosen repository Secret is scoped
// to it, else "".
func (m *Manager) repoData(ctx context.Context, project, repoURL string) (map[string][]byte, string, error) {
	secrets, err := m.repoSecrets(ctx)
	if err != nil {
		return nil, "", err
	}
	repo, creds, scope := matchRepository(secrets, project, repoURL)
	if hasCredentials(repo) || creds == nil {
		return repo, scope, nil
	}
	out := map[string][]byte{}
	for k, v := range creds {
		out[k] = v
	}
	for k, v := range repo {
		out[k] = v
	}
	return out, scope, nil
}

// repoSecrets lists the Argo CD repository and repo-creds Secrets of
// m.Namespace (those labelled argocd.argoproj.io/secret-type).
func (m *Manager) repoSecrets(ctx context.Context) ([]corev1.Secret, error) {
	var list corev1.SecretList
	if err := m.Client.List(ctx, &list, client.InNamespace(m.Namespace),
		client.HasLabels{argov1.LabelSecretType}); err != nil {
		return nil, fmt.Errorf("listing repository Secrets: %w", err)
	}
	return list.Items, nil
}

// matchRepository picks, among secrets, the repository Secret of repoURL
// for an Application of project, as Argo CD's GetRepository(url, project)
// does: one scoped to project, else an unscoped one (a Secret scoped to
// another project never); and the repo-creds Secret whose url is the
// longest prefix. scope is project when the repository Secret is scoped.
func matchRepository(secrets []corev1.Secret, project, repoURL string) (repo, creds map[string][]byte, scope string) {
	want := normalURL(repoURL)
	var global map[string][]byte
	longest := -1
	for i := range secrets {
		s := &secrets[i]
		u := normalURL(string(s.Data["url"]))
		if u == "" {
			continue
		}
		switch s.Labels[argov1.LabelSecretType] {
		case secretTypeRepository:
			if u != want {
				continue
			}
			switch p := string(s.Data["project"]); {
			case p != "" && p == project && repo == nil:
				repo, scope = s.Data, p
			case p == "" && global == nil:
				global = s.Data
			}
		case secretTypeRepoCreds:
			if strings.HasPrefix(want, u) && len(u) > longest {
				creds, longest = s.Data, len(u)
			}
		}
	}
	if repo == nil {
		repo = global
	}
	return repo, creds, scope
}

func hasCredentials(data map[string][]byte) bool {
	for _, k := range credentialKeys {
		if len(data[k]) > 0 {
			return true
		}
	}
	return false
}

// refuseUnsupported fails for credentials source-controller cannot use,
// naming the kind of credential, never its value.
func refuseUnsupported(data map[string][]byte) error {
	for k, what := range unsupportedKeys {
		if len(data[k]) > 0 && !hasAny(data, "username", "password", "sshPrivateKey", "bearerToken") {
			return fmt.Errorf("the repository Secret holds %s credentials, which Eddy does not support", what)
		}
	}
	return nil
}

func hasAny(data map[string][]byte, keys ...string) bool {
	for _, k := range keys {
		if len(data[k]) > 0 {
			return true
		}
	}
	return false
}

func isTrue(data map[string][]byte, key string) bool {
	return strings.EqualFold(strings.TrimSpace(string(data[key])), "true")
}

// gitSecretData translates Argo CD repository settings to a GitRepository
// Secret (source-controller's keys): username/password and bearerToken
// as they are, tlsClientCertData/Key to tls.crt/tls.key, the CA of
// argocd-tls-certs-cm for the URL's host to ca.crt; for SSH,
// sshPrivateKey to identity and argocd-ssh-known-hosts-cm to known_hosts.
// source-controller always checks SSH host keys, so insecureIgnoreHostKey
// has no effect (a host missing from the known hosts fails, saying so),
// and Argo CD's insecure (skip TLS verification) has none either. nil
// means no Secret.
func (m *Manager) gitSecretData(ctx context.Context, argo map[string][]byte, rawURL string) (map[string][]byte, error) {
	if err := refuseUnsupported(argo); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "ssh" {
		copyKey(out, "identity", argo, "sshPrivateKey")
		known, err := m.configMapValue(ctx, knownHostsConfigMap, knownHostsKey)
		if err != nil {
			return nil, err
		}
		if known != "" {
			out["known_hosts"] = []byte(known)
		}
	} else {
		copyKey(out, "username", argo, "username")
		copyKey(out, "password", argo, "password")
		copyKey(out, "bearerToken", argo, "bearerToken")
		copyKey(out, "tls.crt", argo, "tlsClientCertData")
		copyKey(out, "tls.key", argo, "tlsClientCertKey")
		if err := m.addCA(ctx, out, u.Hostname()); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// helmSecretData translates Argo CD repository settings to a
// HelmRepository Secret, used both as secretRef (username, password) and
// certSecretRef (tls.crt, tls.key, ca.crt).
func (m *Manager) helmSecretData(ctx context.Context, argo map[string][]byte, rawURL string) (map[string][]byte, error) {
	if err := refuseUnsupported(argo); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	copyKey(out, "username", argo, "username")
	copyKey(out, "password", argo, "password")
	copyKey(out, "tls.crt", argo, "tlsClientCertData")
	copyKey(out, "tls.key", argo, "tlsClientCertKey")
	if u, err := url.Parse(rawURL); err == nil {
		if err := m.addCA(ctx, out, u.Hostname()); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// ociSecretData translates Argo CD repository settings to an
// OCIRepository Secret: a .dockerconfigjson with the username and
// password for the registry host (spec.secretRef), and tls.crt, tls.key
// and ca.crt (spec.certSecretRef, the same Secret).
func (m *Manager) ociSecretData(ctx context.Context, argo map[string][]byte, rawURL string) (map[string][]byte, error) {
	out, err := m.helmSecretData(ctx, argo, rawURL)
	if out == nil || err != nil {
		return out, err
	}
	user, pass := out["username"], out["password"]
	delete(out, "username")
	delete(out, "password")
	if len(user) > 0 || len(pass) > 0 {
		host := strings.TrimPrefix(rawURL, ociURLPrefix)
		host, _, _ = strings.Cut(host, "/")
		auth := base64.StdEncoding.EncodeToString([]byte(string(user) + ":" + string(pass)))
		cfg, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{
			"username": string(user), "password": string(pass), "auth": auth}}})
		if err != nil {
			return nil, err
		}
		out[corev1.DockerConfigJsonKey] = cfg
	}
	return out, nil
}

func copyKey(dst map[string][]byte, to string, src map[string][]byte, from string) {
	if v := src[from]; len(v) > 0 {
		dst[to] = v
	}
}

// addCA sets ca.crt from Argo CD's TLS certificates ConfigMap entry for
// host, when there is one.
func (m *Manager) addCA(ctx context.Context, out map[string][]byte, host string) error {
	if host == "" {
		return nil
	}
	ca, err := m.configMapValue(ctx, tlsCertsConfigMap, host)
	if err != nil {
		return err
	}
	if ca != "" {
		out["ca.crt"] = []byte(ca)
	}
	return nil
}

// configMapValue reads key of the ConfigMap name in m.Namespace; "" when
// either is missing.
func (m *Manager) configMapValue(ctx context.Context, name, key string) (string, error) {
	var cm corev1.ConfigMap
	err := m.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading ConfigMap %s: %w", name, err)
	}
	return cm.Data[key], nil
}

// presetSecret creates the Secret name with data, not yet owned, when it
// does not exist: the source object that refers to it is created next,
// and source-controller must find the Secret at its first reconcile
// (syncSecret then gives it its owner). Nothing for data nil.
func (m *Manager) presetSecret(ctx context.Context, name string, data map[string][]byte, typ corev1.SecretType) error {
	if data == nil {
		return nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: name, Labels: map[string]string{LabelSource: "true"}},
		Type:       typ, Data: data,
	}
	var cur corev1.Secret
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(s), &cur); !apierrors.IsNotFound(err) {
		return nil
	}
	m.noSecret.Delete(name)
	if err := m.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Secret %s: %w", name, err)
	}
	return nil
}

// syncSecret makes the Secret named after owner hold data (of type typ),
// owned by owner and labelled LabelSource, and returns a reference to
// it; with data nil it deletes that Secret and returns nil. Errors name
// the Secret, never its values.
func (m *Manager) syncSecret(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind, data map[string][]byte, typ corev1.SecretType) (*meta.LocalObjectReference, error) {
	key := client.ObjectKey{Namespace: m.Namespace, Name: owner.GetName()}
	if _, absent := m.noSecret.Load(key.Name); absent && data == nil {
		return nil, nil
	}
	var cur corev1.Secret
	err := m.Client.Get(ctx, key, &cur)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	if data == nil {
		if found && cur.Labels[LabelSource] != "" {
			if err := m.Client.Delete(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("deleting Secret %s: %w", key.Name, err)
			}
		}
		if !found || cur.Labels[LabelSource] != "" {
			m.noSecret.Store(key.Name, true)
		}
		return nil, nil
	}
	m.noSecret.Delete(key.Name)
	ref := &meta.LocalObjectReference{Name: key.Name}
	owners := []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: owner.GetName(), UID: owner.GetUID()}}
	if !found {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{LabelSource: "true"}, OwnerReferences: owners},
			Type: typ, Data: data,
		}
		if err := m.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating Secret %s: %w", key.Name, err)
		}
		return ref, nil
	}
	if cur.Labels[LabelSource] == "" {
		return nil, fmt.Errorf("Secret %s exists and was not made by application-controller", key.Name)
	}
	if cur.Type != typ {
		// The type is immutable: replace the Secret.
		if err := m.Client.Delete(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting Secret %s: %w", key.Name, err)
		}
		return nil, errors.New("replacing Secret " + key.Name + " of another type")
	}
	if sameData(cur.Data, data) && len(cur.OwnerReferences) == 1 && cur.OwnerReferences[0].UID == owner.GetUID() {
		return ref, nil
	}
	cur.Data, cur.OwnerReferences = data, owners
	if err := m.Client.Update(ctx, &cur); err != nil {
		return nil, fmt.Errorf("updating Secret %s: %w", key.Name, err)
	}
	return ref, nil
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || string(w) != string(v) {
			return false
		}
	}
	return true
}

// gvk of the source kinds, for owner references.
var (
	gitGVK      = sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind)
	helmRepoGVK = sourcev1.GroupVersion.WithKind(sourcev1.HelmRepositoryKind)
	ociGVK      = sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind)
)

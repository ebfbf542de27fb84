package source

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// argoSecret creates an Argo CD declarative Secret of type typ
// ("repository" or "repo-creds") in m's namespace.
func argoSecret(t *testing.T, m *Manager, name, typ string, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: name,
		Labels: map[string]string{argov1.LabelSecretType: typ}}, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// derived returns the Secret Ensure made for the object name.
func derived(t *testing.T, m *Manager, name string) map[string]string {
	t.Helper()
	var s corev1.Secret
	get(t, m, &s, name)
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

func TestCredentialsFromTheRepositorySecret(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	argoSecret(t, m, "repo", "repository", map[string]string{"url": "https://Git.example.com/acme/infra",
		"username": "bot", "password": "s3cr3t-pw", "tlsClientCertData": "CERT", "tlsClientCertKey": "KEY", "insecure": "true"})
	argoSecret(t, m, "other", "repository", map[string]string{"url": "https://git.example.com/acme/other.git",
		"username": "wrong", "password": "wrong"})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: tlsCertsConfigMap},
		Data: map[string]string{"git.example.com": "CA PEM"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/infra.git"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	if nr := asNotReady(t, err); strings.Contains(nr.Error(), "s3cr3t") {
		t.Errorf("error shows the password: %v", nr)
	}
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	if repo.Spec.SecretRef == nil || repo.Spec.SecretRef.Name != repo.Name {
		t.Fatalf("secretRef %+v", repo.Spec.SecretRef)
	}
	want := map[string]string{"username": "bot", "password": "s3cr3t-pw", "tls.crt": "CERT", "tls.key": "KEY", "ca.crt": "CA PEM"}
	if got := derived(t, m, repo.Name); !equalMaps(got, want) {
		t.Errorf("derived Secret %v, want %v", got, want)
	}
	var s corev1.Secret
	get(t, m, &s, repo.Name)
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != repo.UID || s.OwnerReferences[0].Kind != "GitRepository" {
		t.Errorf("owner references %+v", s.OwnerReferences)
	}

	// The Argo CD Secret goes: so do the reference and the derived Secret.
	for _, n := range []string{"repo", "other"} {
		if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	_, err = m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	get(t, m, &repo, repo.Name)
	if repo.Spec.SecretRef != nil {
		t.Errorf("secretRef kept: %+v", repo.Spec.SecretRef)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&s), &s); !apierrors.IsNotFound(err) {
		t.Errorf("derived Secret kept: %v", err)
	}
}

func TestCredentialsFromTheLongestRepoCredsPrefix(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	argoSecret(t, m, "all", "repo-creds", map[string]string{"url": "https://git.example.com", "username": "all", "password": "p1"})
	argoSecret(t, m, "acme", "repo-creds", map[string]string{"url": "https://git.example.com/acme", "username": "acme", "password": "p2"})
	// A repository Secret without credentials takes the template's.
	argoSecret(t, m, "repo", "repository", map[string]string{"url": "https://git.example.com/acme/infra.git", "name": "infra"})
	// A project-scoped Secret for another project is not used.
	argoSecret(t, m, "scoped", "repository", map[string]string{"url": "https://git.example.com/acme/infra.git",
		"project": "team-b", "username": "b", "password": "p3"})
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/infra.git"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	if got := derived(t, m, ObjectName(src, "")); got["username"] != "acme" || got["password"] != "p2" {
		t.Errorf("derived Secret %v, want the acme template's", got)
	}
	b := app("b", src)
	b.Spec.Project = "team-b"
	_, err = m.Ensure(ctx, b, src, "")
	asNotReady(t, err)
	// team-b's credentials get objects of their own; the shared one keeps
	// the template's.
	if got := derived(t, m, ScopedObjectName(src, "", "team-b")); got["username"] != "b" {
		t.Errorf("derived Secret %v, want team-b's", got)
	}
	if got := derived(t, m, ObjectName(src, "")); got["username"] != "acme" {
		t.Errorf("the unscoped derived Secret %v, want the acme template's", got)
	}
}

func TestCredentialsSSH(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	argoSecret(t, m, "repo", "repository", map[string]string{"url": "git@github.com:acme/infra.git",
		"sshPrivateKey": "PRIVATE KEY", "insecureIgnoreHostKey": "true"})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: knownHostsConfigMap},
		Data: map[string]string{knownHostsKey: "github.com ssh-ed25519 AAAA\n"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	src := argov1.ApplicationSource{RepoURL: "git@github.com:acme/infra.git"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	asNotReady(t, err)
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	if repo.Spec.URL != "ssh://git@github.com/acme/infra.git" {
		t.Errorf("url %q", repo.Spec.URL)
	}
	want := map[string]string{"identity": "PRIVATE KEY", "known_hosts": "github.com ssh-ed25519 AAAA\n"}
	if got := derived(t, m, repo.Name); !equalMaps(got, want) {
		t.Errorf("derived Secret %v, want %v", got, want)
	}
}

func TestCredentialsForHelmAndOCI(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	argoSecret(t, m, "charts", "repository", map[string]string{"url": "https://charts.example.com/stable", "type": "helm",
		"username": "u", "password": "p"})
	argoSecret(t, m, "registry", "repo-creds", map[string]string{"url": "oci://registry.example.com", "type": "oci",
		"username": "ru", "password": "rp", "insecure": "true"})
	helm := argov1.ApplicationSource{RepoURL: "https://charts.example.com/stable", Chart: "x", TargetRevision: "1.0.0"}
	_, err := m.Ensure(ctx, app("a", helm), helm, "")
	asNotReady(t, err)
	var hr sourcev1.HelmRepository
	get(t, m, &hr, repositoryName(helm, ""))
	if hr.Spec.SecretRef == nil || hr.Spec.CertSecretRef != nil {
		t.Errorf("HelmRepository refs %+v %+v", hr.Spec.SecretRef, hr.Spec.CertSecretRef)
	}
	if got := derived(t, m, hr.Name); !equalMaps(got, map[string]string{"username": "u", "password": "p"}) {
		t.Errorf("Helm Secret %v", got)
	}

	oci := argov1.ApplicationSource{RepoURL: "oci://registry.example.com/acme/manifests", TargetRevision: "v1"}
	_, err = m.Ensure(ctx, app("a", oci), oci, "")
	asNotReady(t, err)
	var or sourcev1.OCIRepository
	get(t, m, &or, ObjectName(oci, ""))
	if or.Spec.SecretRef == nil || !or.Spec.Insecure {
		t.Errorf("OCIRepository %+v", or.Spec)
	}
	var s corev1.Secret
	get(t, m, &s, or.Name)
	var cfg struct {
		Auths map[string]struct{ Username, Password, Auth string }
	}
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil || s.Type != corev1.SecretTypeDockerConfigJson {
		t.Fatalf("dockerconfigjson %v (type %s)", err, s.Type)
	}
	if a := cfg.Auths["registry.example.com"]; a.Username != "ru" || a.Password != "rp" || a.Auth == "" {
		t.Errorf("auths %+v", cfg.Auths)
	}
}

func TestUnsupportedCredentialsAreRefused(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	argoSecret(t, m, "repo", "repository", map[string]string{"url": "https://github.com/acme/infra",
		"githubAppID": "1", "githubAppInstallationID": "2", "githubAppPrivateKey": "APP KEY"})
	src := argov1.ApplicationSource{RepoURL: "https://github.com/acme/infra"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	if err == nil || !strings.Contains(err.Error(), "GitHub App") || strings.Contains(err.Error(), "APP KEY") {
		t.Errorf("Ensure error %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestCredentialsInTheURLGoToTheSecret(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	src := argov1.ApplicationSource{RepoURL: "https://bot:t0ken@git.example.com/acme/infra.git"}
	_, err := m.Ensure(ctx, app("a", src), src, "")
	if nr := asNotReady(t, err); strings.Contains(nr.Error(), "t0ken") {
		t.Errorf("error shows the password: %v", nr)
	}
	var repo sourcev1.GitRepository
	get(t, m, &repo, ObjectName(src, ""))
	if repo.Spec.URL != "https://git.example.com/acme/infra.git" {
		t.Errorf("spec.url %q", repo.Spec.URL)
	}
	if got := derived(t, m, repo.Name); !equalMaps(got, map[string]string{"username": "bot", "password": "t0ken"}) {
		t.Errorf("derived Secret %v", got)
	}
}

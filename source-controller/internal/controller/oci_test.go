package controller

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"helm.sh/helm/v3/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDockerConfigKeychain reads both Docker config formats, matches
// Docker Hub's legacy key, falls back to anonymous, and names a malformed
// Secret without quoting it.
func TestDockerConfigKeychain(t *testing.T) {
	secret := func(name, key, data string) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string][]byte{key: []byte(data)}}
	}
	kc, err := newDockerConfigKeychain([]corev1.Secret{
		secret("json", corev1.DockerConfigJsonKey, `{"auths":{"https://index.docker.io/v1/":{"username":"hub","password":"p1"},"ghcr.io":{"auth":"dXNlcjpwMg=="}}}`),
		secret("legacy", corev1.DockerConfigKey, `{"registry.example:5000":{"username":"old","password":"p3"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]authn.AuthConfig{
		"nginx":                     {Username: "hub", Password: "p1"},
		"ghcr.io/org/app":           {Username: "user", Password: "p2"},
		"registry.example:5000/app": {Username: "old", Password: "p3"},
		"quay.io/other":             {},
	} {
		r, err := name.NewRepository(ref)
		if err != nil {
			t.Fatal(err)
		}
		a, err := kc.Resolve(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		if got.Username != want.Username || got.Password != want.Password {
			t.Errorf("%s: credentials %q/%q, want %q/%q", ref, got.Username, got.Password, want.Username, want.Password)
		}
	}
	_, err = newDockerConfigKeychain([]corev1.Secret{secret("bad", corev1.DockerConfigJsonKey, `{"auths": "s3cr3t`)})
	if err == nil || !strings.Contains(err.Error(), "secret 'ns/bad'") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("malformed config: %v", err)
	}
}

// TestParseOCIRepository: Flux's URL rules.
func TestParseOCIRepository(t *testing.T) {
	for url, want := range map[string]string{
		"oci://ghcr.io/org/app":    "",
		"https://ghcr.io/org/app":  "URL must be in format 'oci://<domain>/<org>/<repo>'",
		"oci://ghcr.io/org/app:v1": "repository can only contain", // as in Flux: go-containerregistry refuses it first
		"oci://localhost:5000/app": "",
	} {
		_, err := parseOCIRepository(url, false)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", url, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", url, err, want)
		}
	}
}

// TestParseOCIRepositoryHidesCredentials: a URL with credentials in it is
// refused without quoting them (the message reaches status and events).
func TestParseOCIRepositoryHidesCredentials(t *testing.T) {
	for _, url := range []string{"oci://user:s3cr3tpass@ghcr.io/org/app", "oci://s3cr3tpass@ghcr.io/org/app",
		"oci://user:s3cr3tpass@localhost:5000/app", "oci://user:s3cr3tpass@ghcr.io/org/app:v1"} {
		_, err := parseOCIRepository(url, false)
		if err == nil || strings.Contains(err.Error(), "s3cr3tpass") {
			t.Errorf("%s: %v, want an error without the password", url, err)
		}
	}
}

// TestPickSemverTag: Flux's tag rules for spec.ref.semver: a tag is a
// version only with three dot-separated parts (floating tags such as `8`
// or `7.1` are not), a `v` prefix allowed; for the Helm chart layer a `_`
// in a tag stands for `+` (Helm's OCI tags).
func TestPickSemverTag(t *testing.T) {
	tags := []string{"7.0.0", "v7.1.0", "7.1", "8", "latest", "7.2.0-rc.1", "7.1.1_build.2"}
	for _, c := range []struct{ exp, filter, mediaType, want string }{
		{exp: ">=7.0.0", want: "v7.1.0"},
		{exp: ">=7.0.0-0", want: "7.2.0-rc.1"},
		{exp: "7.0.x", want: "7.0.0"},
		{exp: ">=7.0.0", filter: "^7", want: "7.0.0"},
		{exp: ">=7.0.0", mediaType: registry.ChartLayerMediaType, want: "7.1.1_build.2"},
	} {
		got, err := pickSemverTag(tags, c.exp, c.filter, c.mediaType)
		if err != nil || got != c.want {
			t.Errorf("%s filter %q media type %q: %q, %v; want %q", c.exp, c.filter, c.mediaType, got, err, c.want)
		}
	}
	if _, err := pickSemverTag(tags, ">=9.0.0", "", ""); err == nil || err.Error() != "no match found for semver: >=9.0.0" {
		t.Errorf("no match: %v", err)
	}
	if _, err := pickSemverTag(tags, ">=7.0.0", "(", ""); err == nil {
		t.Error("an invalid semverFilter was accepted")
	}
}

package secretopts

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// resolve returns what k gives for the registry of ref.
func resolve(t *testing.T, k Keychain, ref string) authn.AuthConfig {
	t.Helper()
	r, err := name.NewRepository(ref)
	if err != nil {
		t.Fatal(err)
	}
	a, err := k.Resolve(r)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	return *ac
}

func mustParse(t *testing.T, doc string, rule AuthRule) Credentials {
	t.Helper()
	c, err := ParseDockerConfigJSON([]byte(doc), rule)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFirstConfigWithAnEntryForTheRegistryWinsElseAnonymous(t *testing.T) {
	k := Keychain{
		mustParse(t, `{"auths":{"other.example":{"username":"a","password":"1"}}}`, AuthOverrides),
		mustParse(t, `{"auths":{"ghcr.io":{"username":"b","password":"2"}}}`, AuthOverrides),
		mustParse(t, `{"auths":{"ghcr.io":{"username":"c","password":"3"}}}`, AuthOverrides),
	}
	if got := resolve(t, k, "ghcr.io/org/app"); got.Username != "b" || got.Password != "2" {
		t.Errorf("ghcr.io: %+v, want the second config's", got)
	}
	if got := resolve(t, k, "quay.io/org/app"); got != (authn.AuthConfig{}) {
		t.Errorf("unknown registry: %+v, want anonymous", got)
	}
}

func TestDockerHubKeysAndURLKeysMatchTheRegistryHost(t *testing.T) {
	for key, ref := range map[string]string{
		"https://index.docker.io/v1/":   "nginx",
		"docker.io":                     "library/nginx",
		"registry-1.docker.io":          "index.docker.io/org/app",
		"https://registry.example:5000": "registry.example:5000/app",
		"registry.example:5000/v2/":     "registry.example:5000/app",
	} {
		k := Keychain{mustParse(t, `{"auths":{"`+key+`":{"username":"u","password":"p"}}}`, AuthOverrides)}
		if got := resolve(t, k, ref); got.Username != "u" {
			t.Errorf("key %q, image %q: %+v", key, ref, got)
		}
	}
}

func TestAuthOverridesUsernameAndPasswordUnlessTheRuleSaysOtherwise(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("from-auth:pa:ss"))
	doc := `{"auths":{"ghcr.io":{"username":"explicit","password":"x","auth":"` + auth + `"}}}`
	if got := resolve(t, Keychain{mustParse(t, doc, AuthOverrides)}, "ghcr.io/a"); got.Username != "from-auth" || got.Password != "pa:ss" {
		t.Errorf("AuthOverrides: %+v", got)
	}
	if got := resolve(t, Keychain{mustParse(t, doc, AuthIfNoUsernamePassword)}, "ghcr.io/a"); got.Username != "explicit" {
		t.Errorf("AuthIfNoUsernamePassword with a username: %+v", got)
	}
	only := `{"auths":{"ghcr.io":{"auth":"` + auth + `"}}}`
	if got := resolve(t, Keychain{mustParse(t, only, AuthIfNoUsernamePassword)}, "ghcr.io/a"); got.Username != "from-auth" {
		t.Errorf("AuthIfNoUsernamePassword with auth only: %+v", got)
	}
}

func TestTokensArePassedToTheRegistry(t *testing.T) {
	k := Keychain{mustParse(t, `{"auths":{"ghcr.io":{"identitytoken":"id","registrytoken":"reg"}}}`, AuthOverrides)}
	if got := resolve(t, k, "ghcr.io/a"); got.IdentityToken != "id" || got.RegistryToken != "reg" {
		t.Errorf("tokens: %+v", got)
	}
}

func TestLegacyDockerCfgHasNoAuthsWrapper(t *testing.T) {
	c, err := ParseDockerCfg([]byte(`{"registry.example:5000":{"username":"old","password":"p3"}}`), AuthOverrides)
	if err != nil {
		t.Fatal(err)
	}
	if got := resolve(t, Keychain{c}, "registry.example:5000/app"); got.Username != "old" || got.Password != "p3" {
		t.Errorf("dockercfg: %+v", got)
	}
}

func TestMalformedConfigIsErrNotDockerConfigQuotingNothing(t *testing.T) {
	for _, doc := range []string{`{"auths": "s3cr3t`, `not json s3cr3t`, `{"auths":["s3cr3t"]}`} {
		_, err := ParseDockerConfigJSON([]byte(doc), AuthOverrides)
		if !errors.Is(err, ErrNotDockerConfig) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v", doc, err)
		}
		if _, err := ParseDockerCfg([]byte(doc), AuthOverrides); !errors.Is(err, ErrNotDockerConfig) {
			t.Errorf("dockercfg %s: %v", doc, err)
		}
	}
}

func TestBadAuthIsAnAuthErrorNamingTheRegistryAsWritten(t *testing.T) {
	noColon := base64.StdEncoding.EncodeToString([]byte("s3cr3t"))
	for auth, want := range map[string]error{"%%s3cr3t": ErrAuthNotBase64, noColon: ErrAuthNotUserPassword} {
		_, err := ParseDockerConfigJSON([]byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"`+auth+`"}}}`), AuthOverrides)
		var ae *AuthError
		if !errors.As(err, &ae) || !errors.Is(err, want) || ae.Registry != "https://index.docker.io/v1/" {
			t.Fatalf("auth %q: %v, want %v", auth, err, want)
		}
		if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), noColon) {
			t.Errorf("the message quotes the auth: %v", err)
		}
	}
}

package cloudauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
)

func rsaKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

func appSecret(id, inst string, key []byte, base string) map[string][]byte {
	return map[string][]byte{KeyAppID: []byte(id), KeyAppInstallationID: []byte(inst), KeyAppPrivateKey: key, KeyAppBaseURL: []byte(base)}
}

func TestGitHubAppTokenIsIssuedForTheSignedJWTAndReused(t *testing.T) {
	cache.forget()
	k, pemKey := rsaKey(t)
	gh := cloudfake.StartGitHub(123, 456, "", &k.PublicKey, "ghs_installation")
	defer gh.Close()
	app, err := GitHubAppFromSecret(appSecret("123", "456", pemKey, gh.URL))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c, err := app.Credentials(context.Background(), http.DefaultClient)
		if err != nil {
			t.Fatal(err)
		}
		if c.Username != "x-access-token" || c.Password != "ghs_installation" {
			t.Fatalf("credentials %q/%q, want x-access-token and the installation token", c.Username, c.Password)
		}
	}
	if n := gh.Issued(); n != 1 {
		t.Errorf("%d tokens issued, want 1: the second call reuses the cached one", n)
	}
}

func TestGitHubAppInstallationIsFoundByOwner(t *testing.T) {
	cache.forget()
	k, pemKey := rsaKey(t)
	gh := cloudfake.StartGitHub(7, 99, "someone", &k.PublicKey, "ghs_owner")
	defer gh.Close()
	data := appSecret("7", "", pemKey, gh.URL+"/")
	data[KeyAppInstallationOwner] = []byte("someone")
	app, err := GitHubAppFromSecret(data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Credentials(context.Background(), http.DefaultClient)
	if err != nil || c.Password != "ghs_owner" {
		t.Fatalf("credentials %q, %v; want the token of installation 99", c.Password, err)
	}
}

func TestGitHubAppSignedWithAnotherKeyFailsWithoutItsKeyInTheError(t *testing.T) {
	cache.forget()
	k, _ := rsaKey(t)
	_, other := rsaKey(t)
	gh := cloudfake.StartGitHub(1, 2, "", &k.PublicKey, "ghs_never")
	defer gh.Close()
	app, err := GitHubAppFromSecret(appSecret("1", "2", other, gh.URL))
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Credentials(context.Background(), http.DefaultClient)
	if err == nil || !strings.Contains(err.Error(), "POST "+gh.URL+"/app/installations/2/access_tokens: 401") {
		t.Fatalf("error %v, want the API's 401", err)
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "ghs_") {
		t.Errorf("error %q carries a secret", err)
	}
}

func TestGitHubAppSecretErrorsAreFlux(t *testing.T) {
	_, pemKey := rsaKey(t)
	for _, c := range []struct {
		data map[string][]byte
		want string
	}{
		{appSecret("", "2", pemKey, ""), "app ID must be provided to use github app authentication"},
		{appSecret("1", "", pemKey, ""), "app installation owner or ID must be provided to use github app authentication"},
		{appSecret("1", "2", nil, ""), "private key must be provided to use github app authentication"},
		{appSecret("1", "2", []byte("nope"), ""), "could not parse private key: invalid key: Key must be a PEM encoded PKCS1 or PKCS8 key"},
	} {
		if _, err := GitHubAppFromSecret(c.data); err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	app, err := GitHubAppFromSecret(appSecret("1", "2", pemKey, ""))
	if err != nil || app.BaseURL != DefaultGitHubAPI {
		t.Errorf("base URL %v (%v), want %s by default", app, err, DefaultGitHubAPI)
	}
}

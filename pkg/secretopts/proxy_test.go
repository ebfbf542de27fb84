package secretopts

import (
	"errors"
	"strings"
	"testing"
)

func TestProxyCredentialsBecomeTheURLsUserinfo(t *testing.T) {
	u, err := ProxyURL(map[string][]byte{"address": []byte("http://proxy.example:3128"), "username": []byte("px"), "password": []byte("s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := u.User.Password(); u.Host != "proxy.example:3128" || u.User.Username() != "px" || p != "s3cret" {
		t.Errorf("proxy URL %s", u.Redacted())
	}
	u, err = ProxyURL(map[string][]byte{"address": []byte("https://proxy.example")})
	if err != nil || u.User != nil {
		t.Errorf("without credentials: %v, %v", u, err)
	}
}

func TestProxyAddressFaultsQuoteNothing(t *testing.T) {
	for addr, want := range map[string]error{"": ErrNoProxyAddress, "http://u:s3cret@[::1": ErrProxyAddressNotURL} {
		_, err := ProxyURL(map[string][]byte{"address": []byte(addr), "password": []byte("s3cret")})
		if !errors.Is(err, want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("address %q: %v, want %v", addr, err, want)
		}
	}
}

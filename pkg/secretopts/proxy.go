package secretopts

import (
	"errors"
	"net/url"
)

// Keys of a proxy Secret (spec.proxySecretRef), as Flux names them.
const (
	ProxyAddressKey  = "address"
	ProxyUsernameKey = "username"
	ProxyPasswordKey = "password"
)

// The faults of a proxy Secret's `address`.
var (
	ErrNoProxyAddress     = errors.New("the address key is missing or empty")
	ErrProxyAddressNotURL = errors.New("address is not a URL")
)

// ProxyURL builds the proxy URL of a proxy Secret's data: `address`
// (required, a URL), `username` and `password` (optional; either set makes
// the URL's userinfo). Errors are ErrNoProxyAddress and
// ErrProxyAddressNotURL; they never quote the address, which may hold
// credentials. Whether the URL suits the transport (scheme, host) is the
// caller's to check.
func ProxyURL(data map[string][]byte) (*url.URL, error) {
	addr := string(data[ProxyAddressKey])
	if addr == "" {
		return nil, ErrNoProxyAddress
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, ErrProxyAddressNotURL
	}
	user, pass := string(data[ProxyUsernameKey]), string(data[ProxyPasswordKey])
	if user != "" || pass != "" {
		u.User = url.UserPassword(user, pass)
	}
	return u, nil
}

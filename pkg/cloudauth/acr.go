package cloudauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// acrCredentials exchanges the controller's Entra ID token for the
// registry's scope at the registry's /oauth2/exchange, over HTTPS always
// (the access token is a credential of every registry the identity can
// reach), and returns the refresh token as ACRUser's password, valid until
// its own expiry.
func acrCredentials(ctx context.Context, host string, hc *http.Client) (Credentials, error) {
	tok, err := AzureToken(ctx, acrScope(host), hc)
	if err != nil {
		return Credentials{}, fmt.Errorf("failed to get access token for artifact registry: %w", err)
	}
	refresh, err := exchangeACRToken(ctx, host, tok.Password, hc)
	if err != nil {
		return Credentials{}, fmt.Errorf("failed to create artifact registry credentials: %w", err)
	}
	exp, err := jwtExpiry(refresh)
	if err != nil {
		return Credentials{}, fmt.Errorf("failed to create artifact registry credentials: the refresh token: %w", err)
	}
	return Credentials{Username: ACRUser, Password: refresh, ExpiresAt: exp}, nil
}

func exchangeACRToken(ctx context.Context, host, accessToken string, hc *http.Client) (string, error) {
	u := (&url.URL{Scheme: "https", Host: host, Path: "/oauth2/exchange"}).String()
	form := url.Values{"grant_type": {"access_token"}, "service": {host}, "access_token": {accessToken}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST %s: %s", u, resp.Status)
	}
	var out struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenAnswer)).Decode(&out); err != nil || out.RefreshToken == "" {
		return "", fmt.Errorf("POST %s: the answer has no refresh token", u)
	}
	return out.RefreshToken, nil
}

// jwtExpiry reads a JWT's exp claim without verifying it: the registry
// that issued it checks it, the client only needs to know when to renew.
func jwtExpiry(tok string) (time.Time, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, errors.New("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, errors.New("not a JWT: claims are not base64url")
	}
	var c struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.Exp == nil {
		return time.Time{}, errors.New("no expiry (exp) claim")
	}
	secs, err := c.Exp.Float64()
	if err != nil {
		return time.Time{}, errors.New("no expiry (exp) claim")
	}
	return time.Unix(int64(secs), 0), nil
}

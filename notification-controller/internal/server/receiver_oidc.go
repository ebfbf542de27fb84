package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/cel"
	celgo "github.com/google/cel-go/cel"
)

// DefaultOIDCAudience is the `aud` a generic-oidc token must carry when the
// provider names none (Flux's default).
const DefaultOIDCAudience = "notification-controller"

// oidcDiscoveryTTL bounds how long an issuer's discovery document is reused;
// its signing keys are refetched by go-oidc whenever a token names a key it
// does not hold, so rotations need no wait.
const oidcDiscoveryTTL = 10 * time.Minute

var issuerURLPattern = regexp.MustCompile(`^https?://`)

// oidcIssuers caches discovered issuers by URL.
type oidcIssuers struct {
	mu      sync.Mutex
	entries map[string]oidcIssuer
}

type oidcIssuer struct {
	provider *oidc.Provider
	at       time.Time
}

func (c *oidcIssuers) get(ctx context.Context, url string) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[url]; ok && time.Since(e.at) < oidcDiscoveryTTL {
		return e.provider, nil
	}
	// The provider keeps ctx for its key fetches: detach it from the request.
	p, err := oidc.NewProvider(context.WithoutCancel(ctx), url)
	if err != nil {
		return nil, err
	}
	if c.entries == nil {
		c.entries = map[string]oidcIssuer{}
	}
	c.entries[url] = oidcIssuer{provider: p, at: time.Now()}
	return p, nil
}

// verifyOIDC authenticates a generic-oidc webhook: the bearer token's issuer
// picks the oidcProviders entry, whose discovery document and keys verify the
// signature, expiry and audience; then the entry's variables and validations
// run over the claims. It returns the claims (the filters' `claims`). A token
// that fails is an errVerify (answered 400, as Flux); an issuer that cannot
// be discovered is another error (503). Messages carry no token.
func (s *ReceiverServer) verifyOIDC(ctx context.Context, rcv *notificationv1.Receiver, h http.Header) (map[string]any, error) {
	raw, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if raw = strings.TrimSpace(raw); !ok || raw == "" {
		return nil, errVerify{"the Authorization header is missing or malformed"}
	}
	iss, err := tokenIssuer(raw)
	if err != nil {
		return nil, errVerify{"failed to parse bearer token: " + err.Error()}
	}
	var p *notificationv1.OIDCProvider
	for i := range rcv.Spec.OIDCProviders {
		if rcv.Spec.OIDCProviders[i].IssuerURL == iss {
			p = &rcv.Spec.OIDCProviders[i]
		}
	}
	if p == nil {
		return nil, errVerify{fmt.Sprintf("no oidcProvider configured for issuer %q", iss)}
	}
	provider, err := s.issuers.get(ctx, p.IssuerURL)
	if err != nil {
		return nil, fmt.Errorf("failed to initialize OIDC provider for issuer %q: %w", p.IssuerURL, err)
	}
	aud := p.Audience
	if aud == "" {
		aud = DefaultOIDCAudience
	}
	tok, err := provider.Verifier(&oidc.Config{ClientID: aud}).Verify(ctx, raw)
	if err != nil {
		return nil, errVerify{"failed to verify OIDC token: " + err.Error()}
	}
	claims := map[string]any{}
	if err := tok.Claims(&claims); err != nil {
		return nil, errVerify{"failed to extract OIDC token claims: " + err.Error()}
	}
	cp, err := compileClaims(*p)
	if err != nil {
		return nil, err
	}
	return claims, cp.evaluate(ctx, claims)
}

// tokenIssuer reads `iss` from a JWT without verifying it: only to pick the
// provider that then verifies the token.
func tokenIssuer(raw string) (string, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("the token's payload is not base64url")
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &c); err != nil || c.Iss == "" {
		return "", fmt.Errorf("the token has no 'iss' claim")
	}
	return c.Iss, nil
}

// claimsCheck is an oidcProviders entry's compiled variables and validations.
type claimsCheck struct {
	names       []string
	variables   []*cel.Expression
	validations []*cel.Expression
	messages    []string
}

func compileClaims(p notificationv1.OIDCProvider) (*claimsCheck, error) {
	c := &claimsCheck{}
	for _, v := range p.Variables {
		e, err := cel.CompileAny(v.Expression, "claims", "vars")
		if err != nil {
			return nil, fmt.Errorf("invalid expression for variable %q: %w", v.Name, err)
		}
		c.names, c.variables = append(c.names, v.Name), append(c.variables, e)
	}
	for _, v := range p.Validations {
		e, err := cel.Compile(v.Expression, celgo.BoolType, "claims", "vars")
		if err != nil {
			return nil, fmt.Errorf("invalid expression for validation %q: %w", v.Message, err)
		}
		c.validations, c.messages = append(c.validations, e), append(c.messages, v.Message)
	}
	return c, nil
}

// evaluate computes the variables in order, then every validation; the
// messages of those that return false are joined into one errVerify.
func (c *claimsCheck) evaluate(ctx context.Context, claims map[string]any) error {
	vars := map[string]any{}
	data := map[string]any{"claims": claims, "vars": vars}
	for i, e := range c.variables {
		v, err := e.Value(ctx, data)
		if err != nil {
			return errVerify{fmt.Sprintf("failed to evaluate variable %q: %s", c.names[i], err)}
		}
		vars[c.names[i]] = v
	}
	var failed []string
	for i, e := range c.validations {
		ok, err := e.Bool(ctx, data)
		if err != nil {
			return errVerify{"failed to evaluate validation: " + err.Error()}
		}
		if !ok {
			failed = append(failed, c.messages[i])
		}
	}
	if len(failed) > 0 {
		return errVerify{"token validation failed: " + strings.Join(failed, "; ")}
	}
	return nil
}

// ValidateOIDC checks a Receiver's type, secretRef and oidcProviders against
// each other and the CRD's rules (for API servers that skipped the schema),
// then compiles every CEL expression. Flux compatible: the first error, and
// celErr when it is a CEL compile error (reason InvalidCELExpression, else
// ValidationFailed).
func ValidateOIDC(rcv *notificationv1.Receiver) (celErr bool, err error) {
	oidcType := rcv.Spec.Type == notificationv1.GenericOIDCReceiver
	switch {
	case oidcType && len(rcv.Spec.OIDCProviders) == 0:
		return false, fmt.Errorf("generic-oidc receiver requires at least one oidcProvider")
	case !oidcType && len(rcv.Spec.OIDCProviders) > 0:
		return false, fmt.Errorf("oidcProviders can only be set when type is generic-oidc")
	case oidcType && rcv.Spec.SecretRef != nil:
		return false, fmt.Errorf("secretRef cannot be set when type is generic-oidc")
	case !oidcType && rcv.Spec.SecretRef == nil:
		return false, fmt.Errorf("secretRef is required when type is not generic-oidc")
	}
	seen := map[string]bool{}
	for i, p := range rcv.Spec.OIDCProviders {
		if err := validateOIDCProvider(i, p, seen); err != nil {
			return false, err
		}
	}
	for i, p := range rcv.Spec.OIDCProviders {
		if _, err := compileClaims(p); err != nil {
			return true, fmt.Errorf("oidcProviders[%d] (issuerURL=%q): %w", i, p.IssuerURL, err)
		}
	}
	return false, nil
}

func validateOIDCProvider(i int, p notificationv1.OIDCProvider, seen map[string]bool) error {
	at := fmt.Sprintf("oidcProviders[%d] (issuerURL=%q)", i, p.IssuerURL)
	switch {
	case !issuerURLPattern.MatchString(p.IssuerURL):
		return fmt.Errorf("oidcProviders[%d]: issuerURL %q must start with http:// or https://", i, p.IssuerURL)
	case seen[p.IssuerURL]:
		return fmt.Errorf("oidcProviders[%d]: duplicate issuerURL %q", i, p.IssuerURL)
	case len(p.Validations) == 0:
		return fmt.Errorf("%s: at least one validation is required; without validations any caller able to obtain a token from this issuer can trigger the Receiver", at)
	}
	seen[p.IssuerURL] = true
	for j, v := range p.Variables {
		if v.Name == "" || v.Expression == "" {
			return fmt.Errorf("%s: variables[%d]: name and expression are required", at, j)
		}
	}
	for j, v := range p.Validations {
		if v.Expression == "" || v.Message == "" {
			return fmt.Errorf("%s: validations[%d]: expression and message are required", at, j)
		}
	}
	return nil
}

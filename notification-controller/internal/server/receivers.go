package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"strings"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/google/go-github/v84/github"
)

// SupportedReceiverType reports whether Eddy verifies webhooks of type t.
func SupportedReceiverType(t string) bool {
	switch t {
	case notificationv1.GenericReceiver, notificationv1.GenericHMACReceiver, notificationv1.GitHubReceiver, notificationv1.GitLabReceiver:
		return true
	}
	return false
}

// Verify checks a webhook of receiver type typ against token and the allowed
// event types (case-insensitive; empty allows all). A failed check is an
// error answered 400; an unsupported type another error. Flux compatible:
//
//   - generic: the secret path is the only check;
//   - generic-hmac: `X-Signature: <sha1|sha256|sha512>=<hex HMAC(body, token)>`;
//   - github: `X-Hub-Signature-256` (or legacy `X-Hub-Signature`) through
//     go-github's ValidatePayload, `X-GitHub-Event` in events; `ping` is an
//     event like any other (allowed when events is empty or names it);
//   - gitlab: `X-Gitlab-Token` equals token, `X-Gitlab-Event` in events.
//
// All comparisons of secrets are constant-time.
func Verify(typ string, allowed []string, token []byte, h http.Header, body []byte) error {
	switch typ {
	case notificationv1.GenericReceiver:
		return nil
	case notificationv1.GenericHMACReceiver:
		return verifyHMAC(h.Get("X-Signature"), token, body)
	case notificationv1.GitHubReceiver:
		if len(token) == 0 {
			// go-github skips the check for an empty secret.
			return errVerify{"the receiver's token is empty"}
		}
		ct := h.Get("Content-Type")
		if ct == "" {
			ct = "application/json"
		}
		sig := h.Get(github.SHA256SignatureHeader)
		if sig == "" {
			sig = h.Get(github.SHA1SignatureHeader)
		}
		if _, err := github.ValidatePayloadFromBody(ct, bytes.NewReader(body), sig, token); err != nil {
			return errVerify{"the GitHub signature does not verify"}
		}
		return allow(allowed, h.Get(github.EventTypeHeader), "GitHub")
	case notificationv1.GitLabReceiver:
		if subtle.ConstantTimeCompare([]byte(h.Get("X-Gitlab-Token")), token) != 1 {
			return errVerify{"the GitLab token does not match"}
		}
		return allow(allowed, h.Get("X-Gitlab-Event"), "GitLab")
	}
	return fmt.Errorf("receiver type %s is not supported by Eddy", typ)
}

func allow(allowed []string, event, sender string) error {
	if len(allowed) == 0 {
		return nil
	}
	for _, a := range allowed {
		if strings.EqualFold(a, event) {
			return nil
		}
	}
	return errVerify{fmt.Sprintf("%s event %q is not in the receiver's events", sender, events.Truncate(event, 64))}
}

func verifyHMAC(header string, token, body []byte) error {
	algo, sig, ok := strings.Cut(header, "=")
	if !ok {
		return errVerify{"X-Signature is missing or not <algorithm>=<hex>"}
	}
	var newHash func() hash.Hash
	switch algo {
	case "sha1":
		newHash = sha1.New
	case "sha256":
		newHash = sha256.New
	case "sha512":
		newHash = sha512.New
	default:
		return errVerify{"X-Signature: unsupported algorithm"}
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return errVerify{"X-Signature is not hex"}
	}
	mac := hmac.New(newHash, token)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errVerify{"the HMAC signature does not verify"}
	}
	return nil
}

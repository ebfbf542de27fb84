package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"hash"
	"mime"
	"net/http"
	"strings"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/google/go-github/v84/github"
)

// SupportedReceiverType reports whether Eddy verifies webhooks of type t:
// every type of Flux's Receiver but generic-oidc.
func SupportedReceiverType(t string) bool {
	switch t {
	case notificationv1.GenericReceiver, notificationv1.GenericHMACReceiver, notificationv1.GitHubReceiver, notificationv1.GitLabReceiver,
		notificationv1.BitbucketReceiver, notificationv1.HarborReceiver, notificationv1.DockerHubReceiver, notificationv1.QuayReceiver,
		notificationv1.GCRReceiver, notificationv1.NexusReceiver, notificationv1.ACRReceiver, notificationv1.CDEventsReceiver:
		return true
	}
	return false
}

// Verify checks a webhook of receiver type typ against the Receiver's
// Secret data sec (`token`; gcr also `email` and `audience`) and the
// allowed event types (case-insensitive; empty allows all). It returns
// the payload the resource filters see as `req`: the body, or for gcr the
// event inside the Pub/Sub message. A failed check is an error answered
// 400; an unsupported type another error. Flux compatible:
//
//   - generic: the secret path is the only check;
//   - generic-hmac: `X-Signature: <sha1|sha256|sha512>=<hex HMAC(body, token)>`;
//   - github: `X-Hub-Signature-256` (or legacy `X-Hub-Signature`) through
//     go-github's ValidatePayload, `X-GitHub-Event` in events; `ping` is an
//     event like any other (allowed when events is empty or names it);
//   - gitlab: `X-Gitlab-Token` equals token, `X-Gitlab-Event` in events;
//   - bitbucket (Bitbucket Server): signed as github, `X-Event-Key` in events;
//   - the registries and cdevents: see verifyRegistry; gcr: verifyGCR.
//
// All comparisons of secrets are constant-time.
func Verify(ctx context.Context, typ string, allowed []string, sec map[string][]byte, h http.Header, body []byte) ([]byte, error) {
	token := sec["token"]
	switch typ {
	case notificationv1.GenericReceiver:
		return body, nil
	case notificationv1.GenericHMACReceiver:
		return body, verifyHMAC(h.Get("X-Signature"), token, body)
	case notificationv1.GitHubReceiver:
		if err := verifyHubSignature(token, h, body, "GitHub"); err != nil {
			return nil, err
		}
		return body, allow(allowed, h.Get(github.EventTypeHeader), "GitHub")
	case notificationv1.GitLabReceiver:
		if subtle.ConstantTimeCompare([]byte(h.Get("X-Gitlab-Token")), token) != 1 {
			return nil, errVerify{"the GitLab token does not match"}
		}
		return body, allow(allowed, h.Get("X-Gitlab-Event"), "GitLab")
	case notificationv1.BitbucketReceiver:
		if err := verifyHubSignature(token, h, body, "Bitbucket Server"); err != nil {
			return nil, err
		}
		return body, allow(allowed, h.Get("X-Event-Key"), "Bitbucket Server")
	case notificationv1.GCRReceiver:
		return verifyGCR(ctx, sec, h, body)
	}
	if check := verifyRegistry(typ); check != nil {
		return body, check(allowed, token, h, body)
	}
	return nil, fmt.Errorf("receiver type %s is not supported by Eddy", typ)
}

// verifyHubSignature checks GitHub's signature headers (Bitbucket Server
// signs the same way) through go-github.
func verifyHubSignature(token []byte, h http.Header, body []byte, sender string) error {
	if len(token) == 0 {
		// go-github skips the check for an empty secret.
		return errVerify{"the receiver's token is empty"}
	}
	// As go-github's ValidatePayload: the media type without parameters
	// (Bitbucket Server sends `application/json; charset=utf-8`).
	ct, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		ct = "application/json"
	}
	sig := h.Get(github.SHA256SignatureHeader)
	if sig == "" {
		sig = h.Get(github.SHA1SignatureHeader)
	}
	if _, err := github.ValidatePayloadFromBody(ct, bytes.NewReader(body), sig, token); err != nil {
		return errVerify{fmt.Sprintf("the %s signature does not verify", sender)}
	}
	return nil
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

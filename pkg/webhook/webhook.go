// Package webhook holds what a webhook sender needs to reach an Eddy
// Receiver, for tools such as `eddy dev` and for tests: the receiver path,
// and a signed GitHub push payload; and the one HMAC-SHA256 signer of the
// tree, also used by notification-controller's generic-hmac provider.
//
// Flux compatible: the path is `/hook/` + hex(sha256(token + name +
// namespace)) (notification-controller api/v1 GetWebhookPath), served by
// notification-controller on --receiverAddr (:9292; Service
// `webhook-receiver` port 80 in a cluster).
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/google/go-github/v84/github"
)

// Path returns the receiver path of the Receiver namespace/name whose
// secret's `token` is token, e.g. `/hook/5d41…` (64 hex digits).
func Path(token, name, namespace string) string {
	sum := sha256.Sum256([]byte(token + name + namespace))
	return notificationv1.ReceiverWebhookPath + hex.EncodeToString(sum[:])
}

// GitHubSignature returns `sha256=<hex HMAC-SHA256(body, token)>`: the
// value of GitHub's `X-Hub-Signature-256` header, and of the `X-Signature`
// header Flux's generic-hmac provider sends (forwarder.go), which is the
// same form.
func GitHubSignature(body []byte, token string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Commit is one commit of a push.
type Commit struct {
	ID, Message string
	Timestamp   time.Time
}

// GitHubPush returns a GitHub `push` event payload in GitHub's shape (ref,
// before, after, repository, pusher, head_commit, commits) for a push of
// commits onto ref (e.g. "refs/heads/main") of the repository fullName
// ("owner/repo") served at cloneURL. after is the new head commit.
// Send it with headers `X-GitHub-Event: push`, `Content-Type:
// application/json` and `X-Hub-Signature-256: GitHubSignature(body, token)`.
func GitHubPush(ref, before, after, fullName, cloneURL string, commits ...Commit) ([]byte, error) {
	owner, name := fullName, fullName
	for i := len(fullName) - 1; i >= 0; i-- {
		if fullName[i] == '/' {
			owner, name = fullName[:i], fullName[i+1:]
			break
		}
	}
	ev := github.PushEvent{
		Ref: github.Ptr(ref), Before: github.Ptr(before), After: github.Ptr(after),
		Created: github.Ptr(false), Deleted: github.Ptr(false), Forced: github.Ptr(false),
		Repo: &github.PushEventRepository{
			Name: github.Ptr(name), FullName: github.Ptr(fullName), CloneURL: github.Ptr(cloneURL),
			Owner: &github.User{Login: github.Ptr(owner), Name: github.Ptr(owner)}, DefaultBranch: github.Ptr("main"),
		},
		Pusher: &github.CommitAuthor{Name: github.Ptr("eddy"), Email: github.Ptr("eddy@localhost")},
	}
	for _, c := range commits {
		hc := &github.HeadCommit{
			ID: github.Ptr(c.ID), TreeID: github.Ptr(c.ID), Message: github.Ptr(c.Message), Distinct: github.Ptr(true),
			Timestamp: &github.Timestamp{Time: c.Timestamp}, URL: github.Ptr(fmt.Sprintf("%s/commit/%s", cloneURL, c.ID)),
			Author: &github.CommitAuthor{Name: github.Ptr("eddy"), Email: github.Ptr("eddy@localhost")},
			Added:  []string{}, Removed: []string{}, Modified: []string{},
		}
		ev.Commits = append(ev.Commits, hc)
		ev.HeadCommit = hc
	}
	return json.Marshal(ev)
}

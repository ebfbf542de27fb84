package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
)

// TestPath: Flux's GetWebhookPath for token "token", Receiver
// flux-system/github-receiver: /hook/ + sha256("tokengithub-receiverflux-system").
func TestPath(t *testing.T) {
	// computed with: printf tokengithub-receiverflux-system | sha256sum
	want := "/hook/8ed710969b945c0dc10d6d0b5084e120ec2228353d1fe42d56be5ba88500e684"
	if got := Path("token", "github-receiver", "flux-system"); got != want {
		t.Errorf("Path = %s, want %s", got, want)
	}
}

// TestGitHubPush: the payload has GitHub's push shape, verifies with
// go-github's ValidatePayload and parses as a PushEvent.
func TestGitHubPush(t *testing.T) {
	after := "1111111111111111111111111111111111111111"
	body, err := GitHubPush("refs/heads/main", "0000000000000000000000000000000000000000", after, "acme/platform",
		"http://127.0.0.1:8080/platform.git", Commit{ID: after, Message: "deploy", Timestamp: time.Unix(1700000000, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ref", "before", "after", "repository", "commits", "head_commit", "pusher"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("payload lacks %q: %s", k, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", GitHubSignature(body, "s3cret"))
	req.Header.Set("X-GitHub-Event", "push")
	payload, err := github.ValidatePayload(req, []byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := github.ParseWebHook(github.WebHookType(req), payload)
	if err != nil {
		t.Fatal(err)
	}
	push, ok := ev.(*github.PushEvent)
	if !ok || push.GetRef() != "refs/heads/main" || push.GetAfter() != after || push.GetRepo().GetFullName() != "acme/platform" ||
		len(push.Commits) != 1 || push.Commits[0].GetID() != after || push.GetHeadCommit().GetMessage() != "deploy" {
		t.Errorf("parsed %+v", push)
	}
}

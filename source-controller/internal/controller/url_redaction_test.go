package controller

import (
	"errors"
	"strings"
	"testing"
)

// TestURLMessagesCarryNoToken: a token as the user of an HTTPS URL
// (GitHub's https://<token>@github.com/...) and a password with an
// unencoded '#' or '/' never reach a parse or clone message.
func TestURLMessagesCarryNoToken(t *testing.T) {
	const tok = "ghp_S3CRETtoken0123456789"
	for _, c := range []struct{ raw, want string }{
		{"https://" + tok + "@github.com:org/repo.git", "failed to parse url 'https://xxxxx@github.com:org/repo.git'"},
		{"https://" + tok + "@github.com/org/repo.git", "unable to clone 'https://xxxxx@github.com/org/repo.git': unexpected EOF fetching https://xxxxx@github.com/org/repo.git"},
		{"https://user:pa#ss" + tok + "@github.com/org/r", "failed to parse url 'https://xxxxx@github.com/org/r'"},
		{"https://user:pa/ss" + tok + "@github.com/org/r", "failed to parse url 'https://xxxxx@github.com/org/r'"},
		{"ssh://git:" + tok + "@github.com/org/repo.git", "unable to clone 'ssh://git:xxxxx@github.com/org/repo.git'"},
	} {
		var msg string
		if _, err := parseURL(c.raw); err != nil {
			msg = err.Error()
		} else {
			msg = gitError(errors.New("unexpected EOF fetching "+c.raw), c.raw, "").Message
		}
		if strings.Contains(msg, tok) || strings.Contains(msg, `":pa"`) || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %s; want %s and no secret", c.raw, msg, c.want)
		}
	}
}

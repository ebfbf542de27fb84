package notifier

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// progressingReason is the reason of in-progress events: Gitea shows them
// as pending; Bitbucket and Azure DevOps skip them, as Flux does.
const progressingReason = "Progressing"

// repoParts splits a repository path into exactly n segments; errors say
// what was expected, never the path.
func repoParts(typ, project string, n int, form string) ([]string, error) {
	parts := strings.Split(project, "/")
	if len(parts) != n {
		return nil, fmt.Errorf("%s provider: the address path is not %s", typ, form)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("%s provider: the address path is not %s", typ, form)
		}
	}
	return parts, nil
}

// statusKey is a status id hashed to 40 hex characters: Bitbucket's keys
// are at most 40 long. Flux compatible (SHA-1 of the id).
func statusKey(id string) string {
	s := sha1.Sum([]byte(id))
	return hex.EncodeToString(s[:])
}

// getExisting GETs url and decodes the answer into out. found is false on
// 404, or when the answer is not the JSON expected: the status is then
// posted, as when nothing is there.
func getExisting(ctx context.Context, c *Client, r Request, out any) (found bool, err error) {
	r.Method = http.MethodGet
	body, err := c.Send(ctx, r)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return json.Unmarshal(body, out) == nil, nil
}

// commitOf is Commit with the type's prefix on errors.
func commitOf(typ string, ev *events.Event) (string, error) {
	sha, err := Commit(ev)
	if err != nil {
		return "", fmt.Errorf("%s: %w", typ, err)
	}
	return sha, nil
}

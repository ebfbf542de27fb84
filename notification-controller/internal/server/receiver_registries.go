package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
)

// registryCheck verifies one webhook of a type without a payload to unwrap.
type registryCheck func(allowed []string, token []byte, h http.Header, body []byte) error

// verifyRegistry returns the check of the container registry types and
// cdevents, nil for another type. Flux compatible:
//
//   - harbor: `Authorization` equals the token;
//   - dockerhub, quay, acr: the secret path is the only check, and the body
//     must decode as the service's payload (Docker Hub's push_data and
//     repository, Quay's docker_url and updated_tags, ACR's action and
//     target); Flux does not call Docker Hub's callback_url, nor does Eddy;
//   - nexus: `X-Nexus-Webhook-Signature` is the hex HMAC-SHA1 of the body
//     with the token, and the body a JSON object;
//   - cdevents: the body is a CDEvent (see checkCDEvent), `Ce-Type` in events.
func verifyRegistry(typ string) registryCheck {
	switch typ {
	case notificationv1.HarborReceiver:
		return func(_ []string, token []byte, h http.Header, _ []byte) error {
			if subtle.ConstantTimeCompare([]byte(h.Get("Authorization")), token) != 1 {
				return errVerify{"the Harbor Authorization header value does not match the receiver token"}
			}
			return nil
		}
	case notificationv1.DockerHubReceiver:
		return decodeAs[struct {
			PushData struct {
				Tag string `json:"tag"`
			} `json:"push_data"`
			Repository struct {
				URL string `json:"repo_url"`
			} `json:"repository"`
		}]("DockerHub")
	case notificationv1.QuayReceiver:
		return decodeAs[struct {
			DockerURL   string   `json:"docker_url"`
			UpdatedTags []string `json:"updated_tags"`
		}]("Quay")
	case notificationv1.ACRReceiver:
		return decodeAs[struct {
			Action string `json:"action"`
			Target struct {
				Repository string `json:"repository"`
				Tag        string `json:"tag"`
			} `json:"target"`
		}]("ACR")
	case notificationv1.NexusReceiver:
		return verifyNexus
	case notificationv1.CDEventsReceiver:
		return func(allowed []string, _ []byte, h http.Header, body []byte) error {
			if err := checkCDEvent(body); err != nil {
				return errVerify{"unable to validate CDEvent event: " + err.Error()}
			}
			return allow(allowed, h.Get("Ce-Type"), "CDEvent")
		}
	}
	return nil
}

// decodeAs checks that the body's first JSON value decodes as T, as
// Flux's json.Decoder does (trailing data is not read).
func decodeAs[T any](service string) registryCheck {
	return func(_ []string, _ []byte, _ http.Header, body []byte) error {
		var p T
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&p); err != nil {
			return errVerify{fmt.Sprintf("cannot decode %s webhook payload: %v", service, err)}
		}
		return nil
	}
}

func verifyNexus(_ []string, token []byte, h http.Header, body []byte) error {
	sig := h.Get("X-Nexus-Webhook-Signature")
	if sig == "" {
		return errVerify{"the Nexus signature is missing from header"}
	}
	mac := hmac.New(sha1.New, token)
	mac.Write(body)
	// Flux compares the lowercase hex text, so an uppercase one fails.
	if !hmac.Equal([]byte(sig), []byte(hex.EncodeToString(mac.Sum(nil)))) {
		return errVerify{"invalid Nexus signature"}
	}
	var p struct {
		Action         string `json:"action"`
		RepositoryName string `json:"repositoryName"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return errVerify{fmt.Sprintf("cannot decode Nexus webhook payload: %v", err)}
	}
	return nil
}

// cdEventTypes are the subject.predicate pairs of CDEvents spec v0.4, the
// version Flux reads.
var cdEventTypes = map[string]bool{}

func init() {
	for subject, predicates := range map[string]string{
		"artifact": "deleted downloaded packaged published signed", "branch": "created deleted",
		"build": "finished queued started", "change": "abandoned created merged reviewed updated",
		"environment": "created deleted modified", "incident": "detected reported resolved",
		"pipelinerun": "finished queued started", "repository": "created deleted modified",
		"service": "deployed published removed rolledback upgraded", "taskrun": "finished started",
		"testcaserun": "finished queued skipped started", "testoutput": "published",
		"testsuiterun": "finished queued started", "ticket": "closed created updated",
	} {
		for _, p := range strings.Fields(predicates) {
			cdEventTypes[subject+"."+p] = true
		}
	}
}

var (
	cdEventTypeRE   = regexp.MustCompile(`^dev\.cdevents\.([a-z]+)\.([a-z]+)\.(.*)$`)
	cdCustomTypeRE  = regexp.MustCompile(`^dev\.cdeventsx\.[a-z]+-[a-z]+\.[a-z]+\.(.*)$`)
	cdEventSemverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
)

// checkCDEvent checks a CDEvents v0.4 envelope as the CDEvents SDK that
// Flux uses does: context id, source (a URI reference), a known type
// (`dev.cdevents.<subject>.<predicate>.<semver>`, any 0.x version, or a
// custom `dev.cdeventsx.<tool>-<subject>.<predicate>.<semver>`), version
// and timestamp; subject id and type. The content of each event type is
// not checked against its JSON schema (the SDK does).
func checkCDEvent(body []byte) error {
	var ev struct {
		Context *struct {
			Version   string    `json:"version"`
			ID        string    `json:"id"`
			Source    string    `json:"source"`
			Type      string    `json:"type"`
			Timestamp time.Time `json:"timestamp"`
		} `json:"context"`
		Subject *struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"subject"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return err
	}
	if ev.Context == nil || ev.Subject == nil {
		return fmt.Errorf("context and subject are required")
	}
	c := ev.Context
	if m := cdEventTypeRE.FindStringSubmatch(c.Type); m != nil {
		if !cdEventTypes[m[1]+"."+m[2]] {
			return fmt.Errorf("unknown event type %s", c.Type)
		}
		if !cdEventSemverRE.MatchString(m[3]) || !strings.HasPrefix(m[3], "0.") {
			return fmt.Errorf("sdk event version not compatible with %s", m[3])
		}
	} else if m := cdCustomTypeRE.FindStringSubmatch(c.Type); m == nil || !cdEventSemverRE.MatchString(m[1]) {
		return fmt.Errorf("cannot parse event type %s", c.Type)
	}
	if c.Version == "" || c.ID == "" || c.Source == "" {
		return fmt.Errorf("context version, id and source are required")
	}
	if _, err := url.Parse(c.Source); err != nil {
		return fmt.Errorf("context source is not a URI reference")
	}
	if ev.Subject.ID == "" || (ev.Subject.Type == "" && !strings.HasPrefix(c.Type, "dev.cdeventsx.")) {
		return fmt.Errorf("subject id and type are required")
	}
	return nil
}

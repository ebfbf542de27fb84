package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
)

func payload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "receivers", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// macHex is the hex HMAC of body: SHA-256 or SHA-1.
func macHex(sha256Algo bool, key string, body []byte) string {
	if sha256Algo {
		m := hmac.New(sha256.New, []byte(key))
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	m := hmac.New(sha1.New, []byte(key))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// TestRegistryAndForgeTypesVerify: each type accepts its service's real
// payload with its real headers, and refuses a request that fails its
// check with a 400 error (errVerify) that carries no token.
func TestRegistryAndForgeTypesVerify(t *testing.T) {
	const token = "s3cr3t"
	bb, nexus, cde := payload(t, "bitbucket"), payload(t, "nexus"), payload(t, "cdevents")
	cases := []struct {
		name, typ string
		events    []string
		header    map[string]string
		body      []byte
		ok        bool
	}{
		{"bitbucket signed", notificationv1.BitbucketReceiver, []string{"repo:refs_changed"},
			map[string]string{"X-Event-Key": "repo:refs_changed", "X-Hub-Signature": "sha256=" + macHex(true, token, bb), "Content-Type": "application/json; charset=utf-8"}, bb, true},
		{"bitbucket wrong signature", notificationv1.BitbucketReceiver, nil,
			map[string]string{"X-Event-Key": "repo:refs_changed", "X-Hub-Signature": "sha256=" + macHex(true, "other", bb)}, bb, false},
		{"bitbucket event not allowed", notificationv1.BitbucketReceiver, []string{"pr:merged"},
			map[string]string{"X-Event-Key": "repo:refs_changed", "X-Hub-Signature": "sha256=" + macHex(true, token, bb)}, bb, false},
		{"harbor", notificationv1.HarborReceiver, nil, map[string]string{"Authorization": token}, payload(t, "harbor"), true},
		{"harbor wrong token", notificationv1.HarborReceiver, nil, map[string]string{"Authorization": "Bearer " + token}, payload(t, "harbor"), false},
		{"dockerhub", notificationv1.DockerHubReceiver, nil, nil, payload(t, "dockerhub"), true},
		{"dockerhub not its payload", notificationv1.DockerHubReceiver, nil, nil, []byte(`{"push_data":"latest"}`), false},
		{"quay", notificationv1.QuayReceiver, nil, nil, payload(t, "quay"), true},
		{"quay not JSON", notificationv1.QuayReceiver, nil, nil, []byte("tags=latest"), false},
		{"acr", notificationv1.ACRReceiver, nil, nil, payload(t, "acr"), true},
		{"acr empty", notificationv1.ACRReceiver, nil, nil, nil, false},
		{"nexus", notificationv1.NexusReceiver, nil, map[string]string{"X-Nexus-Webhook-Signature": macHex(false, token, nexus), "X-Nexus-Webhook-Id": "rm:repository:component"}, nexus, true},
		{"nexus unsigned", notificationv1.NexusReceiver, nil, nil, nexus, false},
		{"nexus uppercase hex", notificationv1.NexusReceiver, nil, map[string]string{"X-Nexus-Webhook-Signature": strings.ToUpper(macHex(false, token, nexus))}, nexus, false},
		{"cdevents", notificationv1.CDEventsReceiver, []string{"dev.cdevents.artifact.packaged.0.2.0"},
			map[string]string{"Ce-Type": "dev.cdevents.artifact.packaged.0.2.0", "Ce-Specversion": "1.0"}, cde, true},
		{"cdevents type not allowed", notificationv1.CDEventsReceiver, []string{"dev.cdevents.service.deployed.0.2.0"},
			map[string]string{"Ce-Type": "dev.cdevents.artifact.packaged.0.2.0"}, cde, false},
		{"cdevents unknown type", notificationv1.CDEventsReceiver, nil, nil,
			[]byte(strings.Replace(string(cde), "artifact.packaged", "artifact.baked", 1)), false},
		{"cdevents without subject id", notificationv1.CDEventsReceiver, nil, nil,
			[]byte(strings.Replace(string(cde), `"id":"pkg:`, `"other":"pkg:`, 1)), false},
		{"cdevents not a CDEvent", notificationv1.CDEventsReceiver, nil, nil, payload(t, "quay"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			got, err := Verify(context.Background(), c.typ, c.events, map[string][]byte{"token": []byte(token)}, h, c.body)
			if c.ok {
				if err != nil || string(got) != string(c.body) {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve errVerify
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a verification error", err)
			}
			if strings.Contains(ve.msg, token) {
				t.Errorf("message %q carries the token", ve.msg)
			}
		})
	}
}

// TestGenericOIDCStillRefused: generic-oidc is the one Flux type Eddy
// does not serve.
func TestGenericOIDCStillRefused(t *testing.T) {
	if SupportedReceiverType(notificationv1.GenericOIDCReceiver) {
		t.Fatal("generic-oidc reported as supported")
	}
	_, err := Verify(context.Background(), notificationv1.GenericOIDCReceiver, nil, nil, http.Header{}, nil)
	var ve errVerify
	if err == nil || errors.As(err, &ve) || err.Error() != "receiver type generic-oidc is not supported by Eddy" {
		t.Errorf("got %v", err)
	}
}

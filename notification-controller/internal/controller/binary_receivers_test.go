package controller

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// receiverPayload reads a service's real webhook payload from the server
// package's testdata.
func receiverPayload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "server", "testdata", "receivers", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hexMAC(sha256Algo bool, key string, body []byte) string {
	h := sha1.New
	if sha256Algo {
		h = sha256.New
	}
	m := hmac.New(h, []byte(key))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// binaryReceiver runs the built binary on the objects labelled shard and
// returns a function posting to its receiver server.
func binaryReceiver(t *testing.T, shard string) func(path string, body []byte, headers map[string]string) int {
	rcvPort, _ := testenv.FreePort()
	testenv.RunController(t, env, ControllerName, "--watch-label-selector="+shardKey+"="+shard, "--events-addr=",
		fmt.Sprintf("--receiverAddr=127.0.0.1:%d", rcvPort), "--min-retry-delay=200ms", "--max-retry-delay=2s")
	if err := testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", rcvPort)); err != nil {
		t.Fatal(err)
	}
	return func(path string, body []byte, headers map[string]string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d%s", rcvPort, path), bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// waitServed waits for r to be Ready with its path and for the binary's
// receiver server to know the path (its cache), and returns the path.
func waitServed(t *testing.T, r *notificationv1.Receiver, token string, post func(string, []byte, map[string]string) int) string {
	t.Helper()
	path := webhook.Path(token, r.Name, r.Namespace)
	waitFor(t, r, "Ready with the webhook path", func() bool {
		return apimeta.IsStatusConditionTrue(r.Status.Conditions, meta.ReadyCondition) && r.Status.WebhookPath == path
	})
	// A request without credentials of an unknown path is 404; of a known
	// one 400 (refused) or, for the types without a signature, 200 or 400.
	deadline := time.Now().Add(30 * time.Second)
	for post(path, []byte("not json"), nil) == http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("the binary's receiver server does not know %s after 30s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return path
}

// receiverCase is one Receiver type as its service calls it.
type receiverCase struct {
	typ     string
	events  []string
	body    []byte
	headers map[string]string
	// refused is a request of the type that fails its check.
	refused map[string]string
}

func receiverCases(t *testing.T, token string) []receiverCase {
	bb, nexus, cde := receiverPayload(t, "bitbucket"), receiverPayload(t, "nexus"), receiverPayload(t, "cdevents")
	return []receiverCase{
		{typ: notificationv1.BitbucketReceiver, events: []string{"repo:refs_changed"}, body: bb,
			headers: map[string]string{"X-Event-Key": "repo:refs_changed", "X-Request-Id": "b3f4", "Content-Type": "application/json; charset=utf-8",
				"X-Hub-Signature": "sha256=" + hexMAC(true, token, bb)},
			refused: map[string]string{"X-Event-Key": "repo:refs_changed", "X-Hub-Signature": "sha256=" + hexMAC(true, "x", bb)}},
		{typ: notificationv1.HarborReceiver, body: receiverPayload(t, "harbor"),
			headers: map[string]string{"Authorization": token, "Content-Type": "application/json"},
			refused: map[string]string{"Authorization": "wrong"}},
		{typ: notificationv1.DockerHubReceiver, body: receiverPayload(t, "dockerhub"), headers: map[string]string{"Content-Type": "application/json"}},
		{typ: notificationv1.QuayReceiver, body: receiverPayload(t, "quay"), headers: map[string]string{"Content-Type": "application/json"}},
		{typ: notificationv1.NexusReceiver, body: nexus,
			headers: map[string]string{"X-Nexus-Webhook-Signature": hexMAC(false, token, nexus), "X-Nexus-Webhook-Id": "rm:repository:component",
				"Content-Type": "application/json; charset=UTF-8"},
			refused: map[string]string{"X-Nexus-Webhook-Signature": hexMAC(false, "x", nexus)}},
		{typ: notificationv1.ACRReceiver, body: receiverPayload(t, "acr"), headers: map[string]string{"Content-Type": "application/vnd.docker.distribution.events.v1+json"}},
		{typ: notificationv1.CDEventsReceiver, events: []string{"dev.cdevents.artifact.packaged.0.2.0"}, body: cde,
			headers: map[string]string{"Ce-Type": "dev.cdevents.artifact.packaged.0.2.0", "Ce-Specversion": "1.0", "Ce-Id": "271069a8",
				"Ce-Source": "/event/source/123", "Content-Type": "application/json"},
			refused: map[string]string{"Ce-Type": "dev.cdevents.service.deployed.0.2.0"}},
	}
}

// TestBinaryReceiverTypes: the built binary serves a Receiver of each
// registry and forge type of Flux: the service's real payload with its
// headers requests a reconcile of the Receiver's GitRepository, a request
// failing the type's check (signature, token, event type) is 400 and
// annotates nothing. gcr: a Pub/Sub push whose ID token is for another
// audience is refused; an accepted push needs Google's keys, online, so it
// is tested by the server package's unit test against a local JWKS.
func TestBinaryReceiverTypes(t *testing.T) {
	post := binaryReceiver(t, "rcvtypes")
	ns := newNamespace(t)
	token := "rcv-" + ns
	shard := func(o client.Object) client.Object { o.SetLabels(map[string]string{shardKey: "rcvtypes"}); return o }
	create(t, secret(ns, "tok", map[string]string{"token": token, "email": "push@acme.iam.gserviceaccount.com", "audience": "flux"}))
	cases := receiverCases(t, token)
	cases = append(cases, receiverCase{typ: notificationv1.GCRReceiver})
	for _, c := range cases {
		create(t, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.typ},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: metav1.Duration{Duration: time.Hour}, Suspend: true}})
		r := receiver(ns, c.typ, c.typ, "tok", notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: c.typ})
		r.Spec.Events = c.events
		create(t, shard(r))
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			r := &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.typ}}
			path := waitServed(t, r, token, post)
			target := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.typ}}
			if c.typ == notificationv1.GCRReceiver {
				jwt := "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0." + base64.RawURLEncoding.EncodeToString(
					fmt.Appendf(nil, `{"aud":"other","exp":%d,"iss":"https://accounts.google.com"}`, time.Now().Add(time.Hour).Unix())) + ".c2ln"
				push := fmt.Appendf(nil, `{"message":{"data":%q,"messageId":"1"},"subscription":"projects/acme/subscriptions/flux"}`,
					base64.StdEncoding.EncodeToString(receiverPayload(t, "gcr-data")))
				if code := post(path, push, map[string]string{"Authorization": "Bearer " + jwt, "Content-Type": "application/json"}); code != http.StatusBadRequest {
					t.Errorf("a token for another audience answered %d, want 400", code)
				}
				if v := requestedAt(t, target); v != "" {
					t.Errorf("a refused push annotated the target: %q", v)
				}
				return
			}
			if c.refused != nil {
				if code := post(path, c.body, c.refused); code != http.StatusBadRequest {
					t.Errorf("a request failing the check answered %d, want 400", code)
				}
				if v := requestedAt(t, target); v != "" {
					t.Fatalf("a refused request annotated the target: %q", v)
				}
			}
			if code := post(path, c.body, c.headers); code != http.StatusOK {
				t.Fatalf("the service's request answered %d, want 200", code)
			}
			if requestedAt(t, target) == "" {
				t.Error("the target has no reconcile request")
			}
		})
	}
}

// TestBinaryReceiverResourceFilters: with the built binary, a Receiver's
// resourceFilter and a resource's filter pick the resources a Docker Hub
// push reconciles, from the pushed tag (`req`) and the resources' labels
// (`res`); a filter that does not compile leaves the Receiver Ready=False
// and Stalled=True InvalidCELExpression with Flux's message.
func TestBinaryReceiverResourceFilters(t *testing.T) {
	post := binaryReceiver(t, "rcvcel")
	ns := newNamespace(t)
	token := "cel-" + ns
	shard := func(o client.Object) client.Object { o.SetLabels(map[string]string{shardKey: "rcvcel"}); return o }
	repo := func(name, channel string) *sourcev1.GitRepository {
		return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"channel": channel}},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: metav1.Duration{Duration: time.Hour}, Suspend: true}}
	}
	stable, beta, pinned := repo("stable", "stable"), repo("beta", "beta"), repo("pinned", "stable")
	ref := func(name string) notificationv1.CrossNamespaceObjectReference {
		return notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: name}
	}
	r := receiver(ns, "hub", notificationv1.DockerHubReceiver, "tok", ref("stable"), ref("beta"), ref("pinned"))
	// v1.2.3 is a stable tag: only the stable channel follows it.
	r.Spec.ResourceFilter = `!req.push_data.tag.contains('-') ? res.metadata.labels.channel == 'stable' : true`
	r.Spec.Resources[2].Filter = `req.repository.repo_name == 'acme/pinned'`
	bad := receiver(ns, "bad", notificationv1.GenericReceiver, "tok", ref("stable"))
	bad.Spec.Resources[0].Filter = `res.metadata.name == `
	create(t, secret(ns, "tok", map[string]string{"token": token}), stable, beta, pinned, shard(r), shard(bad))
	path := waitServed(t, r, token, post)
	if code := post(path, receiverPayload(t, "dockerhub"), map[string]string{"Content-Type": "application/json"}); code != http.StatusOK {
		t.Fatalf("the push answered %d, want 200", code)
	}
	for obj, want := range map[*sourcev1.GitRepository]bool{stable: true, beta: false, pinned: false} {
		if got := requestedAt(t, obj) != ""; got != want {
			t.Errorf("%s requested: %v, want %v", obj.Name, got, want)
		}
	}

	want := "Reconciliation failed terminally due to configuration error: invalid filter expression for resources[0] " +
		`(kind="GitRepository", name="stable"): failed to parse the CEL expression 'res.metadata.name == ': ERROR: <input>:1:`
	waitFor(t, bad, "Ready=False and Stalled=True InvalidCELExpression", func() bool {
		ready := apimeta.FindStatusCondition(bad.Status.Conditions, meta.ReadyCondition)
		stalled := apimeta.FindStatusCondition(bad.Status.Conditions, meta.StalledCondition)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == notificationv1.InvalidCELExpressionReason &&
			stalled != nil && stalled.Status == metav1.ConditionTrue && bad.Status.ObservedGeneration == bad.Generation
	})
	if c := apimeta.FindStatusCondition(bad.Status.Conditions, meta.ReadyCondition); !strings.HasPrefix(c.Message, want) || !strings.Contains(c.Message, "Syntax error") {
		t.Errorf("message %q, want prefix %q", c.Message, want)
	}
}

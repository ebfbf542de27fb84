package notifier

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/eddyops/eddy/pkg/events"
)

// pubsubFake starts pstest's in-process Pub/Sub server, points the
// clients at it as an emulator and creates the topics. What it reaches is
// the gRPC API of a fake, not Google's service.
func pubsubFake(t *testing.T, project string, topics ...string) *pstest.Server {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	ctx := context.Background()
	c, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, topic := range topics {
		if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/" + project + "/topics/" + topic}); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

func pubsubPost(t *testing.T, opts Options, ev *events.Event) error {
	t.Helper()
	opts.Type = "googlepubsub"
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.Post(ctx, ev)
}

func TestGooglePubSubPublishesTheEventJSONWithHeadersAsAttributes(t *testing.T) {
	srv := pubsubFake(t, "eddy-project", "flux-events")
	ev := testEvent(events.SeverityError, "HealthCheckFailed", map[string]string{"revision": "main@sha1:abc"})
	headers := map[string]string{"team": "platform"}
	if err := pubsubPost(t, Options{Address: "eddy-project", Channel: "flux-events", Headers: headers}, ev); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	var got events.Event
	if err := json.Unmarshal(msgs[0].Data, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, ev) || !reflect.DeepEqual(msgs[0].Attributes, headers) {
		t.Errorf("got %s attributes %v, want the event and %v", msgs[0].Data, msgs[0].Attributes, headers)
	}
}

func TestGooglePubSubMissingTopicFailsNamingIt(t *testing.T) {
	pubsubFake(t, "eddy-project")
	err := pubsubPost(t, Options{Address: "eddy-project", Channel: "absent"}, testEvent(events.SeverityInfo, "Progressing", nil))
	if err == nil || !strings.Contains(err.Error(), "googlepubsub: publishing to topic projects/eddy-project/topics/absent: NotFound") {
		t.Errorf("got %v, want a NotFound error naming the topic", err)
	}
}

func TestGooglePubSubRefusesBadOptionsWithoutTheToken(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Channel: "t"}, "googlepubsub provider: no address (spec.address: the GCP project ID)"},
		{Options{Address: "p"}, "googlepubsub provider: no channel (spec.channel: the topic ID)"},
		{Options{Address: "p", Channel: "t", Token: "s3cret-not-json"}, "the secret's token key is not JSON credentials"},
		{Options{Address: "p", Channel: "t", Token: `{"type":"s3cret"}`}, "not JSON credentials of a known type"},
	} {
		tc.opts.Type = "googlepubsub"
		_, err := New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret-not-json") {
			t.Errorf("New(%+v): %v, want %q", tc.opts, err, tc.want)
		}
	}
}

func TestGooglePubSubAcceptsServiceAccountCredentials(t *testing.T) {
	creds := `{"type":"service_account","project_id":"p","client_email":"flux@p.iam.gserviceaccount.com"}`
	if _, err := New(Options{Type: "googlepubsub", Address: "p", Channel: "t", Token: creds}); err != nil {
		t.Fatal(err)
	}
}

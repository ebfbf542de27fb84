package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runShard runs the built binary on the objects labelled shard and
// returns where it takes events, and the shard's labeller.
func runShard(t *testing.T, shard string) (string, func(client.Object) client.Object) {
	evPort, _ := testenv.FreePort()
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"="+shard, fmt.Sprintf("--events-addr=127.0.0.1:%d", evPort), "--receiverAddr=")
	if err := testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", evPort)); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/", evPort),
		func(o client.Object) client.Object { o.SetLabels(map[string]string{shardKey: shard}); return o }
}

// postUntil posts distinct error events about Kustomization apps in ns
// (none is dropped as a repeat) until done, for at most 60s.
func postUntil(t *testing.T, eventsAt, ns string, done func() bool) bool {
	for i := 0; i < 600; i++ {
		ev := fluxEvent(ns, "Kustomization", "apps", "error", fmt.Sprintf("cloudevent%d", i), nil)
		if code := postEventTo(t, eventsAt, ev); code != http.StatusAccepted {
			t.Fatalf("event answered %d", code)
		}
		if done() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// TestBinaryPublishesToGooglePubSub: the built binary publishes an error
// event through a googlepubsub Provider (project in spec.address, topic
// in spec.channel, the Secret's headers as attributes) to the Pub/Sub
// emulator its environment names: pstest's in-process fake of the gRPC
// API, not Google's service, so credentials are not exercised.
func TestBinaryPublishesToGooglePubSub(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr) // inherited by the binary
	c, err := pubsub.NewClient(context.Background(), "eddy-project")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.TopicAdminClient.CreateTopic(context.Background(), &pubsubpb.Topic{Name: "projects/eddy-project/topics/flux-events"}); err != nil {
		t.Fatal(err)
	}
	eventsAt, shard := runShard(t, "pubsub")
	ns := newNamespace(t)
	create(t, secret(ns, "pubsub", map[string]string{"headers": "team: platform\n"}),
		shard(provider(ns, "pubsub", "googlepubsub", "pubsub", func(p *notificationv1.Provider) {
			p.Spec.Address, p.Spec.Channel = "eddy-project", "flux-events"
		})),
		shard(alert(ns, "pubsub", "pubsub", "", ksSource("apps"))))
	if !postUntil(t, eventsAt, ns, func() bool { return len(srv.Messages()) > 0 }) {
		t.Fatal("no message on the topic")
	}
	m := srv.Messages()[0]
	var got map[string]any
	if err := json.Unmarshal(m.Data, &got); err != nil {
		t.Fatalf("message %s: %v", m.Data, err)
	}
	obj, _ := got["involvedObject"].(map[string]any)
	if obj["kind"] != "Kustomization" || obj["name"] != "apps" || got["severity"] != "error" || m.Attributes["team"] != "platform" {
		t.Errorf("got %s attributes %v, want the event about Kustomization apps and team=platform", m.Data, m.Attributes)
	}
}

// TestBinaryConnectsToAzureEventHub: the built binary opens an AMQP
// connection to the host of an azureeventhub Provider's connection string
// (its Secret's address; the emulator form, plain AMQP). No Event Hubs
// service or emulator runs here: the test's listener checks the AMQP
// protocol header the client sends first, and no event is delivered.
func TestBinaryConnectsToAzureEventHub(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	headers := make(chan string, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 8)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.ReadFull(conn, b)
			conn.Close()
			headers <- string(b)
		}
	}()
	eventsAt, shard := runShard(t, "eventhub")
	ns := newNamespace(t)
	conn := "Endpoint=sb://" + ln.Addr().String() + ";SharedAccessKeyName=send;SharedAccessKey=a2V5;EntityPath=flux;UseDevelopmentEmulator=true"
	create(t, secret(ns, "eventhub", map[string]string{"address": conn}),
		shard(provider(ns, "eventhub", "azureeventhub", "eventhub")),
		shard(alert(ns, "eventhub", "eventhub", "", ksSource("apps"))))
	var got string
	if !postUntil(t, eventsAt, ns, func() bool {
		select {
		case got = <-headers:
			return true
		default:
			return false
		}
	}) {
		t.Fatal("no connection to the event hub's host")
	}
	if got[:4] != "AMQP" {
		t.Errorf("first bytes %q, want an AMQP protocol header", got)
	}
}

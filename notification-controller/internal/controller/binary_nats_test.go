package controller

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBinaryPublishesToNATS: the built binary publishes an error event
// through a nats Provider, its Secret holding the server URL and a user
// and password, on the subject of spec.channel of a NATS server run by
// the test.
func TestBinaryPublishesToNATS(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		Users: []*server.User{{Username: "flux", Password: "nats-pw"}}})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	sub, err := nats.Connect(srv.ClientURL(), nats.UserInfo("flux", "nats-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	msgs := make(chan *nats.Msg, 64)
	if _, err := sub.ChanSubscribe("flux.events", msgs); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}

	evPort, _ := testenv.FreePort()
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=nats", fmt.Sprintf("--events-addr=127.0.0.1:%d", evPort), "--receiverAddr=")
	if err := testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", evPort)); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	shard := func(o client.Object) client.Object { o.SetLabels(map[string]string{shardKey: "nats"}); return o }
	create(t, secret(ns, "nats", map[string]string{"address": srv.ClientURL(), "username": "flux", "password": "nats-pw"}),
		shard(provider(ns, "nats", "nats", "nats", func(p *notificationv1.Provider) { p.Spec.Channel = "flux.events" })),
		shard(alert(ns, "nats", "nats", "", ksSource("apps"))))
	// The binary's cache has the Alert once an event is published; each
	// event differs, so none is dropped as a repeat.
	for i := 0; i < 600; i++ {
		ev := fluxEvent(ns, "Kustomization", "apps", "error", fmt.Sprintf("natsevent%d", i), nil)
		if code := postEventTo(t, fmt.Sprintf("http://127.0.0.1:%d/", evPort), ev); code != http.StatusAccepted {
			t.Fatalf("event answered %d", code)
		}
		select {
		case m := <-msgs:
			var got map[string]any
			if err := json.Unmarshal(m.Data, &got); err != nil {
				t.Fatalf("message %s: %v", m.Data, err)
			}
			obj, _ := got["involvedObject"].(map[string]any)
			if obj["kind"] != "Kustomization" || obj["name"] != "apps" || got["severity"] != "error" {
				t.Errorf("got %s, want the event about Kustomization apps", m.Data)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("no message on flux.events")
}

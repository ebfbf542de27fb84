package notifier

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// natsServer starts an in-process NATS server that wants user/password
// when user is set, and returns its client URL.
func natsServer(t *testing.T, user, password string) string {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true}
	if user != "" {
		opts.Users = []*server.User{{Username: user, Password: password}}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	return s.ClientURL()
}

func natsPost(t *testing.T, opts Options, ev *events.Event) error {
	t.Helper()
	opts.Type = "nats"
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.Post(ctx, ev)
}

func TestNATSPublishesTheEventJSONOnTheChannelSubject(t *testing.T) {
	url := natsServer(t, "eddy", "s3cret")
	sub, err := nats.Connect(url, nats.UserInfo("eddy", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	msgs := make(chan *nats.Msg, 1)
	if _, err := sub.ChanSubscribe("flux.events", msgs); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	ev := testEvent(events.SeverityError, "HealthCheckFailed", map[string]string{"revision": "main@sha1:abc"})
	if err := natsPost(t, Options{Address: url, Channel: "flux.events", Username: "eddy", Password: "s3cret"}, ev); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-msgs:
		var got events.Event
		if err := json.Unmarshal(m.Data, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&got, ev) {
			t.Errorf("got %s, want the event %+v", m.Data, ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no message on flux.events")
	}
}

func TestNATSWrongPasswordFailsWithoutTheSecret(t *testing.T) {
	url := natsServer(t, "eddy", "s3cret")
	for _, opts := range []Options{
		{Address: url, Channel: "flux.events", Username: "eddy", Password: "wrongpass"},
		{Address: strings.Replace(url, "nats://", "nats://eddy:wrongpass@", 1), Channel: "flux.events"},
	} {
		err := natsPost(t, opts, testEvent(events.SeverityInfo, "Progressing", nil))
		if err == nil || !strings.Contains(err.Error(), "nats: connecting to the server") || strings.Contains(err.Error(), "wrongpass") {
			t.Errorf("got %v, want a connection error without the password", err)
		}
	}
}

func TestNATSUnreachableServerFails(t *testing.T) {
	err := natsPost(t, Options{Address: "nats://127.0.0.1:1", Channel: "flux.events"}, testEvent(events.SeverityInfo, "Progressing", nil))
	if err == nil || !strings.Contains(err.Error(), "nats: connecting to the server") {
		t.Errorf("got %v, want a connection error", err)
	}
}

func TestNATSNeedsAddressAndChannel(t *testing.T) {
	for _, opts := range []Options{{Type: "nats", Channel: "s"}, {Type: "nats", Address: "nats://127.0.0.1:4222"}} {
		if _, err := New(opts); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", opts)
		}
	}
}

package notifier

import (
	"context"
	"encoding/json"
	"fmt"

	"cloud.google.com/go/pubsub/v2"
	"github.com/eddyops/eddy/pkg/events"
	"google.golang.org/api/option"
	"google.golang.org/grpc/status"
)

// GooglePubSub publishes the event JSON (as generic sends it) to the
// Pub/Sub topic spec.channel of the GCP project at the address, the
// secret's `headers` as the message's attributes. Flux compatible
// (google_pubsub.go): one client per event; the secret's `token` holds
// the JSON credentials, else the client finds its own (Application
// Default Credentials: on GKE, workload identity through the metadata
// server). The client is gRPC: certSecretRef and the proxies do not
// apply. PUBSUB_EMULATOR_HOST, when set in the controller's environment,
// sends to that emulator without credentials, as every Pub/Sub client does.
type GooglePubSub struct {
	project, topic string
	attrs          map[string]string
	creds          option.ClientOption
}

// gcpCredentialTypes are the `type` values of the credential files the
// token may hold, as Flux's client accepts them.
var gcpCredentialTypes = map[string]option.CredentialsType{
	"service_account":              option.ServiceAccount,
	"authorized_user":              option.AuthorizedUser,
	"impersonated_service_account": option.ImpersonatedServiceAccount,
	"external_account":             option.ExternalAccount,
}

func newGooglePubSub(opts Options) (*GooglePubSub, error) {
	if opts.Address == "" {
		return nil, fmt.Errorf("googlepubsub provider: no address (spec.address: the GCP project ID)")
	}
	if err := requireChannel(opts, "the topic ID"); err != nil {
		return nil, err
	}
	g := &GooglePubSub{project: opts.Address, topic: opts.Channel, attrs: opts.Headers}
	if len(g.attrs) == 0 {
		g.attrs = nil
	}
	if opts.Token != "" {
		var file struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(opts.Token), &file); err != nil {
			return nil, fmt.Errorf("googlepubsub provider: the secret's token key is not JSON credentials")
		}
		typ, ok := gcpCredentialTypes[file.Type]
		if !ok {
			return nil, fmt.Errorf("googlepubsub provider: the secret's token key is not JSON credentials of a known type")
		}
		g.creds = option.WithAuthCredentialsJSON(typ, []byte(opts.Token))
	}
	return g, nil
}

// Post sends ev.
func (g *GooglePubSub) Post(ctx context.Context, ev *events.Event) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var opts []option.ClientOption
	if g.creds != nil {
		opts = append(opts, g.creds)
	}
	c, err := pubsub.NewClient(ctx, g.project, opts...)
	if err != nil {
		return fmt.Errorf("googlepubsub: making the client: %s", grpcMessage(err))
	}
	defer c.Close()
	p := c.Publisher(g.topic)
	defer p.Stop()
	if _, err := p.Publish(ctx, &pubsub.Message{Data: payload, Attributes: g.attrs}).Get(ctx); err != nil {
		return fmt.Errorf("googlepubsub: publishing to topic projects/%s/topics/%s: %s", g.project, g.topic, grpcMessage(err))
	}
	return nil
}

// grpcMessage is err's gRPC code and message when it has them: the
// client's wrapping repeats them.
func grpcMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Code().String() + ": " + s.Message()
	}
	return err.Error()
}

package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/redact"
)

// AzureEventHub sends the event JSON (as generic sends it) as one event to
// an Azure Event Hub over AMQP. Flux compatible (azure_eventhub.go), two
// forms: the address is a SAS connection string (`Endpoint=sb://…;
// SharedAccessKeyName=…;SharedAccessKey=…;EntityPath=<hub>`) and there is
// no token; or the address is the event hub's name, spec.channel its
// namespace (`.servicebus.windows.net` added when it has no
// `.servicebus.`) and the secret's `token` a JWT sent as it is. One
// connection per event. Unlike Flux, a token is required in the second
// form: no managed (workload) identity. The client is AMQP over TLS:
// certSecretRef and the proxies do not apply.
type AzureEventHub struct {
	connString     string
	namespace, hub string
	token          string
	// retry is the client's default (3 retries from 4s) but in tests.
	retry   azeventhubs.RetryOptions
	secrets []string
}

func newAzureEventHub(opts Options) (*AzureEventHub, error) {
	if opts.Address == "" {
		return nil, fmt.Errorf("azureeventhub provider: no address (spec.address or the secret's address key: a connection string or the event hub's name)")
	}
	if isSASConnectionString(opts.Address) {
		if opts.Token != "" {
			return nil, fmt.Errorf("azureeventhub provider: the address is a SAS connection string and the secret has a token key: use one of them")
		}
		props, err := azeventhubs.ParseConnectionString(opts.Address)
		if err != nil {
			return nil, fmt.Errorf("azureeventhub provider: the address is not a connection string: %s", connStringReason(err))
		}
		if props.EntityPath == nil || *props.EntityPath == "" {
			return nil, fmt.Errorf("azureeventhub provider: the connection string has no EntityPath (the event hub's name)")
		}
		e := &AzureEventHub{connString: opts.Address, hub: *props.EntityPath}
		for _, s := range []*string{props.SharedAccessKey, props.SharedAccessSignature} {
			if s != nil && *s != "" {
				e.secrets = append(e.secrets, *s)
			}
		}
		return e, nil
	}
	if err := requireChannel(opts, "the Event Hubs namespace"); err != nil {
		return nil, err
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("azureeventhub provider: the secret has no token key (a JWT; managed identity is not supported)")
	}
	ns := opts.Channel
	if !strings.Contains(ns, ".servicebus.") {
		ns += ".servicebus.windows.net"
	}
	return &AzureEventHub{namespace: ns, hub: opts.Address, token: opts.Token, secrets: []string{opts.Token}}, nil
}

// isSASConnectionString is Flux's test of a connection string, widened to
// a shared access signature.
func isSASConnectionString(address string) bool {
	return strings.Contains(address, "SharedAccessKey") || strings.Contains(address, "SharedAccessSignature")
}

// connStringReason is the parser's error, which names keys, not values.
func connStringReason(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "UseDevelopmentEmulator=true can only be used") {
		return "UseDevelopmentEmulator=true needs an sb:// endpoint"
	}
	return msg
}

// Post sends ev.
func (e *AzureEventHub) Post(ctx context.Context, ev *events.Event) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	opts := &azeventhubs.ProducerClientOptions{RetryOptions: e.retry}
	var pc *azeventhubs.ProducerClient
	if e.connString != "" {
		pc, err = azeventhubs.NewProducerClientFromConnectionString(e.connString, "", opts)
	} else {
		pc, err = azeventhubs.NewProducerClient(e.namespace, e.hub, staticToken(e.token), opts)
	}
	if err != nil {
		return e.fail("making the client", err)
	}
	defer pc.Close(context.WithoutCancel(ctx))
	batch, err := pc.NewEventDataBatch(ctx, nil)
	if err != nil {
		return e.fail("connecting to event hub "+e.hub, err)
	}
	if err := batch.AddEventData(&azeventhubs.EventData{Body: payload}, nil); err != nil {
		return e.fail("adding the event", err)
	}
	if err := pc.SendEventDataBatch(ctx, batch, nil); err != nil {
		return e.fail("sending to event hub "+e.hub, err)
	}
	return nil
}

// fail is err of step without the key, signature or token.
func (e *AzureEventHub) fail(step string, err error) error {
	msg := redact.Message(err.Error())
	for _, s := range e.secrets {
		msg = strings.ReplaceAll(msg, s, redact.Mask)
	}
	return fmt.Errorf("azureeventhub: %s: %s", step, msg)
}

// staticToken is the secret's JWT as a credential; a new one comes with
// the next event after the Secret changes, as in Flux.
type staticToken string

func (t staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(t)}, nil
}

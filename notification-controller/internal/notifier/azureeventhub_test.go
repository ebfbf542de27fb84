package notifier

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2"
	"github.com/eddyops/eddy/pkg/events"
)

const sasKey = "c2FzLWtleS1zM2NyZXQ="

func TestAzureEventHubReadsBothAddressForms(t *testing.T) {
	sas, err := New(Options{Type: "azureeventhub",
		Address: "Endpoint=sb://flux.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=" + sasKey + ";EntityPath=events"})
	if err != nil {
		t.Fatal(err)
	}
	if e := sas.(*AzureEventHub); e.hub != "events" || e.connString == "" || len(e.secrets) != 1 || e.secrets[0] != sasKey {
		t.Errorf("connection string read as %+v", e)
	}
	for ns, want := range map[string]string{"flux": "flux.servicebus.windows.net", "flux.servicebus.chinacloudapi.cn": "flux.servicebus.chinacloudapi.cn"} {
		jwt, err := New(Options{Type: "azureeventhub", Address: "events", Channel: ns, Token: "eyJ.jwt"})
		if err != nil {
			t.Fatal(err)
		}
		if e := jwt.(*AzureEventHub); e.hub != "events" || e.namespace != want || e.token != "eyJ.jwt" {
			t.Errorf("namespace %q read as %+v", ns, e)
		}
	}
}

func TestAzureEventHubRefusesBadOptionsWithoutSecrets(t *testing.T) {
	conn := "Endpoint=sb://flux.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=" + sasKey
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Channel: "ns"}, "azureeventhub provider: no address"},
		{Options{Address: conn + ";EntityPath=events", Token: "eyJ.jwt"}, "the address is a SAS connection string and the secret has a token key"},
		{Options{Address: conn}, "the connection string has no EntityPath"},
		{Options{Address: "SharedAccessKey=" + sasKey + ";EntityPath=events"}, `the address is not a connection string: key "Endpoint" must not be empty`},
		{Options{Address: "Endpoint=sb://flux.servicebus.windows.net/;SharedAccessKey=" + sasKey}, `key "SharedAccessKeyName" must not be empty`},
		{Options{Address: "Endpoint=sb://h/;SharedAccessKeyName=k;SharedAccessKey"}, "unmatched key value"},
		{Options{Address: "Endpoint=https://h/;SharedAccessKeyName=k;SharedAccessKey=" + sasKey + ";UseDevelopmentEmulator=true"}, "UseDevelopmentEmulator=true needs an sb:// endpoint"},
		{Options{Address: "events", Token: "eyJ.jwt"}, "no channel (spec.channel: the Event Hubs namespace)"},
		{Options{Address: "events", Channel: "ns"}, "the secret has no token key (a JWT; managed identity is not supported)"},
	} {
		tc.opts.Type = "azureeventhub"
		_, err := New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), sasKey) {
			t.Errorf("New(%q): %v, want %q", tc.opts.Address, err, tc.want)
		}
	}
}

// TestAzureEventHubUnreachableHostFailsWithoutSecrets: no Event Hubs
// service or emulator runs here, so both forms reach a closed local port
// (the emulator form connects over plain AMQP, the JWT form over TLS);
// the error says which step failed and holds no key or token.
func TestAzureEventHubUnreachableHostFailsWithoutSecrets(t *testing.T) {
	for _, opts := range []Options{
		{Address: "Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=send;SharedAccessKey=" + sasKey + ";EntityPath=events;UseDevelopmentEmulator=true"},
		{Address: "events", Channel: "127.0.0.1:1.servicebus.local", Token: "eyJ.s3cret"},
	} {
		opts.Type = "azureeventhub"
		n, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		n.(*AzureEventHub).retry = azeventhubs.RetryOptions{MaxRetries: -1}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = n.Post(ctx, testEvent(events.SeverityError, "HealthCheckFailed", nil))
		cancel()
		if err == nil || !strings.HasPrefix(err.Error(), "azureeventhub: connecting to event hub events: ") ||
			strings.Contains(err.Error(), sasKey) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("got %v, want a connection error without secrets", err)
		}
	}
}

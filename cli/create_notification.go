package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
)

func newCreateAlertCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var providerRef, severity string
	var eventSources []string
	cmd := &cobra.Command{
		Use:     "alert [name]",
		Short:   "Create or update an Alert",
		Example: "  eddy create alert --event-severity info --event-source Kustomization/flux-system --provider-ref slack flux-system",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if providerRef == "" {
				return errors.New("provider ref is required")
			}
			var sources []notificationv1.CrossNamespaceObjectReference
			for _, es := range eventSources {
				kind, name, ns := kindNameNamespace(es)
				if kind == "" {
					return fmt.Errorf("invalid event source '%s', must be in format <kind>/<name>", es)
				}
				sources = append(sources, notificationv1.CrossNamespaceObjectReference{Kind: kind, Name: name, Namespace: ns})
			}
			if len(sources) == 0 {
				return errors.New("at least one event source is required")
			}
			alert := &notificationv1.Alert{ObjectMeta: om, Spec: notificationv1.AlertSpec{
				ProviderRef: meta.LocalObjectReference{Name: providerRef}, EventSeverity: severity, EventSources: sources,
			}}
			return g.create(cmd, f, creation{obj: alert, kind: notificationv1.AlertKind, created: notificationv1.AlertKind})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&providerRef, "provider-ref", "", "reference to provider")
	fs.StringVar(&severity, "event-severity", "", "severity of events to send alerts for")
	fs.StringSliceVar(&eventSources, "event-source", nil, "sources that should generate alerts (<kind>/<name>), also accepts comma-separated values")
	return cmd
}

func newCreateAlertProviderCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var typ, channel, username, address, secretRef string
	cmd := &cobra.Command{
		Use:     "alert-provider [name]",
		Short:   "Create or update a Provider",
		Example: "  eddy create alert-provider slack --type slack --channel general --address https://hooks.slack.com/services/... --secret-ref webhook-url",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if typ == "" {
				return errors.New("Provider type is required")
			}
			p := &notificationv1.Provider{ObjectMeta: om, Spec: notificationv1.ProviderSpec{
				Type: typ, Channel: channel, Username: username, Address: address,
			}}
			if secretRef != "" {
				p.Spec.SecretRef = &meta.LocalObjectReference{Name: secretRef}
			}
			return g.create(cmd, f, creation{obj: p, kind: notificationv1.ProviderKind, created: notificationv1.ProviderKind})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&typ, "type", "", "type of provider")
	fs.StringVar(&channel, "channel", "", "channel to send messages to in the case of a chat provider")
	fs.StringVar(&username, "username", "", "bot username used by the provider")
	fs.StringVar(&address, "address", "", "path to either the git repository, chat provider or webhook")
	fs.StringVar(&secretRef, "secret-ref", "", "name of secret containing authentication token")
	return cmd
}

// receiverTypes are flux's `create receiver --type` values.
var receiverTypes = []string{
	notificationv1.GenericReceiver, notificationv1.GenericHMACReceiver, notificationv1.GitHubReceiver,
	notificationv1.GitLabReceiver, notificationv1.BitbucketReceiver, notificationv1.HarborReceiver,
	notificationv1.DockerHubReceiver, notificationv1.QuayReceiver, notificationv1.GCRReceiver,
	notificationv1.NexusReceiver, notificationv1.ACRReceiver, notificationv1.CDEventsReceiver,
}

func newCreateReceiverCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var typ, secretRef string
	var events, resources []string
	cmd := &cobra.Command{
		Use:   "receiver [name]",
		Short: "Create or update a Receiver",
		Example: "  eddy create receiver github-receiver --type github --event ping --event push " +
			"--secret-ref webhook-token --resource GitRepository/webapp",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if typ == "" {
				return errors.New("Receiver type is required")
			}
			if !slices.Contains(receiverTypes, typ) {
				return fmt.Errorf("receiver type '%s' is not supported, must be one of: %s", typ, strings.Join(receiverTypes, ", "))
			}
			if secretRef == "" {
				return errors.New("secret ref is required")
			}
			var refs []notificationv1.ReceiverResource
			for _, r := range resources {
				kind, name, ok := strings.Cut(r, "/")
				if !ok || kind == "" {
					return fmt.Errorf("invalid event source '%s', must be in format <kind>/<name>", r)
				}
				refs = append(refs, notificationv1.ReceiverResource{CrossNamespaceObjectReference: notificationv1.CrossNamespaceObjectReference{Kind: kind, Name: name}})
			}
			if len(refs) == 0 {
				return errors.New("atleast one resource is required")
			}
			rcv := &notificationv1.Receiver{ObjectMeta: om, Spec: notificationv1.ReceiverSpec{
				Type: typ, Events: events, Resources: refs, SecretRef: &meta.LocalObjectReference{Name: secretRef},
			}}
			return g.create(cmd, f, creation{obj: rcv, kind: notificationv1.ReceiverKind, created: notificationv1.ReceiverKind,
				done: func(u *ui.UI) error {
					u.Success("generated webhook URL %s", rcv.Status.WebhookPath)
					return nil
				}})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&typ, "type", "", "the receiver type")
	fs.StringVar(&secretRef, "secret-ref", "", "the name of the Secret holding the webhook token")
	fs.StringSliceVar(&events, "event", nil, "also accepts comma-separated values")
	fs.StringSliceVar(&resources, "resource", nil, "also accepts comma-separated values")
	return cmd
}

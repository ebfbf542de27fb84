// Command notification-controller is Eddy's notification-controller: it
// routes the events other controllers POST to Alerts' Providers (Slack,
// Teams, Discord, generic webhooks, GitHub/GitLab commit statuses) and turns
// verified webhooks (Receivers) into reconcile requests.
//
// It takes Flux's flag names and defaults (contract §9), so Flux's
// deployment manifests carry over; --kubeconfig or KUBECONFIG selects the
// cluster outside one. The manager is built by controller.NewManager, as in
// the tests. Its own flags:
//
//	--events-addr=:9090          event server; other controllers' --events-addr is http://<this>/
//	--receiverAddr=:9292         webhook receivers (alias --receiver-addr); a Receiver's URL is
//	                             http://<this><status.webhookPath>, see pkg/webhook
//	--rate-limit-interval=5m     repeats of an event within it are dropped (429)
//
// To run it beside the other controllers on one machine (as `eddy dev`
// does), bind both servers to loopback ports and pass the event server's URL
// to source- and kustomize-controller, e.g.
//
//	notification-controller --kubeconfig=$KUBECONFIG --events-addr=127.0.0.1:9690 \
//	  --receiverAddr=127.0.0.1:9692 --health-addr=127.0.0.1:9693 --metrics-addr=0
//	kustomize-controller ... --events-addr=http://127.0.0.1:9690/
package main

import (
	"github.com/eddyops/eddy/notification-controller/internal/controller"
	"github.com/eddyops/eddy/pkg/controllerkit"
)

func main() {
	var c controller.Config
	controllerkit.Main(controller.ControllerName, &c)
}

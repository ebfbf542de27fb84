// Package server holds notification-controller's two HTTP servers: the
// event server (--events-addr, :9090) that takes the Flux event JSON the
// other controllers POST and routes it to Alerts' Providers, and the
// receiver server (--receiverAddr, :9292) that turns verified webhooks into
// reconcile requests.
package server

import (
	"context"
	"net/http"
	"time"

	"github.com/eddyops/eddy/pkg/controllerkit"
)

// MaxBodyBytes bounds request bodies of both servers: 3 MiB, larger ones
// are answered 413. Flux compatible.
const MaxBodyBytes = 3 << 20

// maxHeaderBytes bounds request headers: 256 KiB. Flux compatible.
const maxHeaderBytes = 256 << 10

// Serve serves h on addr until ctx ends, then shuts down within 5s. Read
// timeouts are Flux's: 10s for headers, 30s for the whole request.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	return controllerkit.Serve(ctx, &http.Server{
		Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxHeaderBytes: maxHeaderBytes,
	})
}

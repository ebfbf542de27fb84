package main

import (
	"context"
	"net/http"

	"github.com/eddyops/eddy/notification-controller/internal/server"
)

// serverRunnable is an HTTP server run by the manager on every replica.
type serverRunnable struct {
	addr    string
	handler http.HandlerFunc
}

func (s serverRunnable) Start(ctx context.Context) error { return server.Serve(ctx, s.addr, s.handler) }

// NeedLeaderElection is false: events and webhooks are served by all replicas.
func (s serverRunnable) NeedLeaderElection() bool { return false }

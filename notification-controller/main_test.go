package main

import (
	"flag"
	"testing"
	"time"

	"github.com/eddyops/eddy/notification-controller/internal/controller"
)

// TestFlags: Flux's flag names and defaults, and --receiver-addr as an
// alias of Flux's --receiverAddr.
func TestFlags(t *testing.T) {
	parse := func(args ...string) controller.Config {
		fs := flag.NewFlagSet("nc", flag.ContinueOnError)
		var c controller.Config
		c.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := parse(); c.EventsAddr != ":9090" || c.ReceiverAddr != ":9292" || c.RateLimitInterval != 5*time.Minute || c.Concurrent != 4 {
		t.Errorf("defaults %+v", c)
	}
	if c := parse("--receiverAddr=:1"); c.ReceiverAddr != ":1" {
		t.Errorf("--receiverAddr: %+v", c)
	}
	if c := parse("--receiver-addr=:2", "--events-addr=:3", "--rate-limit-interval=1m"); c.ReceiverAddr != ":2" || c.EventsAddr != ":3" || c.RateLimitInterval != time.Minute {
		t.Errorf("--receiver-addr: %+v", c)
	}
}

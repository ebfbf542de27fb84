package main

import (
	"flag"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/runtime"
)

// TestFlags: Flux's flag names and defaults, and --receiver-addr as an
// alias of Flux's --receiverAddr.
func TestFlags(t *testing.T) {
	parse := func(args ...string) Flags {
		fs := flag.NewFlagSet("nc", flag.ContinueOnError)
		var opts runtime.Options
		var f Flags
		opts.BindFlags(fs, 4)
		f.bindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := parse(); f.EventsAddr != ":9090" || f.ReceiverAddr != ":9292" || f.RateLimitInterval != 5*time.Minute {
		t.Errorf("defaults %+v", f)
	}
	if f := parse("--receiverAddr=:1"); f.ReceiverAddr != ":1" {
		t.Errorf("--receiverAddr: %+v", f)
	}
	if f := parse("--receiver-addr=:2", "--events-addr=:3", "--rate-limit-interval=1m"); f.ReceiverAddr != ":2" || f.EventsAddr != ":3" || f.RateLimitInterval != time.Minute {
		t.Errorf("--receiver-addr: %+v", f)
	}
}

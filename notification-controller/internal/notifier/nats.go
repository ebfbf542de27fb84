package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// NATS publishes the event JSON (as generic sends it) on the subject
// spec.channel of the NATS server at the address (a `nats://` URL, or
// several separated by commas). Flux compatible (nats.go): one connection
// per event; authentication by the secret's `creds` (a user credentials
// file: JWT and NKey seed), else its `nkey` (an NKey seed), else
// `username` and `password` when both are set. TLS settings and the proxy
// do not apply, as in Flux.
type NATS struct {
	servers, subject   string
	username, password string
	creds, nkey        []byte
}

// natsTimeout bounds connecting and flushing when ctx has no deadline.
const natsTimeout = 15 * time.Second

func newNATS(opts Options) (*NATS, error) {
	if err := requireAddress(opts); err != nil {
		return nil, err
	}
	if err := requireChannel(opts, "the subject"); err != nil {
		return nil, err
	}
	return &NATS{servers: opts.Address, subject: opts.Channel, username: opts.Username, password: opts.Password,
		creds: opts.Creds, nkey: opts.NKey}, nil
}

// Post sends ev.
func (n *NATS) Post(ctx context.Context, ev *events.Event) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	timeout := natsTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	opts := []nats.Option{nats.Name("Eddy notification-controller"), nats.Timeout(timeout), nats.NoReconnect()}
	auth, wipe, err := n.auth()
	if err != nil {
		return err
	}
	if wipe != nil {
		defer wipe()
	}
	if auth != nil {
		opts = append(opts, auth)
	}
	nc, err := nats.Connect(n.servers, opts...)
	if err != nil {
		return n.fail("connecting to the server", err)
	}
	defer nc.Close()
	if err := nc.Publish(n.subject, payload); err != nil {
		return n.fail("publishing to subject "+n.subject, err)
	}
	if _, ok := ctx.Deadline(); ok {
		err = nc.FlushWithContext(ctx)
	} else {
		err = nc.FlushTimeout(timeout)
	}
	if err == nil {
		err = nc.LastError()
	}
	if err != nil {
		return n.fail("publishing to subject "+n.subject, err)
	}
	return nil
}

// auth is the connection option of the secret's credentials, in Flux's
// order, and what wipes the NKey from memory after use.
func (n *NATS) auth() (nats.Option, func(), error) {
	switch {
	case len(n.creds) > 0:
		return nats.UserCredentialBytes(n.creds), nil, nil
	case len(n.nkey) > 0:
		kp, err := nkeys.FromSeed(n.nkey)
		if err != nil {
			return nil, nil, fmt.Errorf("nats provider: the secret's nkey key is not an NKey seed")
		}
		pub, err := kp.PublicKey()
		if err != nil {
			kp.Wipe()
			return nil, nil, fmt.Errorf("nats provider: the secret's nkey key is not an NKey seed")
		}
		return nats.Nkey(pub, kp.Sign), kp.Wipe, nil
	case n.username != "" && n.password != "":
		return nats.UserInfo(n.username, n.password), nil, nil
	}
	return nil, nil, nil
}

// fail is err of step without a credential: the client's messages may
// quote a server URL, whose userinfo is masked, and the password never
// appears.
func (n *NATS) fail(step string, err error) error {
	msg := redact.Message(err.Error())
	if n.password != "" {
		msg = strings.ReplaceAll(msg, n.password, redact.Mask)
	}
	return fmt.Errorf("nats: %s: %s", step, msg)
}

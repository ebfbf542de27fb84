package dev

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/process"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listening reports whether a loopback port accepts connections.
func listening(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func portOf(url string) int {
	_, p, err := net.SplitHostPort(url[len("http://"):])
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// LastLogLine returns the last line of a controller's log, shortened: for a
// JSON log line its message and error; "no output" when there is none.
func LastLogLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "no log"
	}
	defer f.Close()
	const tail = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		_, _ = f.Seek(-tail, io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if line == "" {
		return "no output"
	}
	var entry struct {
		Msg   string `json:"msg"`
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg != "" {
		line = entry.Msg
		if entry.Error != "" {
			line += ": " + entry.Error
		}
	}
	line = strings.Join(strings.Fields(line), " ")
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}

// Healthy reports whether url answers 200 within a second.
func Healthy(url string) bool {
	if url == "" {
		return false
	}
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// leaseGrace is how long a ready controller may go without a held lease:
// a successor waits out its predecessor's lease (15s in eddy dev) first.
const leaseGrace = 30 * time.Second

// leaseName returns the name of the leader-election lease of the
// controller process procName (<controller> or <controller>-shard<i>) of
// an environment with shards shard processes per sharded controller, as
// the controller names it (runtime.LeaderElectionID of its
// --watch-label-selector); "" for a process that is no controller.
func leaseName(procName string, shards int) string {
	for _, name := range append(slices.Clone(Controllers), optionalNames()...) {
		switch {
		case procName == name && shards > 0 && slices.Contains(ShardedControllers, name):
			return controllerkit.LeaderElectionID(name, install.UnshardedSelector)
		case procName == name:
			return controllerkit.LeaderElectionID(name, "")
		case strings.HasPrefix(procName, name+"-shard"):
			return controllerkit.LeaderElectionID(name, install.ShardSelector(strings.TrimPrefix(procName, name+"-")))
		}
	}
	return ""
}

// Lease states, as `eddy dev status` shows them.
const (
	LeaseHeld     = "held"     // a holder renewed it within its duration
	LeaseExpired  = "expired"  // its holder stopped renewing it
	LeaseReleased = "released" // its holder stepped down
	LeaseMissing  = "missing"  // no such Lease (or no namespace for it)
	LeaseUnknown  = "?"        // it could not be read
)

// leaseState reads the lease name in Namespace and says which of the
// states above it is in at now.
func leaseState(ctx context.Context, c client.Client, name string, now time.Time) string {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, l); apierrors.IsNotFound(err) {
		return LeaseMissing
	} else if err != nil {
		return LeaseUnknown
	}
	switch {
	case l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "":
		return LeaseReleased
	case l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil ||
		now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)):
		return LeaseExpired
	}
	return LeaseHeld
}

// controllerHealth says how the supervised controller p is: "ready"
// (alive, answering its readiness probe and, after leaseGrace, its lease
// held), else "down", "not ready" or "not leading"; lease is its lease's
// state ("-" without a client).
func controllerHealth(ctx context.Context, c client.Client, p process.Status, shards int, now time.Time) (health, lease string) {
	lease = "-"
	if c != nil {
		if name := leaseName(p.Name, shards); name != "" {
			lease = leaseState(ctx, c, name, now)
		}
	}
	switch {
	case !Alive(p.PID):
		return "down", lease
	case !Healthy(p.HealthURL):
		return "not ready", lease
	case lease != "-" && lease != LeaseHeld && lease != LeaseUnknown && now.Sub(p.StartedAt) > leaseGrace:
		return "not leading", lease
	}
	return "ready", lease
}

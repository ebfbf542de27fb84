package localcluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/process"
)

// Component names accepted by Restart, StopComponent and StartComponent
// (the binaries' names; the full profile also runs kube-controller-manager,
// kube-scheduler and kwok).
const (
	Etcd          = "etcd"
	KubeAPIServer = "kube-apiserver"
)

// Restart kills the component name (SIGKILL, as a crash or an OOM kill
// would) and starts it again in place: the same binary and arguments, so
// the same ports, data directory and certificates, its log appended to the
// same file. It returns once the apiserver answers /readyz again (for etcd
// too: the apiserver's readiness checks its etcd), or with an error naming
// the component when it does not within the cluster's start-up timeout
// (Options.Timeout) or ctx ends first. Clients keep working afterwards:
// the address and the certificates are unchanged.
func (c *Cluster) Restart(ctx context.Context, name string) error {
	if err := c.StopComponent(name, 0); err != nil {
		return err
	}
	return c.StartComponent(ctx, name)
}

// StopComponent stops the component name: SIGTERM, then SIGKILL after
// grace; a grace of 0 sends SIGKILL at once. The cluster stays down (for
// an apiserver or etcd) until StartComponent. The error names an unknown
// component or one the cluster does not run.
func (c *Cluster) StopComponent(name string, grace time.Duration) error {
	p, _, err := c.component(name)
	if err != nil {
		return err
	}
	if grace <= 0 {
		p.Kill()
	} else {
		p.Stop(grace)
	}
	return nil
}

// StartComponent starts the stopped component name again in place, as
// Restart does, and waits for the apiserver's readiness. Starting one that
// still runs is an error.
func (c *Cluster) StartComponent(ctx context.Context, name string) error {
	p, i, err := c.component(name)
	if err != nil {
		return err
	}
	if done, _ := p.Exited(); !done {
		return fmt.Errorf("%s is running: stop it first", name)
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return fmt.Errorf("restarting %s: the cluster was stopped", name)
	}
	np, err := process.Start(p.Spec())
	if err == nil {
		c.procs[i] = np
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if name == Etcd && len(c.ports) > 0 {
		if err := c.waitEtcdHealthy(ctx, c.ports[0]); err != nil {
			return fmt.Errorf("restarting %s: %w\n%s", name, err, np.Tail(20))
		}
	}
	if err := c.waitAPIReady(ctx); err != nil {
		return fmt.Errorf("restarting %s: %w\n%s", name, err, np.Tail(20))
	}
	return nil
}

// waitEtcdHealthy polls etcd's /health on its client port until it
// reports healthy: the apiserver's /readyz may still answer from before.
func (c *Cluster) waitEtcdHealthy(ctx context.Context, port int) error {
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	return c.poll(ctx, "etcd /health", func() (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"health":"true"`), nil
	})
}

// component is the process named name and its index in c.procs.
func (c *Cluster) component(name string) (*process.Process, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.procs {
		if p.Name() == name {
			return p, i, nil
		}
	}
	return nil, 0, fmt.Errorf("the cluster runs no component %q", name)
}

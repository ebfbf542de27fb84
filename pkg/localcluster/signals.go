package localcluster

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// registry holds the running clusters that asked for Options.HandleSignals,
// so that a SIGINT or SIGTERM stops them before the process exits.
var registry = struct {
	sync.Mutex
	clusters map[*Cluster]struct{}
	once     sync.Once
}{clusters: map[*Cluster]struct{}{}}

// handleSignals installs, once per process, the handler of
// Options.HandleSignals and registers c with it.
func handleSignals(c *Cluster) {
	registry.Lock()
	registry.clusters[c] = struct{}{}
	registry.Unlock()
	registry.once.Do(func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-sigs
			registry.Lock()
			running := make([]*Cluster, 0, len(registry.clusters))
			for c := range registry.clusters {
				running = append(running, c)
			}
			registry.Unlock()
			for _, c := range running {
				c.Stop()
			}
			// Die of the same signal, as if it had not been caught.
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		}()
	})
}

func unregister(c *Cluster) {
	registry.Lock()
	delete(registry.clusters, c)
	registry.Unlock()
}

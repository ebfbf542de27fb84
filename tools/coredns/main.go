// Command coredns is CoreDNS with only the plugins the local cluster's DNS needs
// (pkg/localcluster dns.go): CoreDNS's compile-time plugin selection, which sets
// dnsserver.Directives to the chosen plugins, in CoreDNS's execution order, and imports
// only their packages instead of core/plugin (all of them). Built by tools/coredns.sh.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the order in which a query passes the plugins: the order of these names
// in CoreDNS's own core/dnsserver/zdirectives.go (plugin.cfg), which the plugins assume.
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"cache",
	"kubernetes",
	"loop",
	"forward",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}

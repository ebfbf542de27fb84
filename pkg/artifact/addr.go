package artifact

import (
	"net"
	"os"
)

// AdvertisedAddr derives the address a storage server advertises in
// artifact URLs from its bind address, as Flux's source-controller does:
// ":9090" ⇒ "localhost:9090", "0.0.0.0:9090" (or "[::]:9090") ⇒
// "$HOSTNAME:9090"; another host, or an address without a port, is kept.
func AdvertisedAddr(bind string) string {
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return bind
	}
	switch host {
	case "":
		host = "localhost"
	case "0.0.0.0", "::":
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

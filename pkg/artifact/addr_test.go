package artifact

import (
	"os"
	"testing"
)

// TestAdvertisedAddrFromBindAddress: an empty host is localhost, a
// wildcard host the machine's name, anything else kept.
func TestAdvertisedAddrFromBindAddress(t *testing.T) {
	h, _ := os.Hostname()
	for bind, want := range map[string]string{":9090": "localhost:9090", "0.0.0.0:9090": h + ":9090",
		"[::]:9090": h + ":9090", "storage.flux-system:80": "storage.flux-system:80", "nohost": "nohost"} {
		if got := AdvertisedAddr(bind); got != want {
			t.Errorf("AdvertisedAddr(%q) = %q, want %q", bind, got, want)
		}
	}
}

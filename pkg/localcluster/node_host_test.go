package localcluster

import (
	"errors"
	"strings"
	"testing"
)

// A machine without the node's packages gets one line naming them and the
// command that installs them, and an error tests recognise to skip.
func TestNodeHostMissingPackageSaysWhatToInstall(t *testing.T) {
	saved := nodePackages
	t.Cleanup(func() { nodePackages = saved })
	nodePackages = append(append(nodePackages[:0:0], nodePackages...),
		struct{ pkg, file string }{"eddy-no-such-package", "/nonexistent/eddy-no-such-file"})
	err := checkNodeHost(t.TempDir())
	if !errors.Is(err, ErrNodeUnsupported) {
		t.Fatalf("got %v; want ErrNodeUnsupported", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "apt-get install -y eddy-no-such-package") {
		t.Errorf("error %q; want one line with the apt-get command for the missing package", msg)
	}
}

// The binaries `make tools` builds are checked after the machine's
// prerequisites, with the error every profile gives.
func TestNodeHostMissingBinariesSayMakeTools(t *testing.T) {
	err := checkNodeHost(t.TempDir())
	if errors.Is(err, ErrNodeUnsupported) {
		t.Skip(err)
	}
	if !errors.Is(err, ErrBinariesMissing) || !strings.Contains(err.Error(), "kubelet") {
		t.Fatalf("got %v; want ErrBinariesMissing naming kubelet", err)
	}
}

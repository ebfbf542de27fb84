package decryptor

import (
	"fmt"
	"os"
	"testing"

	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
	"github.com/eddyops/eddy/pkg/testenv"
)

// helperPath is the SOPS helper the tests decrypt with: the built
// eddy-sops, as the controller runs it.
var helperPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "eddy-sops-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helperPath, err = testenv.BuildBinary("./kustomize-controller/cmd/"+sopswire.Helper, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

package sopshelper_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor/sopstest"
)

// TestMain trusts the TLS fakes' certificate before anything reads the
// trust roots.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "eddy-sops-ca-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ca, err := sopstest.TrustTLSFakes(dir)
	if err == nil {
		err = os.Setenv("SSL_CERT_FILE", ca)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

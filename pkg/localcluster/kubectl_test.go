package localcluster_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/localcluster"
)

func TestKubectlIsTheClustersRelease(t *testing.T) {
	kubectl, err := localcluster.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "version", "--client").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl version --client: %v\n%s", err, out)
	}
	if first, _, _ := strings.Cut(string(out), "\n"); first != "Client Version: v1.37.2" {
		t.Errorf("kubectl version --client printed %q, want %q", first, "Client Version: v1.37.2")
	}
}

func TestMissingKubectlSaysMakeTools(t *testing.T) {
	t.Setenv("EDDY_K8S_BIN_DIR", t.TempDir())
	_, err := localcluster.Kubectl()
	if !errors.Is(err, localcluster.ErrBinariesMissing) || !strings.Contains(err.Error(), "run `make tools`") {
		t.Fatalf("got %v; want an error telling to run `make tools`", err)
	}
}

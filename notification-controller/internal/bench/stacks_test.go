package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/crds"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
)

// shardKey is Flux's sharding label: each stack watches only the objects
// labelled with its name, so both run on the same API server at once.
const shardKey = "sharding.fluxcd.io/key"

// stack is one set of running source-, kustomize- and
// notification-controller processes.
type stack struct {
	name        string
	receiverURL string // http://127.0.0.1:<port>
	logs        map[string]string
	// sourceNote says which source-controller the stack runs, when it is
	// not its own.
	sourceNote string
	bin        string // Eddy's binaries, when not the workspace's
}

// eddyStack runs Eddy's three built controllers on shard name, from the
// directory bin when not empty (another build, to compare), else as
// testenv.BuildController finds them.
func eddyStack(b *testing.B, name, bin string) *stack {
	s := &stack{name: name, logs: map[string]string{}, bin: bin}
	dir := b.TempDir()
	ports := freePorts(b, 3)
	events := fmt.Sprintf("127.0.0.1:%d", ports[0])
	s.receiverURL = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	sel := "--watch-label-selector=" + shardKey + "=" + s.name
	s.startEddy(b, dir, "notification-controller", sel, "--events-addr="+events,
		"--receiverAddr="+strings.TrimPrefix(s.receiverURL, "http://"))
	s.startEddy(b, dir, "source-controller", sel, "--events-addr=http://"+events,
		"--storage-path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", ports[2]), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", ports[2]))
	s.startEddy(b, dir, "kustomize-controller", sel, "--events-addr=http://"+events)
	return s
}

func (s *stack) startEddy(b *testing.B, dir, name string, args ...string) {
	exe := filepath.Join(s.bin, name)
	if s.bin == "" {
		var err error
		if exe, err = testenv.BuildController(name, dir); err != nil {
			b.Fatal(err)
		}
	}
	log := filepath.Join(dir, name+".log")
	p, err := testenv.StartController(env, exe, log, append(args, "--log-level=debug")...)
	if err != nil {
		b.Fatal(err)
	}
	s.logs[name] = log
	b.Cleanup(p.Stop)
}

// fluxStack runs Flux's own controllers (bin/flux-<name>) on shard "flux"
// (notification-controller, which has no --watch-label-selector, on the
// namespace ns alone: its runtime namespace with --watch-all-namespaces=false),
// after installing the CRDs of Flux's kinds Eddy does not serve (Bucket,
// ExternalArtifact), which Flux's controllers watch. Without Flux's
// source-controller, Eddy's runs in its place and the stack says so;
// without Flux's notification- or kustomize-controller there is no Flux
// stack (nil), and only Eddy's is measured.
func fluxStack(b *testing.B, ns string) *stack {
	s := &stack{name: "flux", logs: map[string]string{}}
	dir := b.TempDir()
	nc, kc := fluxBinary(b, "notification-controller"), fluxBinary(b, "kustomize-controller")
	if nc == "" || kc == "" {
		b.Log("no Flux stack: bin/flux-notification-controller and bin/flux-kustomize-controller are needed (bash tools/flux-controllers.sh)")
		return nil
	}
	installFluxOnlyCRDs(b)
	ports := freePorts(b, 5)
	events := fmt.Sprintf("127.0.0.1:%d", ports[0])
	s.receiverURL = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	sel := "--watch-label-selector=" + shardKey + "=" + s.name
	common := []string{sel, "--enable-leader-election=false", "--log-level=debug"}
	s.startFlux(b, dir, nc, ports[3], "--enable-leader-election=false", "--log-level=debug", "--events-addr="+events,
		"--receiverAddr="+strings.TrimPrefix(s.receiverURL, "http://"), "--watch-all-namespaces=false", "RUNTIME_NAMESPACE="+ns)
	storage := []string{"--events-addr=http://" + events, "--storage-path=" + filepath.Join(dir, "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", ports[2]), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", ports[2])}
	// Flux's source-controller wants its storage directory to exist.
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		b.Fatal(err)
	}
	if sc := fluxBinary(b, "source-controller"); sc != "" {
		s.startFlux(b, dir, sc, ports[4], append(common, storage...)...)
	} else {
		s.sourceNote = "Flux's source-controller is not built: Eddy's runs in its place"
		b.Log("flux stack: " + s.sourceNote)
		s.startEddy(b, dir, "source-controller", append(storage, sel)...)
	}
	s.startFlux(b, dir, kc, freePorts(b, 1)[0], append(common, "--events-addr=http://"+events)...)
	return s
}

// fluxBinary is bin/flux-<name> when built, else "".
func fluxBinary(b *testing.B, name string) string {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(root, "bin", "flux-"+name)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return path
}

// startFlux runs Flux's binary exe with args, KUBECONFIG (it has no
// --kubeconfig flag), its health endpoint on health and no metrics
// endpoint, and waits until /readyz answers 200. An argument
// RUNTIME_NAMESPACE=<ns> is set in its environment instead (default
// "default").
func (s *stack) startFlux(b *testing.B, dir, exe string, health int, args ...string) {
	name := filepath.Base(exe)
	runtimeNS := "RUNTIME_NAMESPACE=default"
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		if strings.HasPrefix(a, "RUNTIME_NAMESPACE=") {
			runtimeNS = a
			return true
		}
		return false
	})
	log := filepath.Join(dir, "flux-"+name+".log")
	fh, err := os.Create(log)
	if err != nil {
		b.Fatal(err)
	}
	args = append(args, fmt.Sprintf("--health-addr=127.0.0.1:%d", health), "--metrics-addr=0")
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.KubeconfigPath, runtimeNS)
	cmd.Stdout, cmd.Stderr = fh, fh
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		fh.Close()
	})
	s.logs[name] = log
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(log)
			b.Fatalf("Flux's %s not ready after 60s:\n%s", name, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// installFluxOnlyCRDs installs Flux's Bucket and ExternalArtifact CRDs from
// the source-controller module tools/flux-controllers.sh builds from
// (EDDY_FLUX_CRDS names another directory of CRD files).
func installFluxOnlyCRDs(b *testing.B) {
	dir := os.Getenv("EDDY_FLUX_CRDS")
	if dir == "" {
		dir = fluxSourceModuleCRDs(b)
	}
	all, err := crds.Read(dir)
	if err != nil {
		b.Fatal(err)
	}
	have := map[string]bool{}
	for _, c := range env.CRDs {
		have[c.Name] = true
	}
	var missing = all[:0]
	for _, c := range all {
		if !have[c.Name] {
			missing = append(missing, c)
		}
	}
	if err := crds.Install(context.Background(), env.Client, missing); err != nil {
		b.Fatal(err)
	}
}

// fluxSourceModuleCRDs is config/crd/bases of Flux's source-controller
// module, at the version bin/flux-kustomize-controller was built from
// (both are released together), from the Go module cache.
func fluxSourceModuleCRDs(b *testing.B) string {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		b.Fatal(err)
	}
	v, err := os.ReadFile(filepath.Join(root, "bin", ".flux-kustomize-controller.version"))
	if err != nil {
		b.Skipf("no bin/.flux-kustomize-controller.version: run `bash tools/flux-controllers.sh` (%v)", err)
	}
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/fluxcd/source-controller@"+strings.TrimSpace(string(v)))
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("go mod download Flux's source-controller: %v\n%s", err, out)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		b.Fatalf("go mod download Flux's source-controller: no module directory (%v)", err)
	}
	return filepath.Join(mod.Dir, "config", "crd", "bases")
}

func freePorts(b *testing.B, n int) []int {
	ports, err := localcluster.FreePorts(n)
	if err != nil {
		b.Fatal(err)
	}
	return ports
}

// envInt is the integer environment variable name, or def when unset.
func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// saveLogs copies the stack's logs into $EDDY_WEBHOOK_BENCH_LOGS, if set,
// as <stack>-<controller>.log.
func (s *stack) saveLogs(b *testing.B) {
	dir := os.Getenv("EDDY_WEBHOOK_BENCH_LOGS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, path := range s.logs {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name+"-"+name+".log"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

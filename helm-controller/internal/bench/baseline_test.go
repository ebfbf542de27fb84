package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
)

type baselineResult struct {
	time       time.Duration
	cpu        time.Duration // this process's
	peakRSSMiB float64       // this process's, since the baseline started; 0 if unknown
}

// runBaseline installs the chart n times with Helm's install action, as
// podinfo-<i> in a new namespace, by concurrency workers each with its own
// action configuration (secrets storage), waiting for each release's
// resources with the HelmRelease default timeout, as helm-controller does by
// default. The chart archive is loaded once per install, as a controller
// loads a fetched artifact.
func runBaseline(b *testing.B, n int, chart string) baselineResult {
	ctx := context.Background()
	ns := testenv.NewNamespace(b, env.Client, "bench-sdk-")
	data, err := os.ReadFile(chart)
	if err != nil {
		b.Fatal(err)
	}
	// Resetting the high-water mark (proc(5) clear_refs, value 5) makes
	// VmHWM this phase's peak; where it is not allowed the metric is left out.
	hwmReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	cpu0 := cpuSelf(b)
	start := time.Now()
	cfgs := make([]*action.Configuration, concurrency)
	for i := range cfgs {
		cfgs[i] = helmtest.ActionConfig(b, env.KubeconfigPath, ns)
	}
	work := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := install(ctx, cfg, ns, fmt.Sprintf("podinfo-%d", i), data); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	res := baselineResult{time: time.Since(start)}
	cpu1 := cpuSelf(b)
	res.cpu = cpu1 - cpu0
	if hwmReset {
		res.peakRSSMiB = testenv.ProcStatusMiB(b, "self", "VmHWM")
	}
	if len(errs) > 0 {
		b.Fatalf("%d of %d Helm installs failed, e.g.: %v", len(errs), n, errs[0])
	}
	deployed := 0
	for _, r := range helmtest.Releases(b, env.KubeconfigPath, ns) {
		if r.Info.Status == release.StatusDeployed {
			deployed++
		}
	}
	if deployed != n {
		b.Fatalf("%d of %d baseline releases deployed", deployed, n)
	}
	return res
}

func install(ctx context.Context, cfg *action.Configuration, ns, name string, archive []byte) error {
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return err
	}
	in := action.NewInstall(cfg)
	in.Namespace, in.ReleaseName = ns, name
	in.Wait, in.WaitForJobs, in.Timeout = true, true, installTimeout
	_, err = in.RunWithContext(ctx, ch, map[string]any{})
	return err
}

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkScanCycle100Repositories measures the built binary on 100
// ImageRepositories of 50 tags each on one registry, each read by one
// ImagePolicy: the time until every policy is Ready, the registry
// requests of that first cycle and of a second, no-change cycle (the
// interval elapsed), and the controller's peak RSS. One run whatever b.N.
func BenchmarkScanCycle100Repositories(b *testing.B) {
	const repos, tags = 100, 50
	reg := testenv.NewRegistry(b)
	host := reg.Host()
	img, _ := random.Image(64, 1)
	for i := range repos {
		for j := range tags {
			ref, _ := name.NewTag(fmt.Sprintf("%s/app%d:1.%d.0", host, i, j))
			if err := remote.Write(ref, img); err != nil {
				b.Fatal(err)
			}
		}
	}
	s := testenv.NewScheme()
	_ = imagev1.AddToScheme(s)
	c, _ := client.New(env.Config, client.Options{Scheme: s})
	ns := testenv.NewNamespace(b, c, "bench")
	before := reg.Requests(testenv.RegistryTagsList)
	proc := testenv.RunController(b, env, ControllerName, "--storage-path="+b.TempDir(), "--concurrent=4")
	start := time.Now()
	const interval = 20 * time.Second
	for i := range repos {
		r := imageRepository(ns, fmt.Sprintf("app%d", i), fmt.Sprintf("%s/app%d", host, i))
		r.Spec.Interval = metav1.Duration{Duration: interval}
		p := imagePolicy(ns, fmt.Sprintf("app%d", i), r.Name, imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "1.x"}})
		if err := c.Create(context.Background(), r); err != nil {
			b.Fatal(err)
		}
		if err := c.Create(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
	allReady := func() bool {
		var l imagev1.ImagePolicyList
		if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil || len(l.Items) != repos {
			return false
		}
		for i := range l.Items {
			if !isReady(&l.Items[i]) {
				return false
			}
		}
		return true
	}
	for !allReady() {
		time.Sleep(100 * time.Millisecond)
	}
	first := time.Since(start)
	firstLists := reg.Requests(testenv.RegistryTagsList) - before
	// The second cycle: every repository scanned again once its interval
	// elapsed (a newer scanTime), no tag having changed.
	scanned := map[string]time.Time{}
	rescanned := func() bool {
		var l imagev1.ImageRepositoryList
		if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
			return false
		}
		done := 0
		for _, r := range l.Items {
			t := r.Status.LastScanResult.ScanTime.Time
			if first, ok := scanned[r.Name]; !ok {
				scanned[r.Name] = t
			} else if t.After(first) {
				done++
			}
		}
		return done == repos
	}
	for !rescanned() {
		time.Sleep(500 * time.Millisecond)
	}
	secondLists := reg.Requests(testenv.RegistryTagsList) - before - firstLists
	b.ReportMetric(first.Seconds(), "s-first-cycle")
	b.ReportMetric(float64(firstLists), "tagslists-first-cycle")
	b.ReportMetric(float64(secondLists), "tagslists-second-cycle")
	b.ReportMetric(testenv.PeakRSSMiB(proc.PID()), "MiB-peak-rss")
}

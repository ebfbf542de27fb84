package controller

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func rusage(b *testing.B) (cpu time.Duration, maxRSSMiB float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), float64(ru.Maxrss) / 1024
}

// BenchmarkKustomizations creates N Kustomizations that each apply 5
// ConfigMaps from one GitRepository and measures the time until all are
// Ready and the CPU of this process (the in-process controller and the
// polling client); as the baseline in the same run, the same number of
// objects applied by a plain server-side-apply loop with the controller's
// concurrency (4). It reports the ratio controller/baseline and the peak RSS.
func BenchmarkKustomizations(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				benchKustomizations(b, n)
			}
		})
	}
}

func configMapYAML(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  key: value-%s\n", name, ns, name)
}

func benchKustomizations(b *testing.B, n int) {
	ctx := context.Background()
	ns := newNamespace(b)
	files := map[string]string{}
	for i := range n {
		for j := range 5 {
			name := fmt.Sprintf("k%d-%d", i, j)
			files[fmt.Sprintf("k%d/%s.yaml", i, name)] = configMapYAML(ns, name)
		}
	}
	r := newRepo(b, files)
	newSource(b, ns, "src", r)

	b.ResetTimer()
	cpu0, _ := rusage(b)
	start := time.Now()
	for i := range n {
		newKustomization(b, ns, fmt.Sprintf("k%d", i), "src", func(k *kustomizev1.Kustomization) { k.Spec.Path = fmt.Sprintf("k%d", i) })
	}
	for {
		list := &kustomizev1.KustomizationList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, k := range list.Items {
			if c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition); c != nil && c.Status == "True" {
				ready++
			}
		}
		if ready == n {
			break
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("%d of %d Kustomizations Ready after 10 minutes", ready, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	controllerTime := time.Since(start)
	cpu1, rss := rusage(b)

	// Baseline: the same number of objects, applied directly.
	base := newNamespace(b)
	start = time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan error, 1)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				for j := range 5 {
					u := &unstructured.Unstructured{}
					u.SetAPIVersion("v1")
					u.SetKind("ConfigMap")
					u.SetNamespace(base)
					u.SetName(fmt.Sprintf("k%d-%d", i, j))
					u.Object["data"] = map[string]any{"key": "value"}
					if err := env.Client.Patch(ctx, u, client.Apply, client.FieldOwner("baseline"), client.ForceOwnership); err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	baseline := time.Since(start)
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.StopTimer()
	b.ReportMetric(controllerTime.Seconds(), "controller-s")
	b.ReportMetric(baseline.Seconds(), "baseline-ssa-loop-s")
	b.ReportMetric(controllerTime.Seconds()/baseline.Seconds(), "ratio-controller/baseline")
	b.ReportMetric((cpu1 - cpu0).Seconds(), "cpu-s")
	b.ReportMetric(rss, "peak-rss-MiB")
}

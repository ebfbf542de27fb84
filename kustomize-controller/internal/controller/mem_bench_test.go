package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// BenchmarkMemory runs the built kustomize-controller as a shard of its own
// (--watch-label-selector=sharding.fluxcd.io/key=mem-<name>) on N
// Kustomizations × 5 ConfigMaps from one GitRepository (N from
// EDDY_MEM_BENCH_N, default 300) and reports, once all are Ready, the
// process's peak RSS (VmHWM) and the largest anonymous and file-backed
// resident parts seen (/proc/<pid>/smaps_rollup, sampled while it works).
//
// Other binaries run one after the other in the same run, each on its own
// namespace and objects:
//   - EDDY_MEM_BENCH_BINARIES="name=path,…": more kustomize-controller
//     builds with Eddy's flags (e.g. a throwaway variant, to compare);
//   - Flux's kustomize-controller, with Flux's flags (leader election off):
//     EDDY_FLUX_KC=path, else bin/flux-kustomize-controller when built
//     (make bench builds it; EDDY_FLUX_KC=none leaves it out); a stub
//     Bucket CRD is installed for it unless EDDY_FLUX_CRDS names a
//     directory of CRD files to install instead.
//
// With EDDY_MEM_BENCH_PROFILES=dir, each Eddy binary's heap profile
// (/debug/pprof/heap on its metrics address) is saved there as
// <name>.heap once all are Ready. Timing and memory are reported, never
// checked.
func BenchmarkMemory(b *testing.B) {
	n := 300
	if s := os.Getenv("EDDY_MEM_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("EDDY_MEM_BENCH_N: %v", err)
		}
	}
	exe, err := testenv.BuildController("kustomize-controller", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	type bin struct {
		name, exe string
		flux      bool
	}
	bins := []bin{{name: "eddy", exe: exe}}
	if s := os.Getenv("EDDY_MEM_BENCH_BINARIES"); s != "" {
		for _, kv := range strings.Split(s, ",") {
			name, path, ok := strings.Cut(kv, "=")
			if !ok {
				b.Fatalf("EDDY_MEM_BENCH_BINARIES: %q is not name=path", kv)
			}
			bins = append(bins, bin{name: name, exe: path})
		}
	}
	flux := os.Getenv("EDDY_FLUX_KC")
	if flux == "" {
		flux = testenv.BuiltFluxController(b, "kustomize-controller")
	}
	if flux != "" && flux != "none" {
		if dir := os.Getenv("EDDY_FLUX_CRDS"); dir != "" {
			memInstallCRDs(b, dir)
		} else {
			defer installBucketCRD(b)()
		}
		bins = append(bins, bin{name: "flux", exe: flux, flux: true})
	}
	for range b.N {
		peaks := map[string]float64{}
		for _, bn := range bins {
			r := memRun(b, bn.name, bn.exe, bn.flux, n)
			peaks[bn.name] = r.peak
			b.ReportMetric(r.peak, bn.name+"-peak-rss-MiB")
			b.ReportMetric(r.anon, bn.name+"-anon-MiB")
			b.ReportMetric(r.file, bn.name+"-file-MiB")
			b.ReportMetric(r.ready.Seconds(), bn.name+"-ready-s")
		}
		if f, ok := peaks["flux"]; ok && f > 0 {
			b.ReportMetric(peaks["eddy"]/f, "ratio-eddy/flux-peak-rss")
		}
	}
}

type memResult struct {
	peak, anon, file float64 // MiB
	ready            time.Duration
}

// memRun starts exe on n new Kustomizations of shard mem-<name>, waits
// until all are Ready, measures it, then deletes the Kustomizations (not
// pruning) and stops it.
func memRun(b *testing.B, name, exe string, flux bool, n int) memResult {
	ctx := context.Background()
	shard := "mem-" + name
	ns := newNamespace(b)
	files := map[string]string{}
	for i := range n {
		for j := range 5 {
			cm := fmt.Sprintf("k%d-%d", i, j)
			files[fmt.Sprintf("k%d/%s.yaml", i, cm)] = configMapYAML(ns, cm)
		}
	}
	newSource(b, ns, "src", newRepo(b, files))

	port, err := testenv.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"--watch-label-selector=" + shardKey + "=" + shard, "--metrics-addr=" + metrics}
	if flux {
		args = append(args, "--enable-leader-election=false")
		exe = memKubeconfigFromEnv(b, exe)
	}
	p, err := testenv.StartController(env, exe, filepath.Join(b.TempDir(), name+".log"), args...)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()

	start := time.Now()
	for i := range n {
		newKustomization(b, ns, fmt.Sprintf("k%d", i), "src", func(k *kustomizev1.Kustomization) {
			k.Labels = map[string]string{shardKey: shard}
			k.Spec.Path = fmt.Sprintf("k%d", i)
			k.Spec.Prune = false // the cleanup only drops the Kustomizations
		})
	}
	var res memResult
	sample := func() {
		anon, file := memSmaps(b, p.PID())
		res.anon, res.file = max(res.anon, anon), max(res.file, file)
	}
	for {
		sample()
		list := &kustomizev1.KustomizationList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, k := range list.Items {
			if c := readyCond(&k); c != nil && c.Status == "True" {
				ready++
			}
		}
		if ready == n {
			break
		}
		if time.Since(start) > 15*time.Minute {
			b.Fatalf("%s: %d of %d Kustomizations Ready after 15 minutes", name, ready, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.ready = time.Since(start)
	sample()
	res.peak = testenv.ProcStatusMiB(b, strconv.Itoa(p.PID()), "VmHWM")
	b.Logf("%s: resident mappings of the executable:\n%s", name, memExeMappings(b, p.PID()))
	if dir := os.Getenv("EDDY_MEM_BENCH_PROFILES"); dir != "" && !flux {
		saveProfile(b, metrics, "heap", filepath.Join(dir, name+".heap"))
	}
	b.Logf("%s: %d Ready in %s, VmHWM %.1f MiB, max anonymous %.1f MiB, max file-backed %.1f MiB",
		name, n, res.ready.Round(time.Millisecond), res.peak, res.anon, res.file)

	if err := env.Client.DeleteAllOf(ctx, &kustomizev1.Kustomization{}, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		list := &kustomizev1.KustomizationList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err == nil && len(list.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: Kustomizations of %s not deleted in 5 minutes", name, ns)
		}
	}
	return res
}

// memKubeconfigFromEnv returns a script that runs exe (exec: same process)
// with --kubeconfig=<path> turned into $KUBECONFIG, for Flux's binary,
// which reads the variable and has no such flag.
func memKubeconfigFromEnv(b *testing.B, exe string) string {
	script := filepath.Join(b.TempDir(), filepath.Base(exe))
	body := "#!/bin/sh\nfor a; do shift; case \"$a\" in --kubeconfig=*) export KUBECONFIG=\"${a#--kubeconfig=}\";; *) set -- \"$@\" \"$a\";; esac; done\nexec " +
		strconv.Quote(exe) + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		b.Fatal(err)
	}
	return script
}

// memExeMappings lists the mappings of pid's executable file
// (testenv.ExeMappings), one a line.
func memExeMappings(b *testing.B, pid int) string {
	ms, err := testenv.ExeMappings(pid)
	if err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&out, "  %s\n", m)
	}
	return out.String()
}

// memSmaps returns the anonymous and the file-backed resident memory of pid
// in MiB (testenv.ResidentSplit).
func memSmaps(b *testing.B, pid int) (anon, file float64) {
	anon, file, err := testenv.ResidentSplit(pid)
	if err != nil {
		b.Fatal(err)
	}
	return anon, file
}

// memInstallCRDs creates the CustomResourceDefinitions of the YAML files in
// dir (already installed ones are kept).
func memInstallCRDs(b *testing.B, dir string) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		b.Fatalf("no CRD files in %s: %v", dir, err)
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		docs, err := testenv.YAMLDocuments(data)
		if err != nil {
			b.Fatal(err)
		}
		for _, doc := range docs {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				b.Fatalf("%s: %v", path, err)
			}
			if err := env.Client.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
				b.Fatalf("%s: %v", path, err)
			}
		}
	}
}

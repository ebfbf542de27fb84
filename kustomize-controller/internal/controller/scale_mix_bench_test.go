package controller

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// objectMix is what each Kustomization of a BenchmarkScale run applies
// (and the baseline loop applies for it).
type objectMix struct {
	name string
	// objects are the objects of Kustomization i of a run in namespace ns.
	objects func(ns string, i int) []*unstructured.Unstructured
}

var (
	// configMapsMix: 5 ConfigMaps, all of one kind.
	configMapsMix = objectMix{"configmaps", configMapObjects}
	// mixedMix: a Namespace of its own (named after the run's namespace,
	// labelled benchNamespaceLabel), a ConfigMap, a Secret, a Service and
	// a Deployment (0 replicas: no Kustomization waits, and pods would only
	// load the API server), the last four in the run's namespace.
	mixedMix = objectMix{"mixed", mixedObjects}
)

// benchNamespaceLabel marks the Namespaces a mix creates with the run's
// namespace, so that the clean-up finds them.
const benchNamespaceLabel = "eddy.bench/scale-run"

// scaleCase is one sub-benchmark of BenchmarkScale.
type scaleCase struct {
	n, shards int
	lim       scaleLimits
	mix       objectMix
}

func (c scaleCase) name() string {
	return fmt.Sprintf("n=%d/shards=%d/limits=%s/mix=%s", c.n, c.shards, c.lim.name, c.mix.name)
}

// scaleCases is BenchmarkScale's table: N of 1000 and 5000, or the
// comma-separated list in EDDY_BENCH_SCALE_N (a short run: 300); each N
// on 1 and 2 shards with configMapsMix, and mixedMix on one shard for N up
// to 1000, at Flux's default limits. The raised limits run too only with
// EDDY_BENCH_SCALE_RAISED=1: on an API server with Priority and Fairness
// (the test environment's) the binary has no client-side limiter, so
// both limits measure the same client.
func scaleCases(b *testing.B) []scaleCase {
	ns := []int{1000, 5000}
	if v := os.Getenv("EDDY_BENCH_SCALE_N"); v != "" {
		ns = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("EDDY_BENCH_SCALE_N=%q: want positive numbers separated by commas", v)
			}
			ns = append(ns, n)
		}
	}
	limits := []scaleLimits{defaultLimits}
	if os.Getenv("EDDY_BENCH_SCALE_RAISED") == "1" {
		limits = append(limits, raisedLimits)
	}
	var cases []scaleCase
	for _, n := range ns {
		for _, shards := range []int{1, 2} {
			for _, lim := range limits {
				cases = append(cases, scaleCase{n, shards, lim, configMapsMix})
				if shards == 1 && n <= 1000 {
					cases = append(cases, scaleCase{n, shards, lim, mixedMix})
				}
			}
		}
	}
	return cases
}

func newObject(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func configMapObjects(ns string, i int) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, 0, 5)
	for j := range 5 {
		name := fmt.Sprintf("k%d-%d", i, j)
		objs = append(objs, newObject("v1", "ConfigMap", ns, name, map[string]any{"data": map[string]any{"key": "value-" + name}}))
	}
	return objs
}

func mixedObjects(ns string, i int) []*unstructured.Unstructured {
	name := fmt.Sprintf("k%d", i)
	app := map[string]any{"app": name}
	nsObj := newObject("v1", "Namespace", "", ns+"-"+name, map[string]any{})
	nsObj.SetLabels(map[string]string{benchNamespaceLabel: ns})
	return []*unstructured.Unstructured{
		nsObj,
		newObject("v1", "ConfigMap", ns, name, map[string]any{"data": map[string]any{"key": "value-" + name}}),
		newObject("v1", "Secret", ns, name, map[string]any{"type": "Opaque",
			"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("secret-" + name))}}),
		newObject("v1", "Service", ns, name, map[string]any{"spec": map[string]any{"selector": app,
			"ports": []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}}}}),
		newObject("apps/v1", "Deployment", ns, name, map[string]any{"spec": map[string]any{
			"replicas": int64(0),
			"selector": map[string]any{"matchLabels": app},
			"template": map[string]any{
				"metadata": map[string]any{"labels": app},
				"spec": map[string]any{"containers": []any{
					map[string]any{"name": "app", "image": "registry.invalid/app:1"}}},
			},
		}}),
	}
}

// mixFiles are the repository's files of a run: directory k<i> holds the
// objects of Kustomization i, one file each.
func mixFiles(b *testing.B, mix objectMix, ns string, n int) map[string]string {
	files := make(map[string]string, n*5)
	for i := range n {
		for j, o := range mix.objects(ns, i) {
			y, err := yaml.Marshal(o.Object)
			if err != nil {
				b.Fatal(err)
			}
			files[fmt.Sprintf("k%d/%d-%s.yaml", i, j, strings.ToLower(o.GetKind()))] = string(y)
		}
	}
	return files
}

// deleteMixNamespaces deletes the Namespaces a mix created for the run in
// namespace run. kube-controller-manager's namespace controller would
// list every namespaced kind in each at its own client limits (20 QPS):
// minutes per thousand. They are empty but for what it puts there itself
// (kube-root-ca.crt, the default ServiceAccount), so they are finalized
// first, deleted, and those two removed.
func deleteMixNamespaces(b *testing.B, c client.Client, run string) {
	ctx := context.Background()
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{benchNamespaceLabel: run}); err != nil {
		b.Fatal(err)
	}
	parallel(b, len(list.Items), 8, func(i int) error {
		ns := &list.Items[i]
		ns.Spec.Finalizers = nil
		if err := c.SubResource("finalize").Update(ctx, ns); err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := c.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			return err
		}
		for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.ServiceAccount{}} {
			if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns.Name)); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		return nil
	})
}

// kindCount is the requests to one resource: reads, dry-runs and writes.
type kindCount struct{ read, dryRun, write float64 }

func (k kindCount) total() float64 { return k.read + k.dryRun + k.write }

// scaleKinds are the resources a Kustomization reconcile of either mix
// reads or writes. Each has its own token bucket in the controller:
// controller-runtime's client makes a REST client, and with it a rate
// limiter, per kind; Events go through the event recorder's own client.
var scaleKinds = []string{"configmaps", "deployments", "events", "kustomizations", "namespaces", "secrets", "services"}

// kindRequests are the API server's requests between two scrapes by
// resource (a subresource counts with its resource: same client). Only
// the verbs the controller uses count: GET (reads), APPLY and PATCH
// (dry-run or not), and POST for Events. kube-controller-manager's
// requests to the same resources are POSTs and PUTs (kube-root-ca.crt in
// each new Namespace, Deployment status), LIST and WATCH are informers'.
func kindRequests(before, after samples) map[string]kindCount {
	r := map[string]kindCount{}
	for k, v := range after.minus(before) {
		res := label(k, "resource")
		if !strings.HasPrefix(k, "apiserver_request_total{") || v == 0 || !slices.Contains(scaleKinds, res) {
			continue
		}
		c := r[res]
		switch verb := label(k, "verb"); {
		case verb == "GET":
			c.read += v
		case verb != "APPLY" && verb != "PATCH" && (verb != "POST" || res != "events"):
			continue
		case label(k, "dry_run") != "":
			c.dryRun += v
		default:
			c.write += v
		}
		r[res] = c
	}
	return r
}

// reportKinds logs and reports the requests per Kustomization of each
// resource, and the time the busiest resource's rate limiter alone
// predicts: its requests per shard beyond the burst, at the QPS.
func reportKinds(b *testing.B, kinds map[string]kindCount, c scaleCase) {
	var busiest float64
	var line []string
	n := float64(c.n)
	for _, res := range slices.Sorted(maps.Keys(kinds)) {
		k := kinds[res]
		if k.total() < n/100 {
			continue // another client's stray request
		}
		busiest = max(busiest, k.total())
		line = append(line, fmt.Sprintf("%s %.1f (%.1f read, %.1f dry-run, %.1f write)",
			res, k.total()/n, k.read/n, k.dryRun/n, k.write/n))
		b.ReportMetric(k.total()/n, res+"-req/k")
	}
	b.Logf("API server requests per Kustomization by resource: %s", strings.Join(line, "; "))
	if lim := c.lim.effective(); lim.qps > 0 {
		perShard := busiest / float64(c.shards)
		b.ReportMetric(max(0, perShard-float64(lim.burst))/float64(lim.qps), "limiter-bound-s")
	}
}

package faults

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// metricSums sums the samples of each of names on the controller's
// /metrics (client-go's rest_client_requests_total, controller-runtime's
// controller_runtime_reconcile_total, ...).
func (c *controller) metricSums(names ...string) (map[string]float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metrics))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, n := range names {
			if strings.HasPrefix(line, n+"{") || strings.HasPrefix(line, n+" ") {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				out[n] += v
			}
		}
	}
	return out, sc.Err()
}

// TestInventoryRecordRequestCost measures kustomize-controller's API
// requests per reconcile of one Kustomization of 20 ConfigMaps: unchanged
// (periodic) reconciles, and the reconcile of a commit adding 5 objects,
// where the inventory records the new objects before they are applied.
// It logs the figures; it fails when an unchanged reconcile costs more
// than the 20 objects' dry-runs and 4 more (source, status, event): the
// steady state must not pay for the record.
func TestInventoryRecordRequestCost(t *testing.T) {
	ns := newNamespace(t)
	kc, err := newController(env, t.TempDir(), "kustomize-controller", kustomizeArgs...)
	if err != nil {
		t.Fatal(err)
	}
	kc.logOnFailure(t)
	t.Cleanup(kc.stop)
	files := map[string]string{}
	var res []string
	for i := range 20 {
		files[fmt.Sprintf("app/c%d.yaml", i)] = configMap(fmt.Sprintf("c%d", i))
		res = append(res, fmt.Sprintf("c%d.yaml", i))
	}
	files["app/kustomization.yaml"] = "resources: [" + strings.Join(res, ", ") + "]\n"
	r := gitSrv.NewRepo(t, files)
	src := newSource(t, ns, "repo", r.URL(), time.Hour)
	rev1 := "main@sha1:" + r.MustGit(t, "rev-parse", "HEAD")
	artifactAt(t, src, rev1)
	k := newKustomization(t, ns, "app", "repo", "./app", 2*time.Second)
	if err := kc.start(true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k, time.Minute, "Ready at "+rev1, func() bool { return readyAt(k, rev1) })
	const reqs, recs = "rest_client_requests_total", "controller_runtime_reconcile_total"
	time.Sleep(3 * time.Second)
	m0, err := kc.metricSums(reqs, recs)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(9 * time.Second)
	m1, err := kc.metricSums(reqs, recs)
	if err != nil {
		t.Fatal(err)
	}
	steady := (m1[reqs] - m0[reqs]) / (m1[recs] - m0[recs])
	t.Logf("unchanged reconciles: %.0f, requests per reconcile %.2f", m1[recs]-m0[recs], steady)

	for i := 20; i < 25; i++ {
		files[fmt.Sprintf("app/c%d.yaml", i)] = configMap(fmt.Sprintf("c%d", i))
		res = append(res, fmt.Sprintf("c%d.yaml", i))
	}
	files["app/kustomization.yaml"] = "resources: [" + strings.Join(res, ", ") + "]\n"
	kc.stop() // the new revision is reconciled alone, at start
	rev2 := "main@sha1:" + r.MustCommit(t, files, "add 5")
	artifactAt(t, src, rev2)
	patch := client.MergeFrom(k.DeepCopy())
	k.Spec.Interval.Duration = time.Hour
	if err := env.Client.Patch(t.Context(), k, patch); err != nil {
		t.Fatal(err)
	}
	if err := kc.start(true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k, time.Minute, "Ready at "+rev2, func() bool { return readyAt(k, rev2) })
	time.Sleep(time.Second)
	m2, err := kc.metricSums(reqs, recs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start-up and the reconcile adding 5 objects to 20: %.0f reconciles, %.0f requests", m2[recs], m2[reqs])
	if steady > 24 {
		t.Errorf("an unchanged reconcile costs %.2f requests, want at most 24", steady)
	}
}

package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The Helm commands' e2e test runs the built bin/eddy against an API server
// with Eddy's CRDs and no controller: the test writes the objects' status
// itself (the CLI only reads status), and a stand-in controller answers
// reconcile requests, so the printed tables, the progress lines and the
// annotations written are checked whatever the Helm reconcilers do.

// helmFixtures are a HelmRepository, an OCI HelmRepository, the HelmChart
// helm-controller would make for HelmRelease podinfo, that HelmRelease, one
// whose chartRef is OCIRepository podinfo, one whose spec.chart is of kind
// OCIRepository with the OCIRepository helm-controller would make for it;
// chartReleases adds the others.
const helmFixtures = `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo, namespace: flux-system}
spec: {interval: 5m, url: "https://stefanprodan.github.io/podinfo"}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo-oci, namespace: flux-system}
spec: {interval: 5m, type: oci, url: "oci://ghcr.io/stefanprodan/charts"}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: flux-system-podinfo, namespace: flux-system}
spec: {interval: 5m, chart: podinfo, version: "6.x", sourceRef: {kind: HelmRepository, name: podinfo}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: flux-system}
spec:
  interval: 10m
  chart: {spec: {chart: podinfo, version: "6.x", sourceRef: {kind: HelmRepository, name: podinfo}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: from-oci, namespace: flux-system}
spec:
  interval: 10m
  chartRef: {kind: OCIRepository, name: podinfo}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: podinfo, namespace: flux-system}
spec: {interval: 5m, url: "oci://ghcr.io/stefanprodan/charts/podinfo", ref: {tag: "6.5.0"}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: templated, namespace: flux-system}
spec:
  interval: 10m
  chart: {kind: OCIRepository, spec: {url: "oci://ghcr.io/stefanprodan/charts/podinfo", ref: {tag: "6.5.0"}}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: flux-system-templated, namespace: flux-system}
spec: {interval: 10m, url: "oci://ghcr.io/stefanprodan/charts/podinfo", ref: {tag: "6.5.0"}}
`

// chartReleases are HelmReleases of chart podinfo from HelmRepository
// flux-system/podinfo, by namespace/name, with the extra spec lines (YAML
// indented by two): each state `get` distinguishes, and one that fails.
var chartReleases = map[string]string{
	"flux-system/attempted": "", "flux-system/pending": "", "flux-system/broken": "",
	"flux-system/paused": "  suspend: true\n", "apps/other": "",
}

func chartRelease(id, extra string) string {
	ns, name, _ := strings.Cut(id, "/")
	return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %s, namespace: %s}
spec:
  interval: 10m
%s  chart: {spec: {chart: podinfo, sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}}}
`, name, ns, extra)
}

const (
	ociRevision   = "6.5.0@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
	repoRevision  = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	installedMsg  = "Helm install succeeded for release flux-system/podinfo.v1 with chart podinfo@6.5.0"
	installFailed = "Helm install failed for release flux-system/broken with chart podinfo@6.5.0: context deadline exceeded"
)

func readyCond(status metav1.ConditionStatus, reason, msg string, gen int64) []metav1.Condition {
	return []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: gen, LastTransitionTime: metav1.Now()}}
}

func artifact(revision string) *meta.Artifact {
	return &meta.Artifact{Path: "x/y.tgz", URL: "http://source-controller/x/y.tgz", Revision: revision,
		Digest: "sha256:" + strings.Repeat("a", 64), LastUpdateTime: metav1.Now()}
}

// setHelmStatus writes the fixtures' status as the controllers would have.
func setHelmStatus(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	update := func(obj client.Object, set func()) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		set()
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatalf("status of %s: %v", obj.GetName(), err)
		}
	}
	repo := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "podinfo"}}
	update(repo, func() {
		repo.Status.ObservedGeneration = repo.Generation
		repo.Status.Artifact = artifact(repoRevision)
		repo.Status.Conditions = readyCond(metav1.ConditionTrue, meta.SucceededReason, "stored artifact: revision '"+repoRevision+"'", repo.Generation)
	})
	chart := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system-podinfo"}}
	update(chart, func() {
		chart.Status.ObservedGeneration = chart.Generation
		chart.Status.Artifact = artifact("6.5.0")
		chart.Status.Conditions = readyCond(metav1.ConditionTrue, sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.5.0'", chart.Generation)
	})
	for _, name := range []string{"podinfo", "flux-system-templated"} {
		oci := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name}}
		update(oci, func() {
			oci.Status.ObservedGeneration = oci.Generation
			oci.Status.Artifact = artifact(ociRevision)
			oci.Status.Conditions = readyCond(metav1.ConditionTrue, meta.SucceededReason, "stored artifact for digest '"+ociRevision+"'", oci.Generation)
		})
	}
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "podinfo"}}
	update(hr, func() {
		hr.Status.ObservedGeneration = hr.Generation
		hr.Status.LastAttemptedRevision = "6.5.0"
		hr.Status.History = []helmv2.Snapshot{{Digest: "sha256:" + strings.Repeat("b", 64), Name: "podinfo", Namespace: "flux-system",
			Version: 1, Status: "deployed", ChartName: "podinfo", ChartVersion: "6.5.0", ConfigDigest: "sha256:" + strings.Repeat("c", 64),
			FirstDeployed: metav1.Now(), LastDeployed: metav1.Now()}}
		hr.Status.Conditions = readyCond(metav1.ConditionTrue, "InstallSucceeded", installedMsg, hr.Generation)
	})
	att := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "attempted"}}
	update(att, func() {
		att.Status.ObservedGeneration = att.Generation
		att.Status.LastAttemptedRevision = "6.4.0"
		att.Status.Conditions = readyCond(metav1.ConditionFalse, "InstallFailed", "Helm install failed for release flux-system/attempted with chart podinfo@6.4.0: timed out waiting for the condition\n\nLast Helm logs:\n\nwaiting for 1 resource", att.Generation)
	})
}

// request is one reconcile request the stand-in controller handled.
type request struct {
	id          string // Kind/namespace/name
	annotations map[string]string
}

// standIn answers reconcile requests as the controllers would: when an
// object's reconcile.fluxcd.io/requestedAt differs from its
// status.lastHandledReconcileAt, it records the request and writes the
// token back with Ready=True for the generation (Ready=False InstallFailed
// for HelmRelease broken), and lastHandledForceAt/ResetAt for a
// HelmRelease. It stops with ctx.
type standIn struct {
	mu   sync.Mutex
	seen []request
}

func (s *standIn) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.seen...)
}

func (s *standIn) run(ctx context.Context, c client.Client) {
	handle := func(obj client.Object, conds *[]metav1.Condition, observed *int64, handled *string, extra func(token string)) {
		token := obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
		if token == "" || token == *handled {
			return
		}
		gvk, _ := c.GroupVersionKindFor(obj)
		s.mu.Lock()
		s.seen = append(s.seen, request{id: gvk.Kind + "/" + obj.GetNamespace() + "/" + obj.GetName(), annotations: obj.GetAnnotations()})
		s.mu.Unlock()
		*handled, *observed = token, obj.GetGeneration()
		if obj.GetName() == "broken" {
			*conds = readyCond(metav1.ConditionFalse, "InstallFailed", installFailed, obj.GetGeneration())
		} else if r := apimeta.FindStatusCondition(*conds, meta.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue {
			*conds = readyCond(metav1.ConditionTrue, meta.SucceededReason, "reconciled", obj.GetGeneration())
		}
		if extra != nil {
			extra(token)
		}
		_ = c.Status().Update(ctx, obj) // a conflict is retried at the next poll
	}
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		repos := &sourcev1.HelmRepositoryList{}
		if c.List(ctx, repos) == nil {
			for i := range repos.Items {
				o := &repos.Items[i]
				handle(o, &o.Status.Conditions, &o.Status.ObservedGeneration, &o.Status.LastHandledReconcileAt, nil)
			}
		}
		ocis := &sourcev1.OCIRepositoryList{}
		if c.List(ctx, ocis) == nil {
			for i := range ocis.Items {
				o := &ocis.Items[i]
				handle(o, &o.Status.Conditions, &o.Status.ObservedGeneration, &o.Status.LastHandledReconcileAt, nil)
			}
		}
		charts := &sourcev1.HelmChartList{}
		if c.List(ctx, charts) == nil {
			for i := range charts.Items {
				o := &charts.Items[i]
				handle(o, &o.Status.Conditions, &o.Status.ObservedGeneration, &o.Status.LastHandledReconcileAt, nil)
			}
		}
		hrs := &helmv2.HelmReleaseList{}
		if c.List(ctx, hrs) == nil {
			for i := range hrs.Items {
				o := &hrs.Items[i]
				handle(o, &o.Status.Conditions, &o.Status.ObservedGeneration, &o.Status.LastHandledReconcileAt, func(string) {
					if v, ok := o.Annotations[helmv2.ForceRequestAnnotation]; ok {
						o.Status.LastHandledForceAt = v
					}
					if v, ok := o.Annotations[helmv2.ResetRequestAnnotation]; ok {
						o.Status.LastHandledResetAt = v
					}
				})
			}
		}
		return false, nil
	})
}

// tableRow finds the row of name in a `get` table and returns its cells:
// the columns are separated by at least 3 blanks (flux's padding), the
// message may hold single blanks.
func tableRow(t *testing.T, out, name string) []string {
	t.Helper()
	sep := regexp.MustCompile(`\s{3,}`)
	for _, l := range strings.Split(out, "\n") {
		if cells := sep.Split(strings.TrimRight(l, " "), -1); len(cells) > 0 && cells[0] == name {
			return cells
		}
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return nil
}

// lines returns the non-empty lines of out.
func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// TestHelmCommandsE2E: `eddy get hr|sources helm|sources chart` print
// flux's columns (revision from the release history, else the last
// attempt; OCI HelmRepository Ready; "waiting to be reconciled"), `-A` and
// `-o yaml`; `eddy reconcile hr --with-source --force --reset` reconciles
// the HelmRepository, then the HelmChart, then the HelmRelease, with
// forceAt and resetAt equal to requestedAt, printing flux's lines; without
// --force no forceAt is written; `reconcile source helm` on an OCI
// repository requests nothing; suspended, missing, failing and unsupported
// sources are one-line errors; at a terminal `reconcile hr` leaves a clean
// screen.
func TestHelmCommandsE2E(t *testing.T) {
	u := newUser(t)
	ctx, c, env := startAPIServer(t, "flux-system", "apps")
	docs := strings.Split(helmFixtures, "\n---\n")
	for id, extra := range chartReleases {
		docs = append(docs, chartRelease(id, extra))
	}
	for _, doc := range docs {
		var obj client.Object
		switch {
		case strings.Contains(doc, "kind: HelmRepository\n"):
			obj = &sourcev1.HelmRepository{}
		case strings.Contains(doc, "kind: HelmChart\n"):
			obj = &sourcev1.HelmChart{}
		case strings.Contains(doc, "kind: OCIRepository\n"):
			obj = &sourcev1.OCIRepository{}
		default:
			obj = &helmv2.HelmRelease{}
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
	setHelmStatus(ctx, t, c)
	kc := "--kubeconfig=" + env.KubeconfigPath

	// get: flux's columns and values.
	out := u.must(kc, "get", "hr")
	if h := lines(out)[0]; strings.Join(strings.Fields(h), " ") != "NAME REVISION SUSPENDED READY MESSAGE" {
		t.Errorf("get hr header %q, want NAME REVISION SUSPENDED READY MESSAGE", h)
	}
	for name, want := range map[string][]string{
		"podinfo":   {"podinfo", "6.5.0", "False", "True", installedMsg},
		"attempted": {"attempted", "6.4.0", "False", "False", "Helm install failed for release flux-system/attempted with chart podinfo@6.4.0: timed out waiting for the condition"},
		"pending":   {"pending", "False", "False", "waiting to be reconciled"},
		"paused":    {"paused", "True", "False", "waiting to be reconciled"},
	} {
		if got := tableRow(t, out, name); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("get hr row %q, want %q", got, want)
		}
	}
	if strings.Contains(out, "other") {
		t.Error("get hr lists a HelmRelease of namespace apps without -A")
	}
	if out := u.must(kc, "get", "helmreleases", "-A"); !strings.HasPrefix(strings.Join(strings.Fields(lines(out)[0]), " "), "NAMESPACE NAME REVISION") ||
		!regexp.MustCompile(`(?m)^apps\s+other\s+False\s+False\s+waiting to be reconciled$`).MatchString(out) {
		t.Errorf("get helmreleases -A does not show apps/other under NAMESPACE:\n%s", out)
	}
	if got, want := tableRow(t, u.must(kc, "get", "hr", "podinfo"), "podinfo"), "podinfo|6.5.0|False|True|"+installedMsg; strings.Join(got, "|") != want {
		t.Errorf("get hr podinfo: %q, want %q", got, want)
	}
	hr := &helmv2.HelmRelease{}
	if err := yaml.Unmarshal([]byte(u.must(kc, "get", "hr", "podinfo", "-o", "yaml")), hr); err != nil || hr.Kind != "HelmRelease" ||
		hr.APIVersion != "helm.toolkit.fluxcd.io/v2" || len(hr.Status.History) != 1 {
		t.Errorf("get hr podinfo -o yaml: %v, %s %s with %d history entries; want the HelmRelease", err, hr.APIVersion, hr.Kind, len(hr.Status.History))
	}
	oneLineError(t, u.fails(kc, "get", "hr", "missing"), `HelmRelease "missing" not found in namespace flux-system`)

	out = u.must(kc, "get", "sources", "helm")
	for name, want := range map[string][]string{
		"podinfo":     {"podinfo", repoRevision, "False", "True", "stored artifact: revision '" + repoRevision + "'"},
		"podinfo-oci": {"podinfo-oci", "False", "True", "Helm repository is Ready"},
	} {
		if got := tableRow(t, out, name); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("get sources helm row %q, want %q", got, want)
		}
	}
	if got, want := tableRow(t, u.must(kc, "get", "sources", "chart"), "flux-system-podinfo"),
		"flux-system-podinfo|6.5.0|False|True|pulled 'podinfo' chart with version '6.5.0'"; strings.Join(got, "|") != want {
		t.Errorf("get sources chart: %q, want %q", got, want)
	}

	// reconcile, answered by the stand-in controller.
	stand := &standIn{}
	standCtx, stopStand := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); stand.run(standCtx, c) }()
	defer func() { stopStand(); <-done }()

	out = u.must(kc, "reconcile", "hr", "podinfo", "--with-source", "--force", "--reset")
	want := []string{
		"► annotating HelmRepository podinfo in flux-system namespace", "✔ HelmRepository annotated", "◎ waiting for HelmRepository reconciliation",
		"✔ fetched revision " + repoRevision,
		"► annotating HelmChart flux-system-podinfo in flux-system namespace", "✔ HelmChart annotated", "◎ waiting for HelmChart reconciliation",
		"✔ fetched revision 6.5.0",
		"► annotating HelmRelease podinfo in flux-system namespace", "✔ HelmRelease annotated", "◎ waiting for HelmRelease reconciliation",
		"✔ applied revision 6.5.0",
	}
	if got := lines(out); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reconcile hr podinfo --with-source --force --reset printed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	reqs := stand.requests()
	var order []string
	for _, r := range reqs {
		order = append(order, r.id)
	}
	if strings.Join(order, " ") != "HelmRepository/flux-system/podinfo HelmChart/flux-system/flux-system-podinfo HelmRelease/flux-system/podinfo" {
		t.Fatalf("reconcile order %v, want the HelmRepository, then the HelmChart, then the HelmRelease", order)
	}
	a := reqs[2].annotations
	token := a[meta.ReconcileRequestAnnotation]
	if _, err := time.Parse(time.RFC3339Nano, token); err != nil || a[helmv2.ForceRequestAnnotation] != token || a[helmv2.ResetRequestAnnotation] != token {
		t.Errorf("HelmRelease annotations %v: want requestedAt an RFC 3339 time, forceAt and resetAt the same token", a)
	}
	if _, ok := reqs[0].annotations[helmv2.ForceRequestAnnotation]; ok {
		t.Error("the HelmRepository got a forceAt annotation")
	}

	// Without --force/--reset: only requestedAt changes, no source is reconciled.
	out = u.must(kc, "reconcile", "helmrelease", "podinfo")
	if !strings.HasSuffix(strings.TrimSpace(out), "✔ applied revision 6.5.0") || strings.Contains(out, "HelmChart") {
		t.Errorf("reconcile helmrelease podinfo printed:\n%s\nwant only the HelmRelease, ending with ✔ applied revision 6.5.0", out)
	}
	reqs = stand.requests()
	if len(reqs) != 4 || reqs[3].id != "HelmRelease/flux-system/podinfo" {
		t.Fatalf("requests after a plain reconcile: %v", reqs)
	}
	if a := reqs[3].annotations; a[meta.ReconcileRequestAnnotation] == token || a[helmv2.ForceRequestAnnotation] != token || a[helmv2.ResetRequestAnnotation] != token {
		t.Errorf("a plain reconcile wrote %v: want a new requestedAt, forceAt and resetAt left at %s", a, token)
	}

	// Sources on their own.
	out = u.must(kc, "reconcile", "source", "chart", "flux-system-podinfo")
	if got := lines(out); len(got) != 4 || got[0] != "► annotating HelmChart flux-system-podinfo in flux-system namespace" || got[3] != "✔ fetched revision 6.5.0" {
		t.Errorf("reconcile source chart printed:\n%s", out)
	}
	out = u.must(kc, "reconcile", "source", "chart", "flux-system-podinfo", "--with-source")
	if !strings.Contains(out, "✔ fetched revision "+repoRevision) || !strings.HasSuffix(strings.TrimSpace(out), "✔ fetched revision 6.5.0") {
		t.Errorf("reconcile source chart --with-source printed:\n%s", out)
	}
	if out := u.must(kc, "reconcile", "source", "helm", "podinfo"); !strings.HasSuffix(strings.TrimSpace(out), "✔ fetched revision "+repoRevision) {
		t.Errorf("reconcile source helm podinfo printed:\n%s", out)
	}
	n := len(stand.requests())
	if out := u.must(kc, "reconcile", "source", "helm", "podinfo-oci"); strings.TrimSpace(out) != "✔ reconciliation not supported by the object" {
		t.Errorf("reconcile source helm of an OCI repository printed %q, want ✔ reconciliation not supported by the object", out)
	}
	oci := &sourcev1.HelmRepository{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "flux-system", Name: "podinfo-oci"}, oci); err != nil || oci.Annotations[meta.ReconcileRequestAnnotation] != "" {
		t.Errorf("the OCI HelmRepository was annotated: %v %v", err, oci.Annotations)
	}

	// OCIRepository chart sources: spec.chartRef's, and the one generated
	// from spec.chart of kind OCIRepository (<ns>-<name> in the HelmRelease's
	// namespace), are reconciled before the HelmRelease.
	for name, src := range map[string]string{"from-oci": "podinfo", "templated": "flux-system-templated"} {
		before := len(stand.requests())
		out = u.must(kc, "reconcile", "hr", name, "--with-source")
		if got := lines(out); len(got) < 4 || got[0] != "► annotating OCIRepository "+src+" in flux-system namespace" || got[3] != "✔ fetched revision "+ociRevision {
			t.Errorf("reconcile hr %s --with-source printed:\n%s\nwant OCIRepository %s reconciled first", name, out, src)
		}
		var order []string
		for _, r := range stand.requests()[before:] {
			order = append(order, r.id)
		}
		if want := "OCIRepository/flux-system/" + src + " HelmRelease/flux-system/" + name; strings.Join(order, " ") != want {
			t.Errorf("reconcile hr %s --with-source requested %v, want %s", name, order, want)
		}
	}
	n = len(stand.requests())

	// Errors: one line each, nothing requested.
	oneLineError(t, u.fails(kc, "reconcile", "hr", "missing"), "HelmRelease missing not found in namespace flux-system")
	oneLineError(t, u.fails(kc, "reconcile", "hr", "paused", "--with-source"), "HelmRelease flux-system/paused is suspended")
	if got := len(stand.requests()); got != n {
		t.Errorf("the failed commands made %d reconcile requests", got-n)
	}
	out = u.fails(kc, "reconcile", "hr", "broken")
	if got := lines(out); got[len(got)-1] != "✗ HelmRelease reconciliation failed: InstallFailed: "+installFailed {
		t.Errorf("reconcile hr of a failing release printed:\n%s\nwant the Ready message last", out)
	}

	// At a terminal, with colours: the spinner runs and leaves nothing behind.
	tty := u.startTTY(120, false, kc, "reconcile", "hr", "podinfo", "--with-source")
	screen := tty.checkTerminal(time.Minute, false)
	// At a terminal the spinner stands for the ◎ lines.
	var wantTTY []string
	for _, l := range want {
		if !strings.HasPrefix(l, "◎") {
			wantTTY = append(wantTTY, l)
		}
	}
	if got := lines(strings.Join(screen, "\n")); strings.Join(got, "\n") != strings.Join(wantTTY, "\n") {
		t.Errorf("reconcile hr --with-source at a terminal shows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantTTY, "\n"))
	}
	if !strings.ContainsFunc(string(tty.output()), func(c rune) bool { return c >= 0x2800 && c <= 0x28ff }) {
		t.Error("reconcile hr at a terminal drew no spinner while waiting")
	}

	if err := c.Get(ctx, types.NamespacedName{Namespace: "flux-system", Name: "podinfo"}, hr); err != nil || hr.Generation != 1 {
		t.Errorf("HelmRelease podinfo generation %d (%v): reconcile must change annotations only", hr.Generation, err)
	}
}

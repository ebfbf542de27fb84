package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// chromiumPath is Debian's chromium, which `make tools` installs.
const chromiumPath = "/usr/bin/chromium"

// The XSS probes: each would set window.__xss if the page rendered cluster
// data as HTML.
const (
	xssScript = "<script>window.__xss=1</script>"
	xssImg    = `<img src=x onerror="window.__xss=1">`
)

// browser is one headless chromium tab, driven by chromedp.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string // the UI's URL, ending in /

	mu       sync.Mutex
	problems []string // uncaught exceptions and Content-Security-Policy violations of the page
	errors   []string // other console and browser-log errors (logged)
}

// newBrowser starts headless chromium with a fresh profile; it is stopped
// when the test ends.
func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing (Debian's chromium package): run `make tools`", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, base: base}
	// The first Run starts the browser, and it lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			where := ""
			if m.URL != "" {
				where = fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
			}
			b.mu.Lock()
			switch {
			case m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy"):
				b.problems = append(b.problems, fmt.Sprintf("%s: %s%s", m.Type, m.Text, where))
			case m.Type == chromedp.ConsoleError:
				b.errors = append(b.errors, m.Text+where)
			}
			b.mu.Unlock()
		}
	}()
	return b
}

// run runs chromedp actions with a bound, failing the test on error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// open navigates to path (below the UI's URL) and waits for sel to be in the page.
func (b *browser) open(path, sel string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(strings.TrimSuffix(b.base, "/")+path))
	b.waitFor("page "+path+" shows "+sel, 30*time.Second, fmt.Sprintf(`[!!document.querySelector(%q), document.body ? document.body.innerText.slice(0, 300) : ""]`, sel))
}

// eval evaluates a JavaScript expression into a T.
func eval[T any](b *browser, js string, opts ...chromedp.EvaluateOption) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
}

// waitFor polls the page until js (an expression giving [ok, detail])
// gives ok; detail is shown when it does not within timeout.
func (b *browser) waitFor(what string, timeout time.Duration, js string) {
	b.t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < timeout {
		res, err := eval[[]any](b, js)
		switch {
		case err != nil:
			last = err.Error() // e.g. the page is navigating
		case len(res) > 0:
			if ok, _ := res[0].(bool); ok {
				b.t.Logf("%s after %s", what, time.Since(start).Round(100*time.Millisecond))
				return
			}
			if len(res) > 1 {
				last = fmt.Sprint(res[1])
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.t.Fatalf("%s: not within %s (last: %s)", what, timeout, last)
}

// text returns the textContent of the first element matching sel ("" when none).
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := eval[string](b, fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, sel))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// count returns how many elements match sel.
func (b *browser) count(sel string) int {
	b.t.Helper()
	n, err := eval[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
	if err != nil {
		b.t.Fatalf("count of %s: %v", sel, err)
	}
	return n
}

// mark sets a marker on the page's window; reloaded reports whether it is
// gone (the page was reloaded or navigated away since).
func (b *browser) mark() {
	b.t.Helper()
	if _, err := eval[bool](b, `window.__eddyTestMark = true`); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) reloaded() bool {
	x, err := eval[bool](b, `window.__eddyTestMark === true`)
	return err != nil || !x
}

// screenshot writes a full-page PNG into the test's artifact directory.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s: %s (%d KB)", name, path, len(png)/1024)
}

// colorScheme emulates prefers-color-scheme (light or dark).
func colorScheme(value string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: value}}})
		return err
	})
}

// checkNoXSS asserts no probe ran or became an element: window.__xss is
// unset, every <script> is the page's own (has src), and no <img> has an
// onerror attribute or the probe's src.
func (b *browser) checkNoXSS(where string) {
	b.t.Helper()
	js := `[typeof window.__xss, document.querySelectorAll("script:not([src])").length,
		document.querySelectorAll("img[onerror], img[src=x]").length,
		Array.from(document.querySelectorAll("script[src]")).map(s => s.getAttribute("src")).join(" ")]`
	res, err := eval[[]any](b, js)
	if err != nil {
		b.t.Fatalf("%s: %v", where, err)
	}
	if res[0] != "undefined" || res[1] != float64(0) || res[2] != float64(0) {
		b.t.Errorf("%s: an XSS probe was rendered as HTML: typeof window.__xss=%v, inline <script> elements=%v, probe <img> elements=%v",
			where, res[0], res[1], res[2])
	}
	for _, src := range strings.Fields(fmt.Sprint(res[3])) {
		if !strings.HasPrefix(src, "/") || strings.HasPrefix(src, "//") {
			b.t.Errorf("%s: a <script src=%q> that is not one of the page's own", where, src)
		}
	}
}

// TestUIBrowserE2E checks `eddy ui` (served by `eddy dev up --ui`) in
// headless chromium on a Git copy of examples/platform-config, with the
// page's DOM contract (data-testid attributes): the overview lists the
// objects with the states the cluster has; a Kustomization page shows its
// conditions, revisions, history and inventory tree; a `kubectl edit` drift
// appears on the open drift page, a commit in the open history, both
// without a reload; the action buttons reconcile, suspend and resume the
// object as the user; XSS probes in a condition message, an annotation and
// a commit message render as text. It writes a screenshot of each page into
// its artifact directory (`go test -artifacts`) and prints the overview's
// page weight and time to first render (`ui-weight:` line; no pass/fail).
func TestUIBrowserE2E(t *testing.T) {
	u := newUser(t)
	repo := examplesRepo(t)
	out := u.must("dev", "up", "--detach", "--ui", "--ui-listen", "127.0.0.1:0", "--repo", repo, "--path", "./clusters/dev", "--install-hook")
	m := regexp.MustCompile(`(?m)^UI: (http://127\.0\.0\.1:\d+/)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("eddy dev up --ui did not print `UI: http://127.0.0.1:PORT/`")
	}
	base := m[1]
	if s, err := dev.ReadState(u.dir()); err != nil || s.UI != base {
		t.Errorf("state file: UI %q, want %q (%v)", s.UI, base, err)
	}
	if status := u.must("dev", "status"); !strings.Contains(status, "ui:          "+base) {
		t.Errorf("eddy dev status does not show the UI's address %s", base)
	}
	c := u.client()
	ctx := context.Background()

	// The XSS probes in the cluster: a Kustomization whose Ready message
	// quotes its path, with an annotation; the commit message comes below.
	probe := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "xss-probe", Annotations: map[string]string{"eddy.dev/probe": xssImg}},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: time.Hour},
			Path:      "./" + xssScript,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "flux-system"},
		},
	}
	if err := c.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, base)
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			t.Logf("console error: %s", e)
		}
		for _, p := range b.problems {
			t.Errorf("the page reported: %s", p)
		}
	}()

	t.Run("overview", func(t *testing.T) { b.t = t; checkOverview(t, b, c) })
	t.Run("object", func(t *testing.T) { b.t = t; checkObjectPage(t, b, c) })
	t.Run("drift", func(t *testing.T) { b.t = t; checkDrift(t, b, u, c) })
	t.Run("commit", func(t *testing.T) { b.t = t; checkCommit(t, b, u, repo) })
	t.Run("actions", func(t *testing.T) { b.t = t; checkActions(t, b, c) })
	t.Run("xss", func(t *testing.T) { b.t = t; checkXSS(t, b, c) })
	t.Run("graph-yaml-diff", func(t *testing.T) { b.t = t; checkGraphYAMLDiff(t, b) })
	t.Run("phone-dark", func(t *testing.T) { b.t = t; checkPhoneAndDark(t, b) })
	b.t = t
}

// fluxKinds are the kinds the overview lists.
var fluxKinds = []schema.GroupVersionKind{
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepository"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmChart"},
	{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
	{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"},
	{Group: "notification.toolkit.fluxcd.io", Version: "v1", Kind: "Alert"},
	{Group: "notification.toolkit.fluxcd.io", Version: "v1", Kind: "Provider"},
	{Group: "notification.toolkit.fluxcd.io", Version: "v1", Kind: "Receiver"},
}

// clusterObjects returns every Flux object of the cluster as
// "Kind/namespace/name", with whether it is Ready=True and not suspended.
func clusterObjects(t *testing.T, c client.Client) map[string]bool {
	t.Helper()
	objs := map[string]bool{}
	for _, gvk := range fluxKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(context.Background(), list); err != nil {
			t.Fatalf("list %s: %v", gvk.Kind, err)
		}
		for _, o := range list.Items {
			suspended, _, _ := unstructured.NestedBool(o.Object, "spec", "suspend")
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			ready := false
			for _, ci := range conds {
				cm, _ := ci.(map[string]any)
				if cm["type"] == meta.ReadyCondition && cm["status"] == "True" {
					ready = true
				}
			}
			objs[gvk.Kind+"/"+o.GetNamespace()+"/"+o.GetName()] = ready && !suspended
		}
	}
	return objs
}

func checkOverview(t *testing.T, b *browser, c client.Client) {
	// Records when the objects table first has a row (ms since the
	// navigation started), before the page's own scripts run.
	b.run("watch for the first row", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			new MutationObserver((_, o) => {
				if (document.querySelector("[data-testid=objects] tr[data-object]")) { window.__eddyRowsAt = performance.now(); o.disconnect(); }
			}).observe(document, {childList: true, subtree: true});`})
		return err
	}))
	b.open("/", `[data-testid=objects] tr[data-object]`)
	// Page weight and first render of this first load (no pass/fail).
	type perfEntries struct {
		Bytes    float64 `json:"bytes"`
		FCP      float64 `json:"fcp"`
		Requests int     `json:"requests"`
	}
	perf, err := eval[perfEntries](b, `(() => {
		const es = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
		const bytes = es.reduce((n, e) => n + (e.transferSize || e.encodedBodySize || 0), 0);
		const p = performance.getEntriesByName("first-contentful-paint")[0];
		return {bytes, fcp: p ? p.startTime : -1, requests: es.length};
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	rowsAt, err := eval[float64](b, `window.__eddyRowsAt`)
	if err != nil {
		t.Fatalf("when the objects table got its first row: %v", err)
	}
	// First render: the objects table has rows (the page's first paint, of
	// its frame without data, is shown beside it).
	line := fmt.Sprintf("ui-weight: overview %.0f KB, first render %.0f ms (first-contentful-paint %.0f ms, %d requests)",
		perf.Bytes/1024, rowsAt, perf.FCP, perf.Requests)
	t.Log(line)
	fmt.Println(line)
	// At 1280 px the whole table shows: nothing to scroll sideways to.
	if w, err := eval[[]float64](b, `(() => { const e = document.querySelector("[data-testid=objects]").parentElement; return [e.scrollWidth, e.clientWidth]; })()`); err != nil || w[0] > w[1] {
		t.Errorf("at 1280 px the overview table is %v px wide in its box (%v): it scrolls sideways", w, err)
	}

	// Every Flux object of the cluster has its row; the ready ones say so.
	want := clusterObjects(t, c)
	for _, id := range []string{"GitRepository/flux-system/flux-system", "Kustomization/flux-system/flux-system", "Kustomization/flux-system/apps",
		"HelmRelease/flux-system/storefront", "HelmChart/flux-system/flux-system-storefront", "Alert/flux-system/platform",
		"Provider/flux-system/alerts-sink", "Receiver/flux-system/github"} {
		if _, ok := want[id]; !ok {
			t.Errorf("the example's %s is not in the cluster", id)
		}
	}
	var ids, readyIDs []string
	for id, ready := range want {
		ids = append(ids, id)
		if ready {
			readyIDs = append(readyIDs, id)
		}
	}
	if len(readyIDs) < 4 {
		t.Errorf("only %d objects Ready in the cluster: %v", len(readyIDs), readyIDs)
	}
	idsJSON, _ := json.Marshal(ids)
	readyJSON, _ := json.Marshal(readyIDs)
	b.waitFor("the overview lists every Flux object, the ready ones \"ready\"", 30*time.Second, fmt.Sprintf(`(() => {
		const bad = [];
		for (const id of %s) if (!document.querySelector('[data-testid=objects] tr[data-object="' + id + '"]')) bad.push("no row " + id);
		for (const id of %s) {
			const s = document.querySelector('[data-testid=objects] tr[data-object="' + id + '"] [data-testid=state]');
			if (s && s.textContent.trim() !== "ready") bad.push(id + " state " + JSON.stringify(s.textContent.trim()));
		}
		return [bad.length === 0, bad.join("; ")];
	})()`, idsJSON, readyJSON))
	// The counts agree with the rows.
	b.waitFor("count-ready equals the rows in state ready", 10*time.Second, `(() => {
		const n = [...document.querySelectorAll("[data-testid=objects] tr[data-object] [data-testid=state]")].filter(s => s.textContent.trim() === "ready").length;
		const c = document.querySelector("[data-testid=count-ready]");
		const shown = c ? (c.textContent.match(/\d+/) || [""])[0] : "no [data-testid=count-ready]";
		return [shown === String(n), "count-ready " + shown + ", ready rows " + n];
	})()`)
	b.screenshot("overview")

	// Filters: by kind, reflected in the URL.
	b.run("filter by kind", chromedp.Evaluate[chromedp.Void](`(() => {
		const s = document.querySelector("select[data-testid=filter-kind]");
		if (!s) throw new Error("no select[data-testid=filter-kind]");
		s.value = "Kustomization";
		s.dispatchEvent(new Event("change", {bubbles: true}));
	})()`))
	b.waitFor("filter-kind=Kustomization shows only Kustomizations, with ?kind= in the URL", 10*time.Second, `(() => {
		const rows = [...document.querySelectorAll("[data-testid=objects] tr[data-object]")].filter(r => r.offsetParent !== null);
		const others = rows.filter(r => !r.dataset.object.startsWith("Kustomization/"));
		const q = new URLSearchParams(location.search).get("kind");
		return [rows.length > 0 && others.length === 0 && q === "Kustomization", rows.length + " visible rows, others " + others.map(r => r.dataset.object) + ", ?kind=" + q];
	})()`)
	// Free text: the URL with ?q= opens filtered (a stable URL).
	b.open("/?q=storefront", `[data-testid=objects]`)
	b.waitFor("?q=storefront shows only storefront's objects, with the text in filter-text", 10*time.Second, `(() => {
		const rows = [...document.querySelectorAll("[data-testid=objects] tr[data-object]")].filter(r => r.offsetParent !== null);
		const others = rows.filter(r => !r.dataset.object.includes("storefront"));
		const input = document.querySelector("input[data-testid=filter-text]");
		return [rows.length > 0 && others.length === 0 && input && input.value === "storefront",
			rows.length + " visible rows, others " + others.map(r => r.dataset.object) + ", filter-text " + (input ? JSON.stringify(input.value) : "missing")];
	})()`)
	if visible, _ := eval[bool](b, `(() => { const e = document.querySelector("[data-testid=banner]"); return !!e && !e.hidden && e.offsetParent !== null; })()`); visible {
		t.Errorf("the disconnected banner shows while the cluster is up: %q", b.text(`[data-testid=banner]`))
	}
}

func checkObjectPage(t *testing.T, b *browser, c client.Client) {
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "flux-system", Name: "apps"}, ks); err != nil {
		t.Fatal(err)
	}
	b.open("/object/Kustomization/flux-system/apps", `[data-testid=conditions] tr[data-condition=Ready]`)
	b.waitFor("apps: Ready condition, revisions, history, events and the artifact", 15*time.Second, fmt.Sprintf(`(() => {
		const q = s => document.querySelector(s), bad = [];
		const ready = q("[data-testid=conditions] tr[data-condition=Ready]");
		if (!ready || !ready.textContent.includes(%q)) bad.push("Ready row lacks reason %s: " + (ready && ready.textContent));
		for (const [id, want] of [["revision-applied", %q], ["revision-attempted", %q]]) {
			const e = q("[data-testid=" + id + "]");
			if (!e || !e.textContent.includes(want)) bad.push(id + " " + JSON.stringify(e && e.textContent) + " lacks " + want);
		}
		if (!q("[data-testid=history] tr[data-revision]")) bad.push("no [data-testid=history] tr[data-revision]");
		if (!q("[data-testid=events] tr[data-reason]")) bad.push("no [data-testid=events] tr[data-reason]");
		const a = q("[data-testid=artifact]");
		if (!a || !a.textContent.includes("sha256:")) bad.push("[data-testid=artifact] lacks the source artifact's digest: " + (a && a.textContent));
		return [bad.length === 0, bad.join("; ")];
	})()`, readyReason(ks), readyReason(ks), ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision))
	for _, h := range ks.Status.History {
		if rev := h.Metadata["revision"]; rev != "" && b.count(fmt.Sprintf(`[data-testid=history] tr[data-revision=%q]`, rev)) == 0 {
			t.Errorf("history has no row tr[data-revision=%q] (status.history of apps has it)", rev)
		}
	}
	b.screenshot("object")

	// flux-system's tree: apps nested in it, apps' objects in apps,
	// storefront's release objects in the HelmRelease, each with a health.
	b.open("/object/Kustomization/flux-system/flux-system", `[data-testid=tree] li[data-object]`)
	b.waitFor("the inventory tree nests apps' objects and storefront's release, each with a health", 20*time.Second, `(() => {
		const bad = [], tree = document.querySelector("[data-testid=tree]");
		const nested = [
			'li[data-object="Kustomization/flux-system/apps"] li[data-object="Deployment/production/cart-api"]',
			'li[data-object="Kustomization/flux-system/apps"] li[data-object="HelmRelease/flux-system/storefront"]',
			'li[data-object="HelmRelease/flux-system/storefront"] li[data-object^="Deployment/production/"]',
		];
		for (const s of nested) if (!tree.querySelector(s)) bad.push("no " + s);
		const lis = [...tree.querySelectorAll("li[data-object]")];
		const noHealth = lis.filter(l => !l.dataset.health).map(l => l.dataset.object);
		if (noHealth.length) bad.push("no data-health: " + noHealth.join(", "));
		const dep = tree.querySelector('li[data-object="Deployment/production/cart-api"]');
		if (dep && dep.dataset.health !== "Current") bad.push("cart-api health " + dep.dataset.health);
		return [bad.length === 0, bad.join("; ")];
	})()`)
	b.screenshot("tree")
}

func readyReason(k *kustomizev1.Kustomization) string {
	if c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition); c != nil {
		return c.Reason
	}
	return ""
}

// checkDrift edits a ConfigMap of apps as `kubectl edit` would (an Update
// by field manager kubectl-edit), reconciles apps, and waits for the row on
// the drift page opened before, which is not reloaded.
func checkDrift(t *testing.T, b *browser, u *user, c client.Client) {
	b.open("/drift", `[data-testid=drift]`)
	b.mark()
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: "production", Name: "payment-config"}
	if err := c.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	old := cm.Data["MAX_RETRIES"]
	cm.Data["MAX_RETRIES"] = "10"
	if err := c.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	u.must("reconcile", "ks", "apps")
	b.waitFor("the open drift page shows payment-config's MAX_RETRIES "+old+" → 10 by kubectl-edit", 20*time.Second, fmt.Sprintf(`(() => {
		const rows = [...document.querySelectorAll('[data-testid=drift] tr[data-object="ConfigMap/production/payment-config"]')];
		const cell = (r, id) => ((r.querySelector("[data-testid=" + id + "]") || {}).textContent || "").trim();
		const row = rows.find(r => cell(r, "drift-path").includes("MAX_RETRIES"));
		if (!row) return [false, rows.length + " rows of payment-config: " + rows.map(r => r.textContent).join(" | ")];
		const ok = cell(row, "drift-old").includes(%q) && cell(row, "drift-new").includes("10") &&
			cell(row, "drift-manager") === "kubectl-edit" && cell(row, "drift-time") !== "" && /^[0-9]+$/.test(cell(row, "drift-count"));
		return [ok, ["drift-path", "drift-old", "drift-new", "drift-manager", "drift-time", "drift-count"].map(id => id + "=" + JSON.stringify(cell(row, id))).join(" ")];
	})()`, old))
	if b.reloaded() {
		t.Error("the drift page was reloaded; want the row added by the live update")
	}
	b.screenshot("drift")
	// The Kustomization's page lists the same drift.
	b.open("/object/Kustomization/flux-system/apps", `[data-testid=drift] tr[data-object="ConfigMap/production/payment-config"]`)
}

// checkCommit commits to the work tree (the post-commit hook sends it to the
// Receiver; a reconcile with source makes sure) and waits for the revision
// in the history of the open flux-system page. Its message is an XSS probe.
func checkCommit(t *testing.T, b *browser, u *user, repo string) {
	b.open("/object/Kustomization/flux-system/flux-system", `[data-testid=history] tr[data-revision]`)
	b.mark()
	cmPath := filepath.Join(repo, "apps", "payment-api", "configmap.yaml")
	data, err := os.ReadFile(cmPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cmPath, []byte(strings.Replace(string(data), "CURRENCY: EUR", "CURRENCY: USD", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	commit := exec.Command("git", "commit", "-q", "-a", "-m", "currency USD "+xssScript)
	commit.Dir = repo
	commit.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := commit.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	head, err := gitserver.Git(repo, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	rev := "main@sha1:" + strings.TrimSpace(head)
	u.must("reconcile", "ks", "flux-system", "--with-source")
	b.waitFor("the open history shows "+rev, 30*time.Second, fmt.Sprintf(`[!!document.querySelector('[data-testid=history] tr[data-revision=%q]'),
		[...document.querySelectorAll("[data-testid=history] tr[data-revision]")].map(r => r.dataset.revision).join(", ")]`, rev))
	if b.reloaded() {
		t.Error("the Kustomization page was reloaded; want the history row added by the live update")
	}
	// The commit message, in source-controller's event, renders as text.
	b.open("/object/GitRepository/flux-system/flux-system", `[data-testid=events] tr[data-reason]`)
	b.waitFor("the GitRepository's events show the commit message literally", 20*time.Second, fmt.Sprintf(`[document.querySelector("[data-testid=events]").innerText.includes(%q),
		document.querySelector("[data-testid=events]").innerText.slice(0, 400)]`, xssScript))
	b.checkNoXSS("GitRepository page with the commit message probe")
}

// checkActions clicks reconcile, suspend and resume on apps' page and checks
// the cluster and the event naming the user.
func checkActions(t *testing.T, b *browser, c client.Client) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "flux-system", Name: "apps"}
	get := func() *kustomizev1.Kustomization {
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, key, ks); err != nil {
			t.Fatal(err)
		}
		return ks
	}
	before := get().Annotations[meta.ReconcileRequestAnnotation]
	var session struct {
		User     string `json:"user"`
		ReadOnly bool   `json:"readOnly"`
	}
	b.open("/object/Kustomization/flux-system/apps", `[data-testid=action-reconcile]`)
	sessionJSON, err := eval[string](b, `fetch("/api/session").then(r => r.text())`, chromedp.EvalAwaitPromise)
	if err != nil {
		t.Fatalf("GET /api/session from the page: %v", err)
	}
	if err := json.Unmarshal([]byte(sessionJSON), &session); err != nil || session.ReadOnly {
		t.Fatalf("session %s: %v (want not read-only)", sessionJSON, err)
	}
	b.run("click reconcile", chromedp.Click(chromedp.CSS(`[data-testid=action-reconcile]`)))
	var requested string
	waitUntil(t, "the reconcile button set "+meta.ReconcileRequestAnnotation, 15*time.Second, func() (bool, string) {
		requested = get().Annotations[meta.ReconcileRequestAnnotation]
		return requested != "" && requested != before, requested
	})
	// The request was handled: kustomize-controller reconciled for it.
	waitUntil(t, "kustomize-controller handled the reconcile request "+requested, 60*time.Second, func() (bool, string) {
		got := get().Status.LastHandledReconcileAt
		return got == requested, "lastHandledReconcileAt " + got
	})
	b.waitFor("action-result shows the outcome", 10*time.Second, `[(document.querySelector("[data-testid=action-result]") || {textContent: ""}).textContent.trim() !== "", ""]`)
	t.Logf("action-result after reconcile: %q", b.text(`[data-testid=action-result]`))
	if session.User == "" {
		t.Errorf("/api/session names no user; the action's event must name the user")
	} else {
		waitUntil(t, "an event of apps naming the user "+session.User, 15*time.Second, func() (bool, string) {
			evs := &corev1.EventList{}
			if err := c.List(ctx, evs, client.InNamespace("flux-system")); err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Kind == "Kustomization" && e.InvolvedObject.Name == "apps" && strings.Contains(e.Message, session.User) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events, none names %s", len(evs.Items), session.User)
		})
		b.waitFor("the page's events name the user", 15*time.Second, fmt.Sprintf(`[document.querySelector("[data-testid=events]").textContent.includes(%q), ""]`, session.User))
	}
	b.screenshot("actions")

	for _, step := range []struct {
		button  string
		suspend bool
	}{{"action-suspend", true}, {"action-resume", false}} {
		b.waitFor(step.button+" is there", 15*time.Second, fmt.Sprintf(`[!!document.querySelector("[data-testid=%s]"), ""]`, step.button))
		b.run("click "+step.button, chromedp.Click(chromedp.CSS(`[data-testid=`+step.button+`]`)))
		waitUntil(t, fmt.Sprintf("%s set spec.suspend=%t", step.button, step.suspend), 15*time.Second, func() (bool, string) {
			s := get().Spec.Suspend
			return s == step.suspend, fmt.Sprint(s)
		})
	}
}

// checkXSS opens the probe Kustomization: its Ready message (quoting the
// path) and its annotation show literally (in the rendered text, innerText),
// and nothing ran.
func checkXSS(t *testing.T, b *browser, c client.Client) {
	key := types.NamespacedName{Namespace: "flux-system", Name: "xss-probe"}
	waitUntil(t, "xss-probe's Ready message quotes its path", 60*time.Second, func() (bool, string) {
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(context.Background(), key, ks); err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
		if cond == nil {
			return false, "no Ready"
		}
		return strings.Contains(cond.Message, xssScript), cond.Message
	})
	b.open("/object/Kustomization/flux-system/xss-probe", `[data-testid=conditions] tr[data-condition=Ready]`)
	b.waitFor("the Ready message and the annotation show the probes as text", 15*time.Second, fmt.Sprintf(`(() => {
		const c = document.querySelector("[data-testid=conditions] tr[data-condition=Ready]").innerText;
		const a = (document.querySelector("[data-testid=annotations]") || {innerText: "no [data-testid=annotations]"}).innerText;
		return [c.includes(%q) && a.includes(%q), "Ready: " + c.slice(0, 300) + " | annotations: " + a.slice(0, 300)];
	})()`, xssScript, xssImg))
	b.checkNoXSS("xss-probe page")
	b.screenshot("xss")
	b.open("/?q=xss-probe", `[data-testid=objects] tr[data-object="Kustomization/flux-system/xss-probe"]`)
	b.checkNoXSS("overview with the probe")
}

func checkGraphYAMLDiff(t *testing.T, b *browser) {
	b.open("/graph", `[data-testid=graph] g[data-node]`)
	b.waitFor("the graph has apps, flux-system and their source, each with a state", 15*time.Second, `(() => {
		const g = document.querySelector("[data-testid=graph]"), bad = [];
		if (g.tagName.toLowerCase() !== "svg") bad.push("[data-testid=graph] is <" + g.tagName + ">, want <svg>");
		for (const id of ["Kustomization/flux-system/apps", "Kustomization/flux-system/flux-system", "GitRepository/flux-system/flux-system", "HelmRelease/flux-system/storefront"]) {
			const n = g.querySelector('g[data-node="' + id + '"]');
			if (!n) bad.push("no node " + id); else if (!n.dataset.state) bad.push(id + " has no data-state");
		}
		return [bad.length === 0, bad.join("; ")];
	})()`)
	b.screenshot("graph")

	q := url.Values{"apiVersion": {"kustomize.toolkit.fluxcd.io/v1"}, "kind": {"Kustomization"}, "namespace": {"flux-system"}, "name": {"apps"}}
	b.open("/yaml?"+q.Encode(), `pre[data-testid=yaml]`)
	b.waitFor("the YAML of apps, managedFields folded apart", 15*time.Second, `(() => {
		const y = document.querySelector("pre[data-testid=yaml]").textContent;
		const mf = document.querySelector("details[data-testid=managed-fields]");
		return [y.includes("name: apps") && !y.includes("managedFields:") && !!mf && !mf.open,
			"yaml has name: apps " + y.includes("name: apps") + ", managedFields inline " + y.includes("managedFields:") + ", details " + (mf ? (mf.open ? "open" : "closed") : "missing")];
	})()`)
	b.screenshot("yaml")

	b.open("/diff/flux-system/apps", `[data-testid=diff] tr[data-object]`)
	b.waitFor("the diff of apps lists its objects with an action", 30*time.Second, `(() => {
		const rows = [...document.querySelectorAll("[data-testid=diff] tr[data-object]")];
		const bad = rows.filter(r => !["created", "configured", "deleted", "unchanged"].includes(r.dataset.action)).map(r => r.dataset.object + "=" + r.dataset.action);
		const dep = rows.find(r => r.dataset.object === "Deployment/production/cart-api");
		return [rows.length > 0 && bad.length === 0 && !!dep, rows.length + " rows; bad actions: " + bad.join(", ") + "; cart-api row " + !!dep];
	})()`)
	b.screenshot("diff")
}

// checkPhoneAndDark: the overview at 375 px wide fits without sideways
// scrolling; with prefers-color-scheme dark the background is dark.
func checkPhoneAndDark(t *testing.T, b *browser) {
	b.run("phone width", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	b.open("/", `[data-testid=objects] tr[data-object]`)
	widths, err := eval[[]float64](b, `[document.documentElement.scrollWidth, window.innerWidth]`)
	if err != nil {
		t.Fatal(err)
	}
	if widths[0] > widths[1]+1 {
		t.Errorf("at 375 px the overview is %.0f px wide (window %.0f): it scrolls sideways", widths[0], widths[1])
	}
	b.screenshot("phone")

	b.run("desktop width", chromedp.EmulateViewport(1280, 900))
	bg := `getComputedStyle(document.body).backgroundColor`
	light, err := eval[string](b, bg)
	if err != nil {
		t.Fatal(err)
	}
	b.run("dark", colorScheme("dark"))
	b.open("/", `[data-testid=objects] tr[data-object]`)
	dark, err := eval[string](b, bg)
	if err != nil {
		t.Fatal(err)
	}
	if luminance(dark) >= luminance(light) || luminance(dark) > 0.5 {
		t.Errorf("dark mode: body background %s (light: %s); want a dark one", dark, light)
	}
	b.screenshot("dark")
	b.run("light again", colorScheme("light"))
}

// luminance of a CSS rgb()/rgba() colour, 0 (black) to 1 (white); a fully
// transparent colour counts as white (the canvas).
func luminance(css string) float64 {
	var r, g, bl, a float64 = 0, 0, 0, 1
	if n, _ := fmt.Sscanf(css, "rgba(%g, %g, %g, %g)", &r, &g, &bl, &a); n < 4 {
		fmt.Sscanf(css, "rgb(%g, %g, %g)", &r, &g, &bl)
	}
	if a == 0 {
		return 1
	}
	return (0.2126*r + 0.7152*g + 0.0722*bl) / 255
}

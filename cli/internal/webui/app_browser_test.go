package webui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, which `make tools` installs (as for
// the CLI's browser test, ui_browser_e2e_test.go).
const chromiumPath = "/usr/bin/chromium"

// tab is one headless chromium tab driven by chromedp; the page's uncaught
// exceptions and Content-Security-Policy reports fail the test.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func newTab(t *testing.T) *tab {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing (Debian's chromium package): run `make tools`", chromiumPath)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	ctx, cancel := chromedp.NewContext(alloc)
	tb := &tab{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, p := range tb.problems {
			t.Errorf("the page reported: %s", p)
		}
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy") {
				tb.mu.Lock()
				tb.problems = append(tb.problems, fmt.Sprintf("%s: %s", m.Type, m.Text))
				tb.mu.Unlock()
			}
		}
	}()
	return tb
}

func (b *tab) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// waitFor polls js (an expression giving [ok, detail]) until ok, failing
// the test with the last detail after 20 s.
func (b *tab) waitFor(what, js string) {
	b.t.Helper()
	last := ""
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		res, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](js))
		cancel()
		if err != nil {
			last = err.Error()
			continue
		}
		if len(res) > 0 && res[0] == true {
			return
		}
		if len(res) > 1 {
			last = fmt.Sprint(res[1])
		}
	}
	b.t.Fatalf("%s: not within 20s (last: %s)", what, last)
}

// screenshot writes a full-page PNG into the test's artifact directory
// (`go test -artifacts`).
func (b *tab) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.t.ArtifactDir(), name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// open navigates to url and waits for sel.
func (b *tab) open(url, sel string) {
	b.t.Helper()
	b.run("open "+url, chromedp.Navigate(url))
	b.waitFor(url+" shows "+sel, fmt.Sprintf(`[!!document.querySelector(%q), document.body ? document.body.innerText.slice(0, 300) : ""]`, sel))
}

// TestApplicationsInBrowser drives the page in headless chromium: the
// overview's Application row with its Synced and Healthy badges in Argo
// CD's colours; the Application's page with its resources and history;
// the pending diff appearing on the open page when the controller writes
// it (live update, no reload), the Secret masked; the Sync button writing
// the operation field; and no Sync button for a user who may not patch.
func TestApplicationsInBrowser(t *testing.T) {
	ns, _ := appFixture(t)
	base := serve(t, Options{Config: env.Config})
	b := newTab(t)

	row := fmt.Sprintf(`[data-testid=apps] tr[data-app="%s/guestbook"]`, ns)
	b.open(base+"?namespace="+ns, row)
	b.waitFor("the row's badges: Synced, Healthy, in Argo CD's green", fmt.Sprintf(`(() => {
		const r = document.querySelector(%q), s = r.querySelector("[data-testid=sync-status]"), h = r.querySelector("[data-testid=health-status]");
		const green = "rgb(24, 190, 148)";
		const bg = (e) => e ? getComputedStyle(e).backgroundColor : "none";
		return [s && s.textContent === "Synced" && h && h.textContent === "Healthy" && bg(s) === green && bg(h) === green,
			"sync " + (s && s.textContent) + " " + bg(s) + ", health " + (h && h.textContent) + " " + bg(h)];
	})()`, row))
	b.screenshot("apps-overview")

	b.run("open the Application", chromedp.Click(chromedp.CSS(row+` a`)))
	b.waitFor("the page's resources and history", `(() => {
		const q = (s) => document.querySelector(s), bad = [];
		const dep = q('[data-testid=app-resources] tr[data-resource="Deployment/guestbook/guestbook-ui"]');
		if (!dep || !dep.textContent.includes("Synced") || !dep.textContent.includes("Healthy")) bad.push("Deployment row: " + (dep && dep.textContent));
		if (!q('[data-testid=app-resources] tr[data-resource="Service/guestbook/guestbook-ui"]')) bad.push("no Service row");
		const hist = [...document.querySelectorAll("[data-testid=app-history] tr[data-history-id]")].map((r) => r.dataset.historyId + ":" + r.querySelector("[data-testid=history-revision]").textContent);
		if (hist.join(",") !== "1:HEAD (0123456),0:HEAD (fedcba9)") bad.push("history " + hist.join(","));
		if (!(q("[data-testid=app-sync-status]") || {}).textContent?.includes("Synced to HEAD")) bad.push("no sync status line");
		if (!(q("[data-testid=operation-phase]") || {}).textContent?.includes("Succeeded")) bad.push("no operation phase");
		if (!q("[data-testid=action-sync]")) bad.push("no Sync button");
		return [bad.length === 0, bad.join("; ")];
	})()`)
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.__mark = true`)); err != nil {
		t.Fatal(err)
	}

	driftApp(t, ns)
	b.waitFor("the open page shows the pending diff and OutOfSync, without a reload", `(() => {
		const q = (s) => document.querySelector(s);
		const dep = q('[data-testid=app-diff] tr[data-object="Deployment/guestbook/guestbook-ui"]');
		const sec = q('[data-testid=app-diff] tr[data-object="Secret/guestbook/creds"]');
		const cell = (r, id) => r ? r.querySelector("[data-testid=" + id + "]").textContent : "";
		const ok = window.__mark === true && cell(dep, "diff-path") === "/spec/replicas" && cell(dep, "diff-live") === "3" &&
			cell(dep, "diff-desired") === "1" && cell(dep, "diff-manager") === "kubectl-edit" &&
			cell(sec, "diff-live") === '"++++++++"' && (q("[data-testid=app-sync]") || {}).textContent === "OutOfSync";
		return [ok, "mark " + window.__mark + "; " + (q("[data-testid=app-diff]") || {}).textContent];
	})()`)
	b.screenshot("app-page")
	if body, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil || strings.Contains(body, "aHVudGVyMg") {
		t.Errorf("a Secret's value on the page (%v)", err)
	}

	b.run("click Sync", chromedp.Click(chromedp.CSS(`[data-testid=action-sync]`)))
	waitUntil(t, "the Sync button wrote the operation field", func() bool {
		a := getApp(t, ns)
		return a.Operation != nil && a.Operation.Sync != nil && a.Operation.Sync.Source != nil && !a.Operation.Sync.Prune
	})
	b.waitFor("the result says sync requested; the button is disabled while the operation is pending", `(() => {
		const r = (document.querySelector("[data-testid=action-result]") || {}).textContent || "", s = document.querySelector("[data-testid=action-sync]");
		return [r.includes("sync requested by") && s && s.disabled, r + " disabled " + (s && s.disabled)];
	})()`)

	viewer := serve(t, Options{Config: appViewer(t)})
	b.open(viewer+"app/"+ns+"/guestbook", `[data-testid=no-patch]`)
	b.waitFor("no Sync button for the viewer", `[!document.querySelector("[data-testid=action-sync]") && !!document.querySelector("[data-testid=app-resources] tr[data-resource]"), ""]`)
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	imagev1 "github.com/eddyops/eddy/api/image/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	uiPushCommit = "9c1e5a7b3d2f4e6a8b0c1d2e3f405162738495a6"
	uiSigningKey = "-----BEGIN PGP PRIVATE KEY BLOCK----- not-for-the-page"
	mutableMsg   = `the policy resolves to tag "latest", which is moved to new images: select version tags`
)

// addImageChain completes the image fixtures into a chain the UI draws:
// the automation's GitRepository, a second policy of the repository that
// selected the mutable tag latest, and the automation's signing key and
// last push, with status as the controllers write it.
func addImageChain(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	ready := func(msg string, gen int64) []metav1.Condition {
		return readyCond(metav1.ConditionTrue, meta.SucceededReason, msg, gen)
	}
	status := func(obj client.Object, set func(gen int64)) {
		t.Helper()
		set(obj.GetGeneration())
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatalf("status of %s: %v", obj.GetName(), err)
		}
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "signing-key"},
		StringData: map[string]string{"git.asc": uiSigningKey}}); err != nil {
		t.Fatal(err)
	}
	git := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/fleet.git", Interval: metav1.Duration{Duration: time.Minute}}}
	if err := c.Create(ctx, git); err != nil {
		t.Fatal(err)
	}
	status(git, func(gen int64) {
		git.Status.Conditions = ready("stored artifact for revision 'main@sha1:0123456'", gen)
	})
	latest := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "latest"},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "podinfo"},
			Policy: imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}}}}
	if err := c.Create(ctx, latest); err != nil {
		t.Fatal(err)
	}
	status(latest, func(gen int64) {
		latest.Status.LatestRef = &imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "latest", Digest: podinfoDgst}
		latest.Status.Conditions = append(ready("Latest image tag for ghcr.io/stefanprodan/podinfo resolved to latest", gen),
			metav1.Condition{Type: "MutableTag", Status: metav1.ConditionTrue, Reason: "MutableTagSelected", Message: mutableMsg, LastTransitionTime: scanTime})
	})
	auto := &imagev1.ImageUpdateAutomation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "podinfo"}, auto); err != nil {
		t.Fatal(err)
	}
	auto.Spec.GitSpec.Commit.SigningKey = &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "signing-key"}}
	if err := c.Update(ctx, auto); err != nil {
		t.Fatal(err)
	}
	status(auto, func(gen int64) {
		auto.Status.ObservedGeneration, auto.Status.LastPushCommit, auto.Status.LastPushTime = gen, uiPushCommit, &scanTime
		auto.Status.Conditions = ready("pushed commit '9c1e5a7' to branch 'image-updates/podinfo'", gen)
	})
}

// startUI runs the built `eddy ui` against kubeconfig on a free loopback
// port until the test ends, and returns its URL.
func startUI(t *testing.T, u *user, kubeconfig string) string {
	t.Helper()
	cmd := u.command("ui", "--kubeconfig="+kubeconfig, "--listen=127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`eddy ui: (http://127\.0\.0\.1:\d+/)`)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			t.Logf("eddy ui: %s", sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(time.Minute):
		t.Fatal("eddy ui did not print its address within a minute")
		return ""
	}
}

// TestUIShowsImageAutomationChainE2E: `eddy ui` (the built binary) on a
// cluster with the image kinds shows, on an ImageUpdateAutomation's page,
// the chain ImageRepository (last scan, tag count) → ImagePolicy (latest
// tag@digest; the mutable tag's warning) → the automation with its
// GitRepository → the commit it pushed, each node's Ready condition and
// message; a repository's page reaches the same automation; no banner,
// and the signing key is a Secret's name, never its content.
func TestUIShowsImageAutomationChainE2E(t *testing.T) {
	u := newUser(t)
	ctx, c, env := startImageEnv(t)
	addImageChain(ctx, t, c)
	b := newBrowser(t, startUI(t, u, env.KubeconfigPath))
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("the page reported: %s", p)
		}
	}()

	b.open("/?namespace=flux-system", `[data-testid=objects] tr[data-object="ImageUpdateAutomation/flux-system/podinfo"]`)
	b.open("/object/ImageUpdateAutomation/flux-system/podinfo", `[data-testid=image-chain][data-automation="ImageUpdateAutomation/flux-system/podinfo"]`)
	b.waitFor("the chain: repositories, policies, automation with its source, the pushed commit", 30*time.Second, fmt.Sprintf(`(() => {
		const chain = document.querySelector('[data-testid=image-chain]'), bad = [];
		const node = (id) => chain.querySelector('[data-testid=image-node][data-object="' + id + '"]');
		const text = (el, id) => ((el && el.querySelector("[data-testid=" + id + "]")) || {}).textContent || "";
		const cond = (el, type) => ((el && el.querySelector('[data-testid=image-condition][data-condition="' + type + '"]')) || {}).textContent || "";
		const rows = [...chain.querySelectorAll("[data-testid=image-policy]")].map((r) => r.dataset.policy);
		if (rows.join(",") !== "ImagePolicy/flux-system/latest,ImagePolicy/flux-system/podinfo") bad.push("policies " + rows.join(","));
		for (const r of chain.querySelectorAll("[data-testid=image-policy]")) {
			const repo = r.querySelector('[data-testid=image-node][data-object="ImageRepository/flux-system/podinfo"]');
			if (text(repo, "tag-count") !== "3" || !text(repo, "last-scan") || text(repo, "last-scan") === "never") bad.push(r.dataset.policy + ": repository " + (repo && repo.textContent));
			if (!cond(repo, "Ready").includes(%q)) bad.push("repository Ready " + cond(repo, "Ready"));
		}
		const pod = node("ImagePolicy/flux-system/podinfo"), latest = node("ImagePolicy/flux-system/latest");
		if (text(pod, "latest-ref") !== "6.7.1@%s") bad.push("podinfo latest " + text(pod, "latest-ref"));
		if (!cond(pod, "Ready").includes(%q)) bad.push("podinfo Ready " + cond(pod, "Ready"));
		if (cond(pod, "MutableTag")) bad.push("podinfo has a MutableTag condition");
		if (!text(latest, "latest-ref").startsWith("latest@")) bad.push("latest latest " + text(latest, "latest-ref"));
		if (!cond(latest, "MutableTag").includes(%q)) bad.push("latest MutableTag " + cond(latest, "MutableTag"));
		const auto = node("ImageUpdateAutomation/flux-system/podinfo"), src = node("GitRepository/flux-system/flux-system");
		if (!cond(auto, "Ready").includes("pushed commit '9c1e5a7'")) bad.push("automation Ready " + cond(auto, "Ready"));
		if (text(auto, "signing-key") !== "Secret signing-key") bad.push("signing key " + text(auto, "signing-key"));
		if (!src || src.dataset.state !== "ready") bad.push("source " + (src && src.textContent));
		const push = chain.querySelector("[data-testid=image-push]");
		if (text(push, "push-commit") !== %q || !text(push, "push-time")) bad.push("push " + (push && push.textContent));
		return [bad.length === 0, bad.join("; ")];
	})()`, scanMsg, podinfoDgst, policyMsg, mutableMsg, uiPushCommit))
	b.screenshot("image-automation-chain")
	if body, err := eval[string](b, `document.body.innerText`); err != nil || strings.Contains(body, "PGP PRIVATE") {
		t.Errorf("the signing key's content on the page (%v)", err)
	}
	if hidden, err := eval[bool](b, `document.querySelector("[data-testid=banner]").hidden`); err != nil || !hidden {
		t.Errorf("a banner shows (%v)", err)
	}

	b.open("/object/ImageRepository/flux-system/podinfo", `[data-testid=image-chain][data-automation="ImageUpdateAutomation/flux-system/podinfo"]`)
	b.waitFor("the repository's page marks the repository as the page's own", 10*time.Second,
		`[!!document.querySelector('[data-testid=image-chain] .icard.self[data-object="ImageRepository/flux-system/podinfo"]'), ""]`)

	// At a phone's width the chain is one column: nothing scrolls sideways.
	b.run("phone width", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	b.open("/object/ImageUpdateAutomation/flux-system/podinfo", `[data-testid=image-push]`)
	b.waitFor("the page fits 375 px", 10*time.Second, `[document.documentElement.scrollWidth <= window.innerWidth + 1,
		document.documentElement.scrollWidth + " px wide"]`)
	b.screenshot("image-automation-chain-phone")
}

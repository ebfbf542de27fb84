package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The image commands' e2e test runs the built bin/eddy (and bin/flux when
// built) against an API server with Eddy's CRDs and no image controller:
// the test writes status itself and a stand-in answers reconcile requests.

// imageFixtures: a scanned ImageRepository and a suspended one never
// scanned, a policy that selected a tag, an automation in pull request
// mode (Eddy's extension) that ran, and one in namespace apps.
const imageFixtures = `
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: podinfo, namespace: flux-system}
spec: {image: ghcr.io/stefanprodan/podinfo, interval: 5m}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: paused, namespace: flux-system}
spec: {image: ghcr.io/org/paused, interval: 5m, suspend: true}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: podinfo, namespace: flux-system}
spec:
  imageRepositoryRef: {name: podinfo}
  policy: {semver: {range: 6.x}}
  digestReflectionPolicy: IfNotPresent
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: podinfo, namespace: flux-system}
spec:
  interval: 30m
  sourceRef: {kind: GitRepository, name: flux-system}
  git:
    commit: {author: {email: bot@example.com, name: bot}}
    push:
      pullRequest:
        provider: github
        branchTemplate: 'image-updates/{{ .AutomationObject.Name }}'
        secretRef: {name: github-token}
  update: {path: ./clusters}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: other, namespace: apps}
spec:
  interval: 30m
  sourceRef: {kind: GitRepository, name: apps}
  git:
    commit: {author: {email: bot@example.com}}
`

const (
	scanChecksum = "sha256:7f1c0c4b6b8a1b2c3d4e5f60718293a4b5c6d7e8f90123456789abcdef012345"
	scanMsg      = "successful scan: found 3 tags with checksum " + scanChecksum
	podinfoDgst  = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	policyMsg    = "Latest image tag for ghcr.io/stefanprodan/podinfo resolved to 6.7.1"
	upToDate     = "repository up-to-date"
)

// scanTime is the fixtures' last scan and automation run (whole seconds:
// what metav1.Time keeps).
var scanTime = metav1.NewTime(time.Date(2026, 12, 4, 10, 30, 0, 0, time.UTC))

// setImageStatus writes the fixtures' status as the image controllers would.
func setImageStatus(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	update := func(obj client.Object, set func(gen int64)) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		set(obj.GetGeneration())
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatalf("status of %s: %v", obj.GetName(), err)
		}
	}
	repo := &imagev1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "podinfo"}}
	update(repo, func(gen int64) {
		repo.Status = imagev1.ImageRepositoryStatus{ObservedGeneration: gen, CanonicalImageName: "ghcr.io/stefanprodan/podinfo",
			LastScanResult: &imagev1.ScanResult{Revision: scanChecksum, TagCount: 3, ScanTime: scanTime, LatestTags: []string{"6.7.1", "6.7.0", "6.6.0"}},
			Conditions:     readyCond(metav1.ConditionTrue, meta.SucceededReason, scanMsg, gen)}
	})
	pol := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "podinfo"}}
	update(pol, func(gen int64) {
		pol.Status = imagev1.ImagePolicyStatus{ObservedGeneration: gen,
			LatestRef:  &imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.7.1", Digest: podinfoDgst},
			Conditions: readyCond(metav1.ConditionTrue, meta.SucceededReason, policyMsg, gen)}
	})
	auto := &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "podinfo"}}
	update(auto, func(gen int64) {
		auto.Status = imagev1.ImageUpdateAutomationStatus{ObservedGeneration: gen, LastAutomationRunTime: &scanTime,
			ObservedPolicies: imagev1.ObservedPolicies{"podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.7.1"}},
			Conditions:       readyCond(metav1.ConditionTrue, meta.SucceededReason, upToDate, gen)}
	})
}

// answerImageReconciles stands in for the image controllers until ctx
// ends: an object whose generation or reconcile request is not yet
// handled gets its observedGeneration, lastHandledReconcileAt and a Ready
// condition of its generation (Ready=True, its message kept).
func answerImageReconciles(ctx context.Context, c client.Client) {
	handle := func(obj client.Object, conds *[]metav1.Condition, observed *int64, handled *string) {
		token := obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
		if token == *handled && *observed == obj.GetGeneration() {
			return
		}
		*handled, *observed = token, obj.GetGeneration()
		msg := "reconciled"
		if r := apimeta.FindStatusCondition(*conds, meta.ReadyCondition); r != nil {
			msg = r.Message
		}
		*conds = readyCond(metav1.ConditionTrue, meta.SucceededReason, msg, obj.GetGeneration())
		_ = c.Status().Update(ctx, obj) // a conflict is retried at the next poll
	}
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		repos := &imagev1.ImageRepositoryList{}
		if c.List(ctx, repos) == nil {
			for i := range repos.Items {
				o := &repos.Items[i]
				handle(o, &o.Status.Conditions, &o.Status.ObservedGeneration, &o.Status.LastHandledReconcileAt)
			}
		}
		pols := &imagev1.ImagePolicyList{}
		if c.List(ctx, pols) == nil {
			for i := range pols.Items {
				o := &pols.Items[i]
				handle(o, &o.Status.Conditions, &o.Status.ObservedGeneration, &o.Status.LastHandledReconcileAt)
			}
		}
		autos := &imagev1.ImageUpdateAutomationList{}
		if c.List(ctx, autos) == nil {
			for i := range autos.Items {
				o := &autos.Items[i]
				handle(o, &o.Status.Conditions, &o.Status.ObservedGeneration, &o.Status.LastHandledReconcileAt)
			}
		}
		return false, nil
	})
}

// startImageEnv starts an API server with Eddy's CRDs and creates the
// fixtures with their status; it returns the client and --kubeconfig.
func startImageEnv(t *testing.T) (context.Context, client.Client, *testenv.Environment) {
	t.Helper()
	ctx, c, env := startAPIServer(t, "flux-system", "apps")
	for _, doc := range strings.Split(imageFixtures, "\n---\n") {
		var obj client.Object
		switch {
		case strings.Contains(doc, "kind: ImageRepository\n"):
			obj = &imagev1.ImageRepository{}
		case strings.Contains(doc, "kind: ImagePolicy\n"):
			obj = &imagev1.ImagePolicy{}
		default:
			obj = &imagev1.ImageUpdateAutomation{}
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
	setImageStatus(ctx, t, c)
	return ctx, c, env
}

// headerIs fails t unless the first line of out has the columns want.
func headerIs(t *testing.T, out, want string) {
	t.Helper()
	if ls := lines(out); len(ls) == 0 || strings.Join(strings.Fields(ls[0]), " ") != want {
		t.Errorf("header of:\n%s\nwant %s", out, want)
	}
}

// TestImageCommandsE2E: the image kinds' CRDs default and validate as
// Flux's (plus the pull request extension's rule); `eddy get images
// all|repository|policy|update` print flux's columns, -A and -o yaml;
// bin/flux lists the same objects; `reconcile image`, `suspend`/`resume`,
// `export` and `delete image` work through the table of kinds.
func TestImageCommandsE2E(t *testing.T) {
	u := newUser(t)
	ctx, c, env := startImageEnv(t)
	kc := "--kubeconfig=" + env.KubeconfigPath
	scanned := scanTime.Local().Format(time.RFC3339) // flux prints times in the local zone

	t.Run("CRD defaults and rules", func(t *testing.T) {
		repo := &imagev1.ImageRepository{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "podinfo"}, repo); err != nil {
			t.Fatal(err)
		}
		if strings.Join(repo.Spec.ExclusionList, ",") != `^.*\.sig$` || repo.Spec.Provider != "generic" {
			t.Errorf("ImageRepository defaults: exclusionList %q provider %q", repo.Spec.ExclusionList, repo.Spec.Provider)
		}
		auto := &imagev1.ImageUpdateAutomation{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "other"}, auto); err != nil {
			t.Fatal(err)
		}
		if auto.Spec.Update == nil || auto.Spec.Update.Strategy != imagev1.UpdateStrategySetters || auto.Status.ObservedGeneration != -1 {
			t.Errorf("ImageUpdateAutomation defaults: update %+v, observedGeneration %d", auto.Spec.Update, auto.Status.ObservedGeneration)
		}
		for doc, want := range map[string]string{
			"kind: ImagePolicy\nspec: {imageRepositoryRef: {name: r}, policy: {alphabetical: {}}, interval: 5m}":                   "spec.interval is only accepted when spec.digestReflectionPolicy is set to 'Always'",
			"kind: ImagePolicy\nspec: {imageRepositoryRef: {name: r}, policy: {alphabetical: {}}, digestReflectionPolicy: Always}": "spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'",
			"kind: ImageUpdateAutomation\nspec: {interval: 5m, sourceRef: {kind: GitRepository, name: g}, git: {commit: {author: {email: a@b}}, push: {branch: x, " +
				"pullRequest: {provider: github, branchTemplate: b, secretRef: {name: s}}}}}": "spec.git.push.pullRequest excludes spec.git.push.branch and spec.git.push.refspec",
			"kind: ImageRepository\nspec: {image: x, interval: 5m, provider: ibm}": `spec.provider: Unsupported value: "ibm"`,
		} {
			var obj client.Object = &imagev1.ImagePolicy{}
			if strings.HasPrefix(doc, "kind: ImageUpdateAutomation") {
				obj = &imagev1.ImageUpdateAutomation{}
			} else if strings.HasPrefix(doc, "kind: ImageRepository") {
				obj = &imagev1.ImageRepository{}
			}
			if err := yaml.UnmarshalStrict([]byte("apiVersion: image.toolkit.fluxcd.io/v1\nmetadata: {name: bad, namespace: apps}\n"+doc), obj); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, obj); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("creating %s: %v; want %q", doc, err, want)
			}
		}
	})

	t.Run("get images", func(t *testing.T) {
		out := u.must(kc, "get", "images", "repository")
		headerIs(t, out, "NAME LAST SCAN SUSPENDED READY MESSAGE")
		wantRow(t, out, "podinfo", scanned, "False", "True", scanMsg)
		wantRow(t, out, "paused", "True", "False", "waiting to be reconciled")
		out = u.must(kc, "get", "image", "policy")
		headerIs(t, out, "NAME IMAGE TAG READY MESSAGE")
		wantRow(t, out, "podinfo", "ghcr.io/stefanprodan/podinfo", "6.7.1", "True", policyMsg)
		out = u.must(kc, "get", "images", "update")
		headerIs(t, out, "NAME LAST RUN SUSPENDED READY MESSAGE")
		wantRow(t, out, "podinfo", scanned, "False", "True", upToDate)
		if strings.Contains(out, "other") {
			t.Error("get images update lists an automation of namespace apps without -A")
		}
		out = u.must(kc, "get", "images", "all", "-A")
		matchInOrder(t, out,
			`^NAMESPACE\s+NAME\s+LAST SCAN\s+SUSPENDED\s+READY\s+MESSAGE$`,
			`^flux-system\s+imagerepository/podinfo\s+`+regexp.QuoteMeta(scanned)+`\s+False\s+True\s+`+regexp.QuoteMeta(scanMsg)+`$`,
			`^NAMESPACE\s+NAME\s+IMAGE\s+TAG\s+READY\s+MESSAGE$`,
			`^flux-system\s+imagepolicy/podinfo\s+ghcr\.io/stefanprodan/podinfo\s+6\.7\.1\s+True\s+`+regexp.QuoteMeta(policyMsg)+`$`,
			`^NAMESPACE\s+NAME\s+LAST RUN\s+SUSPENDED\s+READY\s+MESSAGE$`,
			`^apps\s+imageupdateautomation/other\s+False\s+False\s+waiting to be reconciled$`)
		matchInOrder(t, u.must(kc, "get", "all", "-A"), `^flux-system\s+imagerepository/podinfo\s`, `^flux-system\s+imageupdateautomation/podinfo\s`)
		out = u.must(kc, "get", "images", "policy", "podinfo", "-o", "yaml")
		if !strings.Contains(out, "kind: ImagePolicy\n") || !strings.Contains(out, "    digest: "+podinfoDgst+"\n") {
			t.Errorf("get images policy podinfo -o yaml:\n%s", out)
		}
	})

	t.Run("flux get images", func(t *testing.T) {
		flux := newFluxCLI(t, env.KubeconfigPath)
		flux.must([]string{"get", "images", "all", "-A"},
			`^flux-system\s+imagerepository/podinfo\s+`+regexp.QuoteMeta(scanned)+`\s+False\s+True\s+`+regexp.QuoteMeta(scanMsg)+`\s*$`,
			`^flux-system\s+imagerepository/paused\s+True\s+False\s+waiting to be reconciled\s*$`,
			`^flux-system\s+imagepolicy/podinfo\s+ghcr\.io/stefanprodan/podinfo\s+6\.7\.1\s+True\s+`+regexp.QuoteMeta(policyMsg)+`\s*$`,
			`^flux-system\s+imageupdateautomation/podinfo\s+`+regexp.QuoteMeta(scanned)+`\s+False\s+True\s+`+upToDate+`\s*$`,
			`^apps\s+imageupdateautomation/other\s+False\s+False\s+waiting to be reconciled\s*$`)
		flux.must([]string{"get", "images", "policy", "-n", "flux-system"}, `^NAME\s+IMAGE\s+TAG\s+READY\s+MESSAGE\s*$`)
	})

	go answerImageReconciles(ctx, c)
	t.Run("reconcile, suspend, resume, export, delete", func(t *testing.T) {
		hasLines(t, u.must(kc, "reconcile", "image", "repository", "podinfo"),
			"► annotating ImageRepository podinfo in flux-system namespace", "✔ scan fetched 3 tags")
		hasLines(t, u.must(kc, "reconcile", "image", "policy", "podinfo"), "✔ selected ref ghcr.io/stefanprodan/podinfo:6.7.1@"+podinfoDgst)
		hasLines(t, u.must(kc, "reconcile", "image", "update", "podinfo"), "✔ "+upToDate)
		oneLineError(t, u.fails(kc, "reconcile", "image", "repository", "paused"), "ImageRepository flux-system/paused is suspended")

		hasLines(t, u.must(kc, "suspend", "image", "update", "podinfo"), "✔ image update automation suspended")
		wantRow(t, u.must(kc, "get", "images", "update"), "podinfo", scanned, "True", "True", upToDate)
		hasLines(t, u.must(kc, "resume", "image", "update", "podinfo"),
			"✔ image update automation resumed", "✔ ImageUpdateAutomation podinfo reconciliation completed", "✔ "+upToDate)

		out := u.must(kc, "export", "image", "policy", "podinfo")
		if !strings.HasPrefix(out, "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n") || !strings.Contains(out, "\n  name: podinfo\n") ||
			strings.Contains(out, "status:") || !strings.Contains(out, "      range: 6.x\n") {
			t.Errorf("export image policy podinfo:\n%s", out)
		}
		u.must(kc, "delete", "image", "repository", "paused", "--silent")
		if err := c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "paused"}, &imagev1.ImageRepository{}); err == nil {
			t.Error("delete image repository paused left it")
		}
	})
}

// wantRow fails t unless the row of name in a `get` table has cells want.
func wantRow(t *testing.T, out, name string, want ...string) {
	t.Helper()
	if got := tableRow(t, out, name); strings.Join(got, "|") != strings.Join(append([]string{name}, want...), "|") {
		t.Errorf("row %q, want %q", got, append([]string{name}, want...))
	}
}

// matchInOrder fails t unless out has lines matching each of want (regular
// expressions, trailing blanks trimmed), in that order.
func matchInOrder(t *testing.T, out string, want ...string) {
	t.Helper()
	i := 0
	for _, l := range strings.Split(out, "\n") {
		if i < len(want) && regexp.MustCompile(want[i]).MatchString(strings.TrimRight(l, " ")) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("no line matching %q after the earlier ones in:\n%s", want[i], out)
	}
}

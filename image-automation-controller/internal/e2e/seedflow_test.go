package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
)

// messageTemplate lists each change as Flux's .Changed.Changes gives it.
const messageTemplate = `Automated image update

Automation name: {{ .AutomationObject }}

{{ range .Changed.Changes -}}
- {{ .OldValue }} -> {{ .NewValue }}
{{ end -}}`

// The seed flow, CI push to running image: CI only pushes a tag to the
// registry (no credentials for the cluster); the reflector selects it,
// the automation commits exactly the marker line with the template's
// message, and the Kustomization rolls the Deployment to it.
func TestSeedFlowRollsTheDeploymentToAPushedTag(t *testing.T) {
	reg := testenv.NewRegistry(t)
	// Polling: the ImageRepository and the GitRepository every second
	// (seedObjects); the test requests no reconcile.
	t.Run("tag", func(t *testing.T) { seedFlow(t, reg.Host(), "podinfo", flow{}) })
	// Digest pinning: the marker is on name:tag@digest and the policy
	// reflects the digest of the tag it selects.
	t.Run("tag and digest", func(t *testing.T) { seedFlow(t, reg.Host(), "podinfo-pinned", flow{pinned: true}) })
	// Webhooks: hour-long intervals, and reconcile requests
	// (reconcile.fluxcd.io/requestedAt) on the ImageRepository after the
	// image push and on the GitRepository after the commit, as a
	// notification-controller Receiver does on a registry's and a Git
	// server's webhook.
	t.Run("webhooks", func(t *testing.T) { seedFlow(t, reg.Host(), "podinfo-hooked", flow{webhooks: true}) })
}

// flow is how a seedFlow runs.
type flow struct {
	pinned   bool // the marker on the image with its digest
	webhooks bool // hour intervals and reconcile requests instead of polling
}

func seedFlow(t *testing.T, host, image string, f flow) {
	pinned := f.pinned
	ctx := context.Background()
	ref := func(tag string, digest v1.Hash) string {
		if pinned {
			return host + "/" + image + ":" + tag + "@" + digest.String()
		}
		return host + "/" + image + ":" + tag
	}
	initial := push(t, host+"/"+image+":1.0.0")
	ns := testenv.NewNamespace(t, env.Client, "seed-")
	files := markedPodinfo(t, "image: "+ref("1.0.0", initial)+` # {"$imagepolicy": "`+ns+`:podinfo"}`)
	repo := gitSrv.NewRepo(t, files)
	git(t, repo, "config", "http.receivepack", "true")
	base := git(t, repo, "rev-parse", "main")

	o := seedObjects(ns, repo.URL(), host+"/"+image, f)
	for _, obj := range []client.Object{o.source, o.kustomization, o.repository, o.policy, o.automation} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	p, auto, ks := o.policy, o.automation, o.kustomization
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}}
	imageOf := func() string {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), deploy); err != nil {
			return ""
		}
		return deploy.Spec.Template.Spec.Containers[0].Image
	}
	pollUntil(t, "the Deployment applied at "+ref("1.0.0", initial), func() bool { return imageOf() == ref("1.0.0", initial) })
	testenv.WaitFor(t, env.Client, auto, "the automation Ready with nothing to push", func() bool {
		c := apimeta.FindStatusCondition(auto.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && auto.Status.ObservedSourceRevision == "main@sha1:"+base
	})
	if auto.Status.LastPushCommit != "" || git(t, repo, "rev-parse", "main") != base {
		t.Fatalf("pushed with nothing to change: %+v", auto.Status)
	}

	// CI pushes 1.1.0.
	start := time.Now()
	pushed := push(t, host+"/"+image+":1.1.0")
	if f.webhooks {
		requestReconcile(t, o.repository)
	}
	latest := pollUntil(t, "the policy at 1.1.0", func() bool {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p)
		return err == nil && p.Status.LatestRef != nil && p.Status.LatestRef.Tag == "1.1.0"
	})
	committed := pollUntil(t, "a commit on main", func() bool { return git(t, repo, "rev-parse", "main") != base })
	if f.webhooks {
		requestReconcile(t, o.source)
	}
	rolled := pollUntil(t, "the Deployment at "+ref("1.1.0", pushed), func() bool { return imageOf() == ref("1.1.0", pushed) })
	t.Logf("from the push: policy latestRef %v, commit %v, Deployment updated %v",
		latest.Sub(start).Round(time.Millisecond), committed.Sub(start).Round(time.Millisecond), rolled.Sub(start).Round(time.Millisecond))

	head := git(t, repo, "rev-parse", "main")
	if parent := git(t, repo, "rev-parse", "main^"); parent != base {
		t.Fatalf("more than one commit after %s (main^ is %s)", base, parent)
	}
	wantMsg := "Automated image update\n\nAutomation name: " + ns + "/podinfo\n\n- " + ref("1.0.0", initial) + " -> " + ref("1.1.0", pushed)
	if msg := git(t, repo, "log", "-1", "--format=%B", "main"); msg != wantMsg {
		t.Errorf("commit message:\n%s\nwant:\n%s", msg, wantMsg)
	}
	checkOnlyTheMarkerChanged(t, repo, files, ref("1.0.0", initial), ref("1.1.0", pushed))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
		t.Fatal(err)
	}
	if ks.Status.LastAppliedRevision != "main@sha1:"+head {
		t.Errorf("Kustomization lastAppliedRevision %q, want main@sha1:%s", ks.Status.LastAppliedRevision, head)
	}
}

// seed are the seed flow's objects.
type seed struct {
	source        *sourcev1.GitRepository
	kustomization *kustomizev1.Kustomization
	repository    *imagev1.ImageRepository
	policy        *imagev1.ImagePolicy
	automation    *imagev1.ImageUpdateAutomation
}

// seedObjects returns, in ns, the seed flow's objects, all named podinfo:
// a GitRepository on url polled every second, a Kustomization applying
// ./kustomize (prune, no wait), an ImageRepository on image scanned every
// second, a semver policy (reflecting digests when pinned) and an
// automation committing to main. The Kustomization and the automation
// keep an hour's interval: they follow their source by watch. With
// webhooks, the sources too poll every hour.
func seedObjects(ns, url, image string, f flow) seed {
	second, hour := metav1.Duration{Duration: time.Second}, metav1.Duration{Duration: time.Hour}
	if f.webhooks {
		second = hour
	}
	named := func() metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: "podinfo"} }
	src := &sourcev1.GitRepository{ObjectMeta: named(), Spec: sourcev1.GitRepositorySpec{URL: url, Interval: second,
		Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}}
	ks := &kustomizev1.Kustomization{ObjectMeta: named(), Spec: kustomizev1.KustomizationSpec{Interval: hour,
		Path: "./kustomize", Prune: true, TargetNamespace: ns,
		SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "podinfo"}}}
	repo := &imagev1.ImageRepository{ObjectMeta: named(), Spec: imagev1.ImageRepositorySpec{Image: image, Interval: second}}
	pol := &imagev1.ImagePolicy{ObjectMeta: named(), Spec: imagev1.ImagePolicySpec{
		ImageRepositoryRef: meta.NamespacedObjectReference{Name: "podinfo"}, Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0"}}}}
	if f.pinned {
		pol.Spec.DigestReflectionPolicy = imagev1.ReflectIfNotPresent
	}
	auto := &imagev1.ImageUpdateAutomation{ObjectMeta: named(), Spec: imagev1.ImageUpdateAutomationSpec{
		SourceRef: imagev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "podinfo"},
		Interval:  hour,
		GitSpec: &imagev1.GitSpec{
			Checkout: &imagev1.GitCheckoutSpec{Reference: sourcev1.GitRepositoryRef{Branch: "main"}},
			Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Name: "Flux Bot", Email: "flux@example.com"},
				MessageTemplate: messageTemplate},
		},
		Update: &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: "./kustomize"},
	}}
	return seed{source: src, kustomization: ks, repository: repo, policy: pol, automation: auto}
}

// push writes a new random image as ref (host/name:tag) and returns its
// digest; the registry asks for no credentials, as CI's would not reach
// the cluster.
func push(t *testing.T, ref string) v1.Hash {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// podinfoLine is the image line of the shared podinfo kustomize directory.
const podinfoLine = "image: ghcr.io/stefanprodan/podinfo:6.14.1"

// markedPodinfo returns a copy of the shared podinfo kustomize directory
// (under kustomize/) whose image line is replaced by line.
func markedPodinfo(t *testing.T, line string) map[string]string {
	t.Helper()
	dir := filepath.Join(testenv.TestdataDir(t), "repos/podinfo/kustomize")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files["kustomize/"+e.Name()] = string(b)
	}
	const path = "kustomize/deployment.yaml"
	if strings.Count(files[path], podinfoLine) != 1 {
		t.Fatalf("%s has no single line %q", path, podinfoLine)
	}
	files[path] = strings.Replace(files[path], podinfoLine, line, 1)
	return files
}

// checkOnlyTheMarkerChanged checks that main holds exactly the files of
// base, each byte for byte, but for the marked line of deployment.yaml
// where old became new.
func checkOnlyTheMarkerChanged(t *testing.T, repo *testenv.Repo, base map[string]string, old, new string) {
	t.Helper()
	if stat, want := git(t, repo, "diff", "--numstat", "main^", "main"), "1\t1\tkustomize/deployment.yaml"; stat != want {
		t.Errorf("diff --numstat %q, want %q", stat, want)
	}
	names := strings.Split(git(t, repo, "ls-tree", "-r", "--name-only", "main"), "\n")
	if len(names) != len(base) {
		t.Errorf("main holds %q, want the %d files of the initial commit", names, len(base))
	}
	for path, content := range base {
		want := content
		if path == "kustomize/deployment.yaml" {
			want = strings.Replace(content, "image: "+old+" #", "image: "+new+" #", 1)
		}
		// git trims the output: compare with want trimmed too.
		if got := git(t, repo, "show", "main:"+path); got != strings.TrimSpace(want) {
			t.Errorf("%s on main:\n%s\nwant:\n%s", path, got, want)
		}
	}
}

// requestReconcile sets reconcile.fluxcd.io/requestedAt on obj, as a
// Receiver does, without waiting for it to be handled.
func requestReconcile(t *testing.T, obj client.Object) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
	if err := env.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// git runs git args in repo's bare repository and returns its trimmed output.
func git(t *testing.T, repo *testenv.Repo, args ...string) string {
	t.Helper()
	out, err := gitserver.Git(repo.Bare, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
)

// The suite runs the built image-automation-controller against the api
// profile and a real Git server; the test writes the ImagePolicies'
// status itself (image-reflector-controller's part).
var (
	env    *testenv.Environment
	gitSrv *testenv.GitServer
	kube   client.Client // with the image kinds
)

// runBinary runs the built controller until t ends; it is linked once
// per package (or taken from EDDY_BUILT_BIN_DIR).
func runBinary(t testing.TB, args ...string) *testenv.Process {
	t.Helper()
	binOnce.Do(func() { binPath, binErr = testenv.BuildController(ControllerName, binDir) })
	if binErr != nil {
		t.Fatal(binErr)
	}
	return testenv.RunBinary(t, env, binPath, append([]string{"--min-retry-delay=200ms", "--max-retry-delay=2s"}, args...)...)
}

var (
	binOnce sync.Once
	binDir  string // removed after the tests
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.WithGitServer(&gitSrv), func(e *testenv.Environment) (func(), error) {
		scheme, err := NewScheme()
		if err != nil {
			return nil, err
		}
		if kube, err = client.New(e.Cluster.Config, client.Options{Scheme: scheme}); err != nil {
			return nil, err
		}
		if binDir, err = os.MkdirTemp("", "image-automation-controller-"); err != nil {
			return nil, err
		}
		return func() { os.RemoveAll(binDir) }, nil
	})
}

const messageTemplate = `Automated image update

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}
Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
  Changes:
{{- range $_, $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}`

// podinfoRepo serves a copy of the podinfo kustomize directory whose
// image line carries a marker for policy ns:podinfo; it returns the
// repository and the marked deployment.yaml.
func podinfoRepo(t *testing.T, ns string) (*testenv.Repo, string) {
	t.Helper()
	dir := filepath.Join(testenv.TestdataDir(t), "repos/podinfo/kustomize")
	files := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files["kustomize/"+e.Name()] = string(b)
	}
	const line = "image: ghcr.io/stefanprodan/podinfo:6.14.1"
	marked := strings.Replace(files["kustomize/deployment.yaml"], line, line+` # {"$imagepolicy": "`+ns+`:podinfo"}`, 1)
	if marked == files["kustomize/deployment.yaml"] {
		t.Fatal("no image line in podinfo's deployment.yaml")
	}
	files["kustomize/deployment.yaml"] = marked
	r := gitSrv.NewRepo(t, files)
	if _, err := gitserver.Git(r.Bare, "config", "http.receivepack", "true"); err != nil {
		t.Fatal(err)
	}
	return r, marked
}

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := kube.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// policy creates ImagePolicy ns/name with status.latestRef as the
// reflector would write it.
func policy(t testing.TB, ns, name string, ref imagev1.ImageRef) *imagev1.ImagePolicy {
	t.Helper()
	p := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: name},
			Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0"}}}}
	create(t, p)
	setLatest(t, p, ref)
	return p
}

func setLatest(t testing.TB, p *imagev1.ImagePolicy, ref imagev1.ImageRef) {
	t.Helper()
	p.Status.LatestRef = &ref
	if err := kube.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func automation(ns, repo string, mutate func(*imagev1.ImageUpdateAutomation)) *imagev1.ImageUpdateAutomation {
	a := &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: repo},
			Interval:  metav1.Duration{Duration: time.Hour},
			GitSpec: &imagev1.GitSpec{
				Checkout: &imagev1.GitCheckoutSpec{Reference: sourcev1.GitRepositoryRef{Branch: "main"}},
				Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Name: "Flux Bot", Email: "flux@example.com"},
					MessageTemplate: messageTemplate},
			},
			Update: &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: "./kustomize"},
		}}
	if mutate != nil {
		mutate(a)
	}
	return a
}

func gitRepository(ns, name, url string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}}
}

func ready(a *imagev1.ImageUpdateAutomation) bool {
	c := apimeta.FindStatusCondition(a.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == a.Generation
}

func remote(t testing.TB, r *testenv.Repo, args ...string) string {
	t.Helper()
	out, err := gitserver.Git(r.Bare, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The seed flow's Git half, with the built binary: a policy whose
// latestRef moves produces exactly one commit with the template's message,
// the marker line changed and every other byte of the repository as it
// was; the status records it; a second policy change in the delay lands
// in the same commit as the first (policyChangeDelay).
func TestBinaryCommitsOncePerPolicyChange(t *testing.T) {
	runBinary(t)
	ns := testenv.NewNamespace(t, kube, "iua-")
	r, marked := podinfoRepo(t, ns)
	first := remote(t, r, "rev-parse", "main")
	p := policy(t, ns, "podinfo", imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.14.1"})
	a := automation(ns, "podinfo", nil)
	create(t, gitRepository(ns, "podinfo", r.URL()), a)

	testenv.WaitFor(t, kube, a, "Ready with nothing to change", func() bool {
		return ready(a) && a.Status.ObservedSourceRevision == "main@sha1:"+first
	})
	if a.Status.LastPushCommit != "" || remote(t, r, "rev-parse", "main") != first {
		t.Fatalf("pushed with nothing to change: %+v", a.Status)
	}

	start := time.Now()
	setLatest(t, p, imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"})
	testenv.WaitFor(t, kube, a, "a pushed commit", func() bool { return ready(a) && a.Status.LastPushCommit != "" })
	t.Logf("policy change to pushed commit: %v", time.Since(start).Round(time.Millisecond))
	head := remote(t, r, "rev-parse", "main")
	if a.Status.LastPushCommit != head || remote(t, r, "rev-parse", "main^") != first {
		t.Fatalf("lastPushCommit %s, remote main %s (one commit on %s expected)", a.Status.LastPushCommit, head, first)
	}
	if a.Status.ObservedSourceRevision != "main@sha1:"+head || a.Status.LastPushTime == nil ||
		a.Status.ObservedPolicies["podinfo"] != (imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"}) {
		t.Errorf("status %+v", a.Status)
	}
	wantMsg := "Automated image update\n\nAutomation name: " + ns + "/podinfo\n\nFiles:\n- deployment.yaml\nObjects:\n- Deployment podinfo\n  Changes:\n" +
		"    - ghcr.io/stefanprodan/podinfo:6.14.1 -> ghcr.io/stefanprodan/podinfo:6.15.0"
	if msg := remote(t, r, "log", "-1", "--format=%B", "main"); msg != wantMsg {
		t.Errorf("commit message:\n%s\nwant:\n%s", msg, wantMsg)
	}
	if files := remote(t, r, "show", "--format=", "--name-only", "main"); files != "kustomize/deployment.yaml" {
		t.Errorf("the commit changes %q", files)
	}
	want := strings.Replace(marked, "podinfo:6.14.1 #", "podinfo:6.15.0 #", 1)
	if got := remote(t, r, "show", "main:kustomize/deployment.yaml") + "\n"; got != want {
		t.Errorf("deployment.yaml:\n%s\nwant:\n%s", got, want)
	}
	// Events are recorded asynchronously: wait for the push event.
	prefix := "pushed commit '" + head[:7] + "' to branch 'main'\nAutomated image update"
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.WaitTimeout, true,
		func(context.Context) (bool, error) {
			return containsPrefix(testenv.KubeEvents(t, kube, ns, "podinfo", meta.SucceededReason), prefix), nil
		})
	if err != nil {
		t.Errorf("no push event in %q", testenv.KubeEvents(t, kube, ns, "podinfo", ""))
	}
}

// policyChangeDelay: two policy changes inside the delay make one commit.
func TestBinaryBatchesPolicyChangesWithinTheDelay(t *testing.T) {
	runBinary(t)
	ns := testenv.NewNamespace(t, kube, "iua-")
	r, marked := podinfoRepo(t, ns)
	// A second marker, for a second policy, in the same file.
	twoMarkers := strings.Replace(marked, "        imagePullPolicy: IfNotPresent\n",
		"        imagePullPolicy: IfNotPresent\n        env:\n        - name: SIDECAR\n          value: ghcr.io/org/sidecar:1.0.0 # {\"$imagepolicy\": \""+ns+":sidecar\"}\n", 1)
	base := r.MustCommit(t, map[string]string{"kustomize/deployment.yaml": twoMarkers}, "a second marker")
	p := policy(t, ns, "podinfo", imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.14.1"})
	s := policy(t, ns, "sidecar", imagev1.ImageRef{Name: "ghcr.io/org/sidecar", Tag: "1.0.0"})
	a := automation(ns, "podinfo", func(a *imagev1.ImageUpdateAutomation) {
		a.Spec.PolicyChangeDelay = &metav1.Duration{Duration: 3 * time.Second}
	})
	create(t, gitRepository(ns, "podinfo", r.URL()), a)
	testenv.WaitFor(t, kube, a, "Ready with nothing to change", func() bool {
		return ready(a) && a.Status.ObservedSourceRevision == "main@sha1:"+base
	})
	setLatest(t, p, imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"})
	setLatest(t, s, imagev1.ImageRef{Name: "ghcr.io/org/sidecar", Tag: "1.1.0"})
	testenv.WaitFor(t, kube, a, "a pushed commit", func() bool { return ready(a) && a.Status.LastPushCommit != "" })
	if parent := remote(t, r, "rev-parse", "main^"); parent != base {
		t.Fatalf("more than one commit after %s (main^ is %s)", base, parent)
	}
	got := remote(t, r, "show", "main:kustomize/deployment.yaml")
	if !strings.Contains(got, "podinfo:6.15.0 #") || !strings.Contains(got, "sidecar:1.1.0 #") {
		t.Errorf("one commit should carry both changes:\n%s", got)
	}
}

// A spec Flux refuses stalls with Flux's reason, without retries.
func TestBinaryStallsOnARemovedTemplateField(t *testing.T) {
	runBinary(t)
	ns := testenv.NewNamespace(t, kube, "iua-")
	a := automation(ns, "missing", func(a *imagev1.ImageUpdateAutomation) {
		a.Spec.GitSpec.Commit.MessageTemplate = "{{ range .Updated.Images }}{{ . }}{{ end }}"
	})
	create(t, a)
	testenv.WaitFor(t, kube, a, "Stalled RemovedTemplateField", func() bool {
		c := apimeta.FindStatusCondition(a.Status.Conditions, meta.StalledCondition)
		return c != nil && c.Reason == imagev1.RemovedTemplateFieldReason && a.Status.ObservedGeneration == a.Generation
	})
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// movesMainOnce is a pre-receive hook that, on the first push only, moves
// main to a new commit of its own before letting the push go on: the
// server then refuses the push (main is no longer where the pusher saw
// it), as it does when someone pushes between the automation's clone and
// its push.
const movesMainOnce = `#!/bin/sh
cat >/dev/null
[ -e moved ] && exit 0
touch moved
unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
export GIT_AUTHOR_NAME=Someone GIT_AUTHOR_EMAIL=someone@example.com GIT_COMMITTER_NAME=Someone GIT_COMMITTER_EMAIL=someone@example.com
c=$(echo "a concurrent commit" | git commit-tree "refs/heads/main^{tree}" -p refs/heads/main)
git update-ref refs/heads/main "$c"
`

// A push refused because main moved (a server-side race): the automation
// applies its update again on the new head and pushes; the other commit
// is kept, nothing is forced.
func TestBinaryPushesOnTheNewHeadWhenMainMoved(t *testing.T) {
	runBinary(t)
	ns := testenv.NewNamespace(t, kube, "iua-")
	r, _ := podinfoRepo(t, ns)
	first := remote(t, r, "rev-parse", "main")
	if err := os.WriteFile(filepath.Join(r.Bare, "hooks", "pre-receive"), []byte(movesMainOnce), 0o755); err != nil {
		t.Fatal(err)
	}
	policy(t, ns, "podinfo", imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"})
	a := automation(ns, "podinfo", nil)
	create(t, gitRepository(ns, "podinfo", r.URL()), a)
	testenv.WaitFor(t, kube, a, "a pushed commit", func() bool { return ready(a) && a.Status.LastPushCommit != "" })
	if _, err := os.Stat(filepath.Join(r.Bare, "moved")); err != nil {
		t.Fatal("the hook did not move main")
	}
	// Retried within the run, not by a failed reconcile.
	if failed := testenv.KubeEvents(t, kube, ns, "podinfo", imagev1.GitOperationFailedReason); len(failed) > 0 {
		t.Errorf("the refused push failed the reconcile: %q", failed)
	}
	log := remote(t, r, "log", "--format=%s", first+"..main")
	if log != "Automated image update\na concurrent commit" {
		t.Errorf("commits on main after the first:\n%s", log)
	}
	if a.Status.LastPushCommit != remote(t, r, "rev-parse", "main") {
		t.Errorf("lastPushCommit %s is not main", a.Status.LastPushCommit)
	}
	if got := remote(t, r, "show", "main:kustomize/deployment.yaml"); !strings.Contains(got, "podinfo:6.15.0 #") {
		t.Errorf("update missing:\n%s", got)
	}
}

// push.branch and policySelector: the update goes to a branch made from
// main, main stays; a policy the selector leaves out is not written;
// observedSourceRevision is main's commit.
func TestBinaryPushesSelectedPoliciesToAnotherBranch(t *testing.T) {
	runBinary(t)
	ns := testenv.NewNamespace(t, kube, "iua-")
	r, marked := podinfoRepo(t, ns)
	withOther := strings.Replace(marked, "        imagePullPolicy: IfNotPresent\n",
		"        imagePullPolicy: IfNotPresent\n        env:\n        - name: OTHER\n          value: ghcr.io/org/other:1.0.0 # {\"$imagepolicy\": \""+ns+":other\"}\n", 1)
	broken := "image: a:1 # {\"$imagepolicy\": \"" + ns + ":podinfo\"}\n  bad: [\n"
	main := r.MustCommit(t, map[string]string{"kustomize/deployment.yaml": withOther, "kustomize/broken.yaml": broken}, "another marker")
	p := policy(t, ns, "podinfo", imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"})
	p.Labels = map[string]string{"automate": "yes"}
	if err := kube.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	policy(t, ns, "other", imagev1.ImageRef{Name: "ghcr.io/org/other", Tag: "2.0.0"})
	a := automation(ns, "podinfo", func(a *imagev1.ImageUpdateAutomation) {
		a.Spec.PolicySelector = &metav1.LabelSelector{MatchLabels: map[string]string{"automate": "yes"}}
		a.Spec.GitSpec.Push = &imagev1.PushSpec{Branch: "image-updates"}
	})
	create(t, gitRepository(ns, "podinfo", r.URL()), a)
	testenv.WaitFor(t, kube, a, "a pushed commit", func() bool { return ready(a) && a.Status.LastPushCommit != "" })
	if remote(t, r, "rev-parse", "main") != main {
		t.Error("main moved")
	}
	if a.Status.LastPushCommit != remote(t, r, "rev-parse", "image-updates") || remote(t, r, "rev-parse", "image-updates^") != main {
		t.Errorf("image-updates is not main plus the pushed commit %s", a.Status.LastPushCommit)
	}
	if a.Status.ObservedSourceRevision != "main@sha1:"+main || len(a.Status.ObservedPolicies) != 1 {
		t.Errorf("status %+v", a.Status)
	}
	got := remote(t, r, "show", "image-updates:kustomize/deployment.yaml")
	if !strings.Contains(got, "podinfo:6.15.0 #") || !strings.Contains(got, "other:1.0.0 #") {
		t.Errorf("deployment.yaml on image-updates:\n%s", got)
	}
	if remote(t, r, "show", "image-updates:kustomize/broken.yaml")+"\n" != broken {
		t.Error("broken.yaml changed")
	}
	// What was left alone is said in a Warning event.
	want := "broken.yaml: skipped: not valid YAML: yaml: line 1: did not find expected key\n" +
		"deployment.yaml:30: marker '" + ns + ":other' names no selected ImagePolicy with a latest image"
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.WaitTimeout, true,
		func(context.Context) (bool, error) {
			return containsPrefix(testenv.KubeEvents(t, kube, ns, "podinfo", UnappliedMarkersReason), want), nil
		})
	if err != nil {
		t.Errorf("events %q, want %q", testenv.KubeEvents(t, kube, ns, "podinfo", UnappliedMarkersReason), want)
	}
}

// A missing GitRepository: Ready=False SourceManagerFailed, retried (not
// stalled); once it exists the automation becomes Ready.
func TestBinaryWaitsForAMissingGitRepository(t *testing.T) {
	runBinary(t)
	ns := testenv.NewNamespace(t, kube, "iua-")
	r, _ := podinfoRepo(t, ns)
	a := automation(ns, "podinfo", nil)
	create(t, a)
	testenv.WaitFor(t, kube, a, "Ready=False SourceManagerFailed", func() bool {
		c := apimeta.FindStatusCondition(a.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == imagev1.SourceManagerFailedReason &&
			c.Message == "failed configuring source manager: unable to get source 'GitRepository/"+ns+"/podinfo': not found" &&
			!apimeta.IsStatusConditionTrue(a.Status.Conditions, meta.StalledCondition)
	})
	create(t, gitRepository(ns, "podinfo", r.URL()))
	testenv.WaitFor(t, kube, a, "Ready", func() bool { return ready(a) })
}

package webui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	signingKeyValue = "-----BEGIN PGP PRIVATE KEY BLOCK----- do-not-show"
	pushCommit      = "3f2a1b0c9d8e7f60514233241506978a8b9c0d1e"
	podinfoDigest   = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// imageFixture creates, in a new namespace, the chain GitRepository
// "apps" and ImageRepository "podinfo" → ImagePolicies "podinfo" (semver)
// and "latest" (MutableTag) → ImageUpdateAutomation "apps" (selecting
// app=podinfo, with a signing key Secret) that pushed a commit; and a
// policy "unread" of the same repository that no automation selects.
// Status is written as the controllers would.
func imageFixture(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "img-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	at := metav1.NewTime(time.Date(2026, 12, 4, 10, 30, 0, 0, time.UTC))
	ready := func(msg string, gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: msg, ObservedGeneration: gen, LastTransitionTime: at}}
	}
	create := func(obj client.Object, status func(gen int64)) {
		t.Helper()
		obj.SetNamespace(ns.Name)
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
		if status != nil {
			status(obj.GetGeneration())
			if err := env.Client.Status().Update(ctx, obj); err != nil {
				t.Fatalf("status of %s: %v", obj.GetName(), err)
			}
		}
	}
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "signing-key"}, StringData: map[string]string{"git.asc": signingKeyValue}}, nil)
	git := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "apps"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/apps.git", Interval: metav1.Duration{Duration: time.Minute}}}
	create(git, func(gen int64) { git.Status.Conditions = ready("stored artifact for revision 'main@sha1:aaaa'", gen) })
	repo := &imagev1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Name: "podinfo"},
		Spec: imagev1.ImageRepositorySpec{Image: "ghcr.io/stefanprodan/podinfo", Interval: metav1.Duration{Duration: 5 * time.Minute}}}
	create(repo, func(gen int64) {
		repo.Status.LastScanResult = &imagev1.ScanResult{Revision: "sha256:1111", TagCount: 7, ScanTime: at}
		repo.Status.Conditions = ready("successful scan: found 7 tags", gen)
	})
	policy := func(name string, labels map[string]string, tag string, conds func(gen int64) []metav1.Condition) {
		p := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "podinfo"},
				Policy: imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}}}}
		create(p, func(gen int64) {
			p.Status.LatestRef = &imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: tag, Digest: podinfoDigest}
			p.Status.Conditions = conds(gen)
		})
	}
	app := map[string]string{"app": "podinfo"}
	policy("podinfo", app, "6.7.1", func(gen int64) []metav1.Condition {
		return ready("Latest image tag for ghcr.io/stefanprodan/podinfo resolved to 6.7.1", gen)
	})
	policy("latest", app, "latest", func(gen int64) []metav1.Condition {
		return append(ready("Latest image tag for ghcr.io/stefanprodan/podinfo resolved to latest", gen),
			metav1.Condition{Type: "MutableTag", Status: metav1.ConditionTrue, Reason: "MutableTagSelected", LastTransitionTime: at,
				Message: `the policy resolves to tag "latest", which is moved to new images: select version tags`})
	})
	policy("unread", nil, "6.7.0", func(gen int64) []metav1.Condition { return ready("resolved to 6.7.0", gen) })
	auto := &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Name: "apps"},
		Spec: imagev1.ImageUpdateAutomationSpec{Interval: metav1.Duration{Duration: 30 * time.Minute},
			SourceRef:      imagev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "apps"},
			PolicySelector: &metav1.LabelSelector{MatchLabels: app},
			GitSpec: &imagev1.GitSpec{Push: &imagev1.PushSpec{Branch: "main"}, Commit: imagev1.CommitSpec{
				Author: imagev1.CommitUser{Email: "bot@example.com"}, SigningKey: &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "signing-key"}}}}}}
	create(auto, func(gen int64) {
		auto.Status.LastAutomationRunTime, auto.Status.LastPushTime, auto.Status.LastPushCommit = &at, &at, pushCommit
		auto.Status.ObservedPolicies = imagev1.ObservedPolicies{"podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.7.1", Digest: podinfoDigest}}
		auto.Status.Conditions = append(ready("pushed commit '3f2a1b0' to branch 'main'", gen),
			metav1.Condition{Type: meta.StalledCondition, Status: metav1.ConditionFalse, Reason: meta.SucceededReason, LastTransitionTime: at})
	})
	return ns.Name
}

// getBody GETs u and returns its status and body.
func getBody(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func condMessage(conds []Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status + " " + c.Message
		}
	}
	return ""
}

// TestImageAutomationChainAPI: an ImageUpdateAutomation's page carries its
// GitRepository, the policies its selector reads (latestRef tag@digest,
// a MutableTag warning) each with the repository it scans (last scan, tag
// count), and its last push; a repository's page reaches the same
// automation and lists the policy no automation reads apart; the graph
// joins the chain; the signing key Secret is a name, never its content.
func TestImageAutomationChainAPI(t *testing.T) {
	ns := imageFixture(t)
	base := serve(t, Options{Config: env.Config, Namespaces: []string{ns}})
	var d Detail
	waitUntilJSON(t, base+"api/object/ImageUpdateAutomation/"+ns+"/apps", &d, func() bool {
		return d.Image != nil && len(d.Image.Automations) == 1 && len(d.Image.Automations[0].Policies) == 2
	})
	a := d.Image.Automations[0]
	if a.Source == nil || a.Source.Summary.Kind != "GitRepository" || a.Source.Summary.State != "ready" || a.SourceRef.Namespace != ns {
		t.Errorf("source %+v (ref %+v)", a.Source, a.SourceRef)
	}
	if a.LastPushCommit != pushCommit || a.LastPushTime == nil || a.PushBranch != "main" || a.SigningKey != "signing-key" {
		t.Errorf("push %q at %v to %q, signing key %q", a.LastPushCommit, a.LastPushTime, a.PushBranch, a.SigningKey)
	}
	if got := condMessage(a.Conditions, "Ready"); got != "True pushed commit '3f2a1b0' to branch 'main'" {
		t.Errorf("automation Ready %q", got)
	}
	if got := condMessage(a.Conditions, "Stalled"); !strings.HasPrefix(got, "False") {
		t.Errorf("automation Stalled %q", got)
	}
	var names []string
	for _, p := range a.Policies {
		names = append(names, p.Summary.Name)
		r := p.Repository
		if r == nil || r.TagCount != 7 || r.LastScan == nil || r.Image != "ghcr.io/stefanprodan/podinfo" || r.Summary.State != "ready" {
			t.Errorf("policy %s: repository %+v", p.Summary.Name, r)
		}
		if p.LatestRef == nil || p.LatestRef.Digest != podinfoDigest {
			t.Errorf("policy %s: latestRef %+v", p.Summary.Name, p.LatestRef)
		}
	}
	if !slices.Equal(names, []string{"latest", "podinfo"}) {
		t.Errorf("the automation reads %v, want the two policies its selector matches", names)
	}
	if got := condMessage(a.Policies[0].Conditions, "MutableTag"); !strings.Contains(got, `True the policy resolves to tag "latest"`) {
		t.Errorf("latest's MutableTag %q", got)
	}
	if o := a.Policies[1].Observed; o == nil || o.Tag != "6.7.1" {
		t.Errorf("podinfo's observed ref %+v", o)
	}
	for _, path := range []string{"api/object/ImageUpdateAutomation/" + ns + "/apps", "api/object/ImageRepository/" + ns + "/podinfo", "api/graph", "api/objects"} {
		if code, body := getBody(t, base+path); code != http.StatusOK || strings.Contains(body, "PGP PRIVATE") {
			t.Errorf("GET %s: %d, the signing key's content in it: %v", path, code, strings.Contains(body, "PGP PRIVATE"))
		}
	}

	var rd Detail
	getJSON(t, base+"api/object/ImageRepository/"+ns+"/podinfo", &rd)
	if rd.Image == nil || len(rd.Image.Automations) != 1 || rd.Image.Automations[0].Summary.Name != "apps" ||
		len(rd.Image.Policies) != 1 || rd.Image.Policies[0].Summary.Name != "unread" {
		t.Errorf("the repository's chain: %+v", rd.Image)
	}

	var g Graph
	getJSON(t, base+"api/graph", &g)
	var edges []string
	for _, e := range g.Edges {
		if strings.Contains(e.To, "Image") {
			edges = append(edges, e.From+" → "+e.To)
		}
	}
	slices.Sort(edges)
	id := func(kind, name string) string { return kind + "/" + ns + "/" + name }
	want := []string{
		id("GitRepository", "apps") + " → " + id("ImageUpdateAutomation", "apps"),
		id("ImagePolicy", "latest") + " → " + id("ImageUpdateAutomation", "apps"),
		id("ImagePolicy", "podinfo") + " → " + id("ImageUpdateAutomation", "apps"),
		id("ImageRepository", "podinfo") + " → " + id("ImagePolicy", "latest"),
		id("ImageRepository", "podinfo") + " → " + id("ImagePolicy", "podinfo"),
		id("ImageRepository", "podinfo") + " → " + id("ImagePolicy", "unread"),
	}
	if !slices.Equal(edges, want) {
		t.Errorf("graph edges into image kinds:\n%s\nwant\n%s", strings.Join(edges, "\n"), strings.Join(want, "\n"))
	}
}

// waitUntilJSON GETs u into v until ok (the informers see new objects
// and their status a moment after they are written), for 20 s at most.
func waitUntilJSON(t *testing.T, u string, v any, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code := getJSON(t, u, v)
		if code == http.StatusOK && ok() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d, %+v", u, code, v)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mapLookup is a store of objects by kind, without the image kinds'
// CRDs unless given objects of them.
type mapLookup map[string][]*unstructured.Unstructured

func (m mapLookup) get(kind, namespace, name string) *unstructured.Unstructured {
	for _, u := range m[kind] {
		if u.GetNamespace() == namespace && u.GetName() == name {
			return u
		}
	}
	return nil
}

func (m mapLookup) listKind(kind string) []*unstructured.Unstructured { return m[kind] }

// TestImageChainOnlyForImageKinds: other kinds have no chain (their page
// is as before); a policy read by no automation, in a cluster whose
// ImageUpdateAutomation and ImageRepository kinds are absent, is its own
// chain, its repository unreadable.
func TestImageChainOnlyForImageKinds(t *testing.T) {
	p := imageObject(t, &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "web"}}}, imagev1.ImagePolicyKind)
	l := mapLookup{imagev1.ImagePolicyKind: {p}}
	ks := &unstructured.Unstructured{}
	ks.SetKind("Kustomization")
	if c := imageChain(l, ks); c != nil {
		t.Errorf("a Kustomization's chain %+v", c)
	}
	c := imageChain(l, p)
	if c == nil || len(c.Automations) != 0 || len(c.Policies) != 1 {
		t.Fatalf("chain %+v", c)
	}
	if got := c.Policies[0]; got.Repository != nil || fmt.Sprint(got.RepositoryRef) != "{ ImageRepository apps web}" {
		t.Errorf("the policy's repository %+v (ref %+v)", got.Repository, got.RepositoryRef)
	}
}

// A policy's page shows, of an automation that reads many policies, only
// that policy and a count of the others (the page would otherwise grow as
// automations × policies); the automation's page lists them all.
func TestAPolicyPageListsOnlyItsPolicyOfEachAutomation(t *testing.T) {
	l := mapLookup{}
	for i := range 3 {
		l[imagev1.ImagePolicyKind] = append(l[imagev1.ImagePolicyKind], imageObject(t, &imagev1.ImagePolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprintf("p%d", i)},
			Spec:       imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "web"}}}, imagev1.ImagePolicyKind))
	}
	for _, name := range []string{"a1", "a2"} {
		l[imagev1.ImageUpdateAutomationKind] = append(l[imagev1.ImageUpdateAutomationKind], imageObject(t, &imagev1.ImageUpdateAutomation{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}, imagev1.ImageUpdateAutomationKind))
	}
	c := imageChain(l, l[imagev1.ImagePolicyKind][1])
	if c == nil || len(c.Automations) != 2 {
		t.Fatalf("chain %+v", c)
	}
	for _, a := range c.Automations {
		if len(a.Policies) != 1 || a.Policies[0].Summary.Name != "p1" || a.OtherPolicies != 2 {
			t.Errorf("automation %s on p1's page: %d policies, %d others", a.Summary.Name, len(a.Policies), a.OtherPolicies)
		}
	}
	c = imageChain(l, l[imagev1.ImageUpdateAutomationKind][0])
	if a := c.Automations[0]; len(a.Policies) != 3 || a.OtherPolicies != 0 {
		t.Errorf("the automation's page: %d policies, %d others", len(a.Policies), a.OtherPolicies)
	}
}

// imageObject is o, an object of image.toolkit.fluxcd.io/v1's kind, as
// the store holds it.
func imageObject(t *testing.T, o runtime.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(imagev1.GroupVersion.String())
	u.SetKind(kind)
	return u
}

package server

import (
	"context"
	"slices"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func ksEvent(ns, name, severity string, md map[string]string) *events.Event {
	return &events.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: ns, Name: name, APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
		Severity:       severity, Message: "msg", Metadata: md, ReportingController: "kustomize-controller",
	}
}

// TestMatch covers Alert selection rules on one set of objects: kind,
// name, `*` with matchLabels, namespace defaulting and explicit cross-
// namespace sources, severity, suspend, provider suspend and
// --no-cross-namespace-refs.
func TestMatch(t *testing.T) {
	s := fuzzScheme(t)
	if err := kustomizev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	src := func(kind, name, ns string, labels map[string]string) notificationv1.CrossNamespaceObjectReference {
		return notificationv1.CrossNamespaceObjectReference{Kind: kind, Name: name, Namespace: ns, MatchLabels: labels}
	}
	al := func(ns, name, provider, severity string, suspend bool, sources ...notificationv1.CrossNamespaceObjectReference) client.Object {
		return &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: notificationv1.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: provider}, EventSeverity: severity, Suspend: suspend, EventSources: sources}}
	}
	pr := func(ns, name string, suspend bool) client.Object {
		return &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: notificationv1.ProviderSpec{Type: "generic", Address: "http://127.0.0.1:1", Suspend: suspend}}
	}
	ks := func(ns, name string, labels map[string]string) client.Object {
		return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Minute}}}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		pr("a", "p", false), pr("a", "off", true), pr("b", "p", false),
		ks("a", "web", map[string]string{"team": "web"}), ks("a", "db", nil), ks("b", "web", map[string]string{"team": "web"}),
		al("a", "by-name", "p", "", false, src("Kustomization", "db", "", nil)),
		al("a", "by-label", "p", "", false, src("Kustomization", "*", "", map[string]string{"team": "web"})),
		al("a", "errors", "p", "error", false, src("Kustomization", "*", "", nil)),
		al("a", "suspended", "p", "", true, src("Kustomization", "*", "", nil)),
		al("a", "provider-off", "off", "", false, src("Kustomization", "*", "", nil)),
		al("a", "other-kind", "p", "", false, src("GitRepository", "*", "", nil)),
		al("a", "to-b", "p", "", false, src("Kustomization", "web", "b", nil)),
		al("b", "local", "p", "", false, src("Kustomization", "*", "", nil)),
	).Build()
	srv := NewEventServer(c, c, nil, 0, logr.Discard())
	names := func(ev *events.Event) []string {
		ts, err := srv.match(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tg := range ts {
			out = append(out, tg.alert.Namespace+"/"+tg.alert.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		ev      *events.Event
		noCross bool
		want    []string
	}{
		{ksEvent("a", "db", "info", nil), false, []string{"a/by-name"}},
		{ksEvent("a", "db", "error", nil), false, []string{"a/by-name", "a/errors"}},
		{ksEvent("a", "web", "info", nil), false, []string{"a/by-label"}},
		{ksEvent("b", "web", "info", nil), false, []string{"a/to-b", "b/local"}},
		{ksEvent("b", "web", "info", nil), true, []string{"b/local"}},
	} {
		srv.NoCrossNamespaceRefs = tc.noCross
		if got := names(tc.ev); !slices.Equal(got, tc.want) {
			t.Errorf("%s/%s %s (no-cross %v): alerts %v, want %v", tc.ev.InvolvedObject.Namespace, tc.ev.InvolvedObject.Name,
				tc.ev.Severity, tc.noCross, got, tc.want)
		}
	}
}

// TestRoutesAndMetadata: commit-status and pull-request routing by provider type and the
// precedence of presented metadata.
func TestRoutesAndMetadata(t *testing.T) {
	update := ksEvent("a", "x", "info", map[string]string{"kustomize.toolkit.fluxcd.io/commit_status": "update"})
	plain := ksEvent("a", "x", "info", nil)
	withCommit := ksEvent("a", "x", "info", map[string]string{"event.toolkit.fluxcd.io/commit": "abc"})
	failed := ksEvent("a", "x", "error", nil)
	onPR := ksEvent("a", "x", "info", map[string]string{"event.toolkit.fluxcd.io/change_request": "42"})
	for _, tc := range []struct {
		typ  string
		ev   *events.Event
		want bool
	}{
		{"slack", update, false}, {"slack", plain, true}, {"generic", update, true}, {"generic-hmac", update, true},
		{"github", update, true}, {"github", plain, false}, {"github", withCommit, true}, {"gitlab", failed, true},
		{"githubpullrequestcomment", onPR, true}, {"githubpullrequestcomment", failed, false}, {"githubpullrequestcomment", update, false},
		{"giteapullrequestcomment", onPR, true}, {"giteapullrequestcomment", plain, false}, {"gitlabmergerequestcomment", plain, false},
		{"githubdispatch", plain, true}, {"gitea", update, true}, {"azuredevops", plain, false},
	} {
		if got := routes(tc.typ, tc.ev); got != tc.want {
			t.Errorf("routes(%s, %v %v) = %v", tc.typ, tc.ev.Severity, tc.ev.Metadata, got)
		}
	}
	ev := ksEvent("a", "x", "info", map[string]string{
		"event.toolkit.fluxcd.io/env": "from-annotation", "event.toolkit.fluxcd.io/summary": "from-annotation",
		"kustomize.toolkit.fluxcd.io/revision": "main@sha1:1", "kustomize.toolkit.fluxcd.io/env": "from-emitter",
	})
	a := &notificationv1.Alert{Spec: notificationv1.AlertSpec{
		EventMetadata: map[string]string{"env": "from-alert", "region": "eu", "summary": "from-alert"}}}
	shown, conflicts := presented(ev, a)
	md := shown.Metadata
	want := map[string]string{"env": "from-emitter", "summary": "from-alert", "region": "eu", "revision": "main@sha1:1"}
	if len(md) != len(want) {
		t.Errorf("metadata %v, want %v", md, want)
	}
	for k, v := range want {
		if md[k] != v {
			t.Errorf("metadata[%s] = %q, want %q", k, md[k], v)
		}
	}
	wantConflicts := map[string]string{
		"env":     "involved object annotations, Alert object .spec.eventMetadata, involved object controller metadata",
		"summary": "involved object annotations, Alert object .spec.eventMetadata",
	}
	if len(conflicts) != len(wantConflicts) || conflicts["env"] != wantConflicts["env"] || conflicts["summary"] != wantConflicts["summary"] {
		t.Errorf("conflicts %v, want %v", conflicts, wantConflicts)
	}
	if _, c := presented(ksEvent("a", "x", "info", map[string]string{"kustomize.toolkit.fluxcd.io/revision": "r"}), a); c != nil {
		t.Errorf("conflicts %v for keys set once", c)
	}
	if ev.Metadata["kustomize.toolkit.fluxcd.io/env"] != "from-emitter" {
		t.Error("presented changed the original event")
	}
}

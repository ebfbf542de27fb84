package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	notificationv1beta3 "github.com/eddyops/eddy/api/notification/v1beta3"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// warningCollector keeps the apiserver's Warning headers (deprecations).
type warningCollector struct {
	mu   sync.Mutex
	text []string
}

func (w *warningCollector) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

func (w *warningCollector) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.text, "\n")
}

// rawSpec reads ns/name's spec as the apiserver serves it in apiVersion.
func rawSpec(t *testing.T, apiVersion, kind, ns, name string) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	spec, _ := u.Object["spec"].(map[string]any)
	return spec
}

// TestAlertAndProviderV1AndV1beta3: v1 is the storage version and v1beta3
// is still served (deprecated, no conversion webhook), as in Flux v2.10.
// Objects applied in either version read back in both and route events;
// applying v1beta3 draws the apiserver's deprecation warning; the fields v1
// dropped (Alert summary, Provider interval and proxy) are pruned when a
// v1beta3 object is stored, so they read back in neither version and the
// controller does not use them.
func TestAlertAndProviderV1AndV1beta3(t *testing.T) {
	ns := newNamespace(t)
	s := newSink(t, 0)
	warns := &warningCollector{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warns
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Applied as v1beta3, with the three fields v1 dropped. The proxy, if
	// used, would make the delivery fail (nothing listens there).
	oldP := &notificationv1beta3.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
		Spec: notificationv1beta3.ProviderSpec{Type: notificationv1beta3.GenericProvider, Address: s.URL,
			Interval: &metav1.Duration{Duration: 10 * time.Minute}, Proxy: "http://127.0.0.1:9/"}}
	oldA := &notificationv1beta3.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
		Spec: notificationv1beta3.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: "old"}, Summary: "from-summary",
			EventMetadata: map[string]string{"team": "apps"},
			EventSources:  []notificationv1.CrossNamespaceObjectReference{{Kind: "GitRepository", Name: "from-old"}}}}
	for _, o := range []client.Object{oldP, oldA} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating v1beta3 %s: %v", o.GetName(), err)
		}
	}
	for _, want := range []string{"v1beta3 Provider is deprecated, upgrade to v1", "v1beta3 Alert is deprecated, upgrade to v1"} {
		if !strings.Contains(warns.all(), want) {
			t.Errorf("apiserver warnings %q, want %q", warns.all(), want)
		}
	}
	// Measured on the local apiserver: with conversion strategy None the
	// object is stored as v1 and pruned by v1's schema, so the three fields
	// are gone in both versions (as with Flux v2.10's CRDs); the rest stays.
	for _, v := range []string{"v1", "v1beta3"} {
		a := rawSpec(t, "notification.toolkit.fluxcd.io/"+v, "Alert", ns, "old")
		if _, ok := a["summary"]; ok || a["eventMetadata"] == nil || a["eventSources"] == nil {
			t.Errorf("v1beta3 Alert read as %s: spec %v, want eventMetadata and eventSources, no summary", v, a)
		}
		p := rawSpec(t, "notification.toolkit.fluxcd.io/"+v, "Provider", ns, "old")
		_, interval := p["interval"]
		_, proxy := p["proxy"]
		if interval || proxy || p["address"] != s.URL {
			t.Errorf("v1beta3 Provider read as %s: spec %v, want the address, no interval or proxy", v, p)
		}
	}

	// Applied as v1, read back as v1beta3.
	newP := provider(ns, "new", notificationv1.GenericProvider, "", func(p *notificationv1.Provider) { p.Spec.Address = s.URL })
	newA := alert(ns, "new", "new", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "from-new"})
	create(t, newP, newA)
	asOld := &notificationv1beta3.Alert{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(newA), asOld); err != nil {
		t.Fatal(err)
	}
	if asOld.Spec.ProviderRef.Name != "new" || len(asOld.Spec.EventSources) != 1 || asOld.Spec.EventSeverity != "info" {
		t.Errorf("v1 Alert read as v1beta3: %+v", asOld.Spec)
	}
	asOldP := &notificationv1beta3.Provider{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(newP), asOldP); err != nil {
		t.Fatal(err)
	}
	if asOldP.Spec.Type != "generic" || asOldP.Spec.Address != s.URL {
		t.Errorf("v1 Provider read as v1beta3: %+v", asOldP.Spec)
	}

	// Both route.
	waitAlertsSynced(t, ns)
	for _, name := range []string{"from-old", "from-new"} {
		if code := postEvent(t, fluxEvent(ns, "GitRepository", name, "info", "stored artifact of "+name, nil)); code != http.StatusAccepted {
			t.Fatalf("event answered %d", code)
		}
		r := s.waitRequest(t, "the event of "+name, func(r sinkRequest) bool { return strings.Contains(string(r.Body), "stored artifact of "+name) })
		var ev eventJSON
		_ = json.Unmarshal(r.Body, &ev)
		if name == "from-old" && (ev.Metadata["team"] != "apps" || ev.Metadata["summary"] != "") {
			t.Errorf("metadata through the v1beta3 Alert %v, want team=apps and no summary (v1 has none)", ev.Metadata)
		}
	}
	eventServer.Wait()
	if w := warnings(t, ns, "old"); len(w) > 0 {
		t.Errorf("warnings on the Alert %q", w)
	}

	// The v1beta3 enum has no mastodon, v1's has.
	bad := &notificationv1beta3.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "toot"},
		Spec: notificationv1beta3.ProviderSpec{Type: notificationv1.MastodonProvider}}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.type") {
		t.Errorf("v1beta3 mastodon Provider: %v, want refused on spec.type", err)
	}
	create(t, provider(ns, "toot", notificationv1.MastodonProvider, ""))
}

// TestEventMetadataConflictWarning: an event whose metadata key is set by
// the involved object's annotation, the Alert's eventMetadata and the
// emitting controller is delivered with the highest source's value, and the
// Alert gets a Warning MetadataAppendFailed with Flux's message.
func TestEventMetadataConflictWarning(t *testing.T) {
	ns := newNamespace(t)
	s := newSink(t, 0)
	a := alert(ns, "conflicts", "sink", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"})
	a.Spec.EventMetadata = map[string]string{"env": "from-alert", "team": "from-alert"}
	create(t, provider(ns, "sink", notificationv1.GenericProvider, "", func(p *notificationv1.Provider) { p.Spec.Address = s.URL }), a)
	waitAlertsSynced(t, ns)
	postEvent(t, fluxEvent(ns, "GitRepository", "app", "info", "stored artifact", map[string]string{
		"event.toolkit.fluxcd.io/env": "from-annotation", "source.toolkit.fluxcd.io/env": "from-controller",
		"source.toolkit.fluxcd.io/revision": "main@sha1:1"}))
	r := s.waitRequest(t, "the event", func(r sinkRequest) bool { return strings.Contains(string(r.Body), "stored artifact") })
	var ev eventJSON
	_ = json.Unmarshal(r.Body, &ev)
	if ev.Metadata["env"] != "from-controller" || ev.Metadata["team"] != "from-alert" || ev.Metadata["revision"] != "main@sha1:1" {
		t.Errorf("metadata %v: want env from the controller, team from the Alert", ev.Metadata)
	}
	msg := waitKubeEvent(t, ns, "conflicts", corev1.EventTypeWarning, notificationv1.MetadataAppendFailedReason)
	if msg != server.MetadataConflictMessage {
		t.Errorf("warning %q, want %q", msg, server.MetadataConflictMessage)
	}
}

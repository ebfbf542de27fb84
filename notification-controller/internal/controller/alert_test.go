package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func configMap(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {k: v}\n", name, ns)
}

// slackKeys, slackAttachmentKeys and slackFieldKeys are exactly the keys
// of Flux's Slack payload (contract §6.3, Flux's notifier/slack.go).
var (
	slackKeys           = []string{"attachments", "channel", "icon_emoji", "icon_url", "username"}
	slackAttachmentKeys = []string{"author_name", "color", "fallback", "fields", "mrkdwn_in", "text"}
	slackFieldKeys      = []string{"short", "title", "value"}
)

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSlackFailingKustomizationOnce: a Kustomization that fails on every
// retry produces exactly one Slack payload, in Flux's attachment format;
// the repeats within the rate-limit interval are answered 429.
func TestSlackFailingKustomizationOnce(t *testing.T) {
	ns := newNamespace(t)
	slack := newSink(t, 0)
	r := newRepo(t, map[string]string{"apps/cm.yaml": configMap(ns, "cm")})
	head, _ := r.Git("rev-parse", "HEAD")
	src := gitRepository(ns, "platform", r)
	create(t,
		secret(ns, "slack-url", map[string]string{"address": slack.URL + "/services/T000/B000/XXXX"}),
		provider(ns, "slack", notificationv1.SlackProvider, "slack-url", func(p *notificationv1.Provider) { p.Spec.Channel = "general" }),
		alert(ns, "on-call", "slack", notificationv1.SeverityError, ksSource("broken")),
		src)
	waitFor(t, src, "artifact", func() bool { return src.Status.Artifact != nil })
	before429 := eventStats.get(http.StatusTooManyRequests)
	k := kustomization(ns, "broken", "platform", "./does-not-exist", func(k *kustomizev1.Kustomization) {
		k.Spec.RetryInterval = &metav1.Duration{Duration: 500 * time.Millisecond}
	})
	create(t, k)

	got := slack.waitRequest(t, "a Slack payload", func(sinkRequest) bool { return true })
	// The Kustomization keeps failing; its repeated events are refused.
	deadline := time.Now().Add(60 * time.Second)
	for eventStats.get(http.StatusTooManyRequests) < before429+2 {
		if time.Now().After(deadline) {
			t.Fatalf("no repeated events refused with 429 in 60s (warnings: %q)", kubeEvents(t, ns, "broken", ""))
		}
		time.Sleep(100 * time.Millisecond)
	}
	eventServer.Wait() // the deliveries of the events answered so far are done
	if n := len(slack.requests()); n != 1 {
		t.Fatalf("Slack received %d payloads, want exactly 1", n)
	}
	if got.Path != "/services/T000/B000/XXXX" || !strings.HasPrefix(got.Header.Get("Content-Type"), "application/json") || got.Header.Get("Authorization") != "" {
		t.Errorf("request path %q, Content-Type %q, Authorization %q", got.Path, got.Header.Get("Content-Type"), got.Header.Get("Authorization"))
	}

	var msg map[string]any
	if err := json.Unmarshal(got.Body, &msg); err != nil {
		t.Fatalf("payload is not JSON: %v: %s", err, got.Body)
	}
	if keys := sortedKeys(msg); !slices.Equal(keys, slackKeys) {
		t.Errorf("top-level keys %v, want %v: %s", keys, slackKeys, got.Body)
	}
	if msg["channel"] != "general" || msg["username"] != "kustomize-controller" {
		t.Errorf("channel %v, username %v; want general, kustomize-controller", msg["channel"], msg["username"])
	}
	atts, _ := msg["attachments"].([]any)
	if len(atts) != 1 {
		t.Fatalf("attachments %v, want exactly one", msg["attachments"])
	}
	att := atts[0].(map[string]any)
	if keys := sortedKeys(att); !slices.Equal(keys, slackAttachmentKeys) {
		t.Errorf("attachment keys %v, want %v: %s", keys, slackAttachmentKeys, got.Body)
	}
	author := "kustomization/broken." + ns
	warnings := kubeEvents(t, ns, "broken", "")
	text, _ := att["text"].(string)
	if att["color"] != "danger" || att["author_name"] != author || !slices.Contains(warnings, text) ||
		!strings.Contains(text, "does-not-exist") || att["fallback"] != author+": "+strings.SplitN(text, "\n", 2)[0] {
		t.Errorf("attachment color %v, author_name %v, text %q, fallback %v; want danger, %s, one of the Kustomization's events %q",
			att["color"], att["author_name"], text, att["fallback"], author, warnings)
	}
	if md, _ := att["mrkdwn_in"].([]any); len(md) != 1 || md[0] != "text" {
		t.Errorf("mrkdwn_in %v, want [text]", att["mrkdwn_in"])
	}
	fields, _ := att["fields"].([]any)
	want := map[string]any{"title": "revision", "value": "main@sha1:" + head, "short": false}
	found := false
	for _, f := range fields {
		fm := f.(map[string]any)
		if keys := sortedKeys(fm); !slices.Equal(keys, slackFieldKeys) {
			t.Errorf("field keys %v, want %v", keys, slackFieldKeys)
		}
		if fm["title"] == want["title"] {
			found = fm["value"] == want["value"] && fm["short"] == false
		}
	}
	if !found {
		t.Errorf("fields %v, want %v", fields, want)
	}
}

// TestSeverityAndExclusion: info events reach an info Alert and not an
// error one; an exclusionList drops matching messages only; generic
// providers get the event JSON with metadata keys un-prefixed and the
// gotk-component header.
func TestSeverityAndExclusion(t *testing.T) {
	ns := newNamespace(t)
	infoSink, errSink, exclSink := newSink(t, 0), newSink(t, 0), newSink(t, 0)
	r := newRepo(t, map[string]string{"apps/cm.yaml": configMap(ns, "cm")})
	head, _ := r.Git("rev-parse", "HEAD")
	rev := "main@sha1:" + head
	generic := func(name, addr string) *notificationv1.Provider {
		return provider(ns, name, notificationv1.GenericProvider, "", func(p *notificationv1.Provider) { p.Spec.Address = addr })
	}
	excl := alert(ns, "quiet", "excl", notificationv1.SeverityInfo, ksSource("apps"))
	excl.Spec.ExclusionList = []string{"^Reconciliation finished"}
	info := alert(ns, "info", "info", "", ksSource("*"))
	info.Spec.EventMetadata = map[string]string{"env": "staging"}
	create(t, generic("info", infoSink.URL), generic("err", errSink.URL), generic("excl", exclSink.URL),
		info, alert(ns, "errors", "err", notificationv1.SeverityError, ksSource("apps")), excl,
		gitRepository(ns, "platform", r), kustomization(ns, "apps", "platform", "./apps"))

	finished := infoSink.waitRequest(t, "Reconciliation finished", func(r sinkRequest) bool {
		return strings.Contains(string(r.Body), "Reconciliation finished")
	})
	var ev eventJSON
	if err := json.Unmarshal(finished.Body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Severity != "info" || ev.Reason != kustomizev1.ReconciliationSucceededReason || ev.InvolvedObject.Kind != "Kustomization" ||
		ev.InvolvedObject.Name != "apps" || ev.InvolvedObject.Namespace != ns || ev.ReportingController != "kustomize-controller" {
		t.Errorf("event %+v", ev)
	}
	if ev.Metadata["revision"] != rev || ev.Metadata["commit_status"] != "update" || ev.Metadata["env"] != "staging" {
		t.Errorf("metadata %v, want revision %s, commit_status update, env staging (prefixes stripped)", ev.Metadata, rev)
	}
	if finished.Header.Get("gotk-component") != "kustomize-controller" {
		t.Errorf("gotk-component header %q", finished.Header.Get("gotk-component"))
	}
	changeSet := "ConfigMap/" + ns + "/cm created"
	exclSink.waitRequest(t, "the change-set event", func(r sinkRequest) bool { return strings.Contains(string(r.Body), changeSet) })

	// Barrier: an error event reaches both the error and the exclusion Alert;
	// by then any wrongly routed info event would have arrived too.
	barrier := fmt.Sprintf("health check failed for %s (barrier)", ns)
	if code := postEvent(t, fluxEvent(ns, "Kustomization", "apps", "error", barrier,
		map[string]string{"kustomize.toolkit.fluxcd.io/revision": rev})); code != http.StatusAccepted {
		t.Fatalf("barrier event answered %d", code)
	}
	for _, s := range []*sink{errSink, exclSink} {
		s.waitRequest(t, "the barrier error event", func(r sinkRequest) bool { return strings.Contains(string(r.Body), barrier) })
	}
	for _, e := range errSink.events(t) {
		if e.Severity != "error" {
			t.Errorf("the error Alert got an %s event: %q", e.Severity, e.Message)
		}
	}
	for _, e := range exclSink.events(t) {
		if strings.HasPrefix(e.Message, "Reconciliation finished") {
			t.Errorf("the exclusionList did not drop %q", e.Message)
		}
	}
}

// fluxEvent is the JSON that Flux's runtime recorder POSTs.
func fluxEvent(ns, kind, name, severity, msg string, metadata map[string]string) map[string]any {
	apiVersion := map[string]string{"Kustomization": kustomizev1.GroupVersion.String(), "GitRepository": sourcev1.GroupVersion.String()}[kind]
	controller := map[string]string{"Kustomization": "kustomize-controller", "GitRepository": "source-controller"}[kind]
	return map[string]any{
		"involvedObject": map[string]string{"kind": kind, "namespace": ns, "name": name, "apiVersion": apiVersion,
			"uid": "3b9e2c4e-0000-4000-8000-000000000001", "resourceVersion": "1"},
		"severity": severity, "timestamp": time.Now().UTC().Format(time.RFC3339), "message": msg,
		"reason": "Progressing", "metadata": metadata, "reportingController": controller, "reportingInstance": controller + "-0",
	}
}

// TestGenericHMACSignature: generic-hmac signs the exact body with the
// token; secret headers are sent; metadata is cleaned up; a repeat is 429.
func TestGenericHMACSignature(t *testing.T) {
	ns := newNamespace(t)
	s := newSink(t, 0)
	token := "hmac-token-" + ns
	create(t,
		secret(ns, "hmac", map[string]string{"token": token, "address": s.URL + "/hook", "headers": "X-Team: platform\nX-Env: prod\n"}),
		provider(ns, "signed", notificationv1.GenericHMACProvider, "hmac"),
		alert(ns, "all", "signed", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "podinfo"}))
	waitAlertsSynced(t, ns)
	rev := "main@sha1:0123456789abcdef0123456789abcdef01234567"
	ev := fluxEvent(ns, "GitRepository", "podinfo", "info", "stored artifact for commit 'Update podinfo'", map[string]string{
		"source.toolkit.fluxcd.io/revision": rev, "source.toolkit.fluxcd.io/checksum": "abc",
		"source.toolkit.fluxcd.io/token": "t1", "event.toolkit.fluxcd.io/cluster": "prod-eu", "other.example.com/x": "dropped",
	})
	if code := postEvent(t, ev); code != http.StatusAccepted {
		t.Fatalf("event answered %d, want 202", code)
	}
	got := s.waitRequest(t, "the signed event", func(sinkRequest) bool { return true })
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(got.Body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); got.Header.Get("X-Signature") != want {
		t.Errorf("X-Signature %q, want %q", got.Header.Get("X-Signature"), want)
	}
	if got.Header.Get("X-Team") != "platform" || got.Header.Get("X-Env") != "prod" || got.Header.Get("gotk-component") != "source-controller" {
		t.Errorf("headers %v", got.Header)
	}
	var e eventJSON
	if err := json.Unmarshal(got.Body, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Metadata) != 2 || e.Metadata["revision"] != rev || e.Metadata["cluster"] != "prod-eu" {
		t.Errorf("metadata %v, want only revision and cluster", e.Metadata)
	}
	if code := postEvent(t, ev); code != http.StatusTooManyRequests {
		t.Errorf("repeat answered %d, want 429", code)
	}
	ev["metadata"].(map[string]string)["source.toolkit.fluxcd.io/token"] = "t2"
	if code := postEvent(t, ev); code != http.StatusAccepted {
		t.Errorf("same message with a new token answered %d, want 202", code)
	}
}

// TestProviderFailureRetriedAndReported: a provider answering 500 is tried
// 1+Max times, then the failure is a Warning event on its Alert that does
// not reveal the secret address; another Alert still delivers.
func TestProviderFailureRetriedAndReported(t *testing.T) {
	ns := newNamespace(t)
	broken, ok := newSink(t, http.StatusInternalServerError), newSink(t, 0)
	create(t,
		secret(ns, "broken-url", map[string]string{"address": broken.URL + "/secret-path-6b1d"}),
		provider(ns, "broken", notificationv1.GenericProvider, "broken-url"),
		provider(ns, "ok", notificationv1.GenericProvider, "", func(p *notificationv1.Provider) { p.Spec.Address = ok.URL }),
		alert(ns, "to-broken", "broken", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"}),
		alert(ns, "to-ok", "ok", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"}))
	waitAlertsSynced(t, ns)
	if code := postEvent(t, fluxEvent(ns, "GitRepository", "app", "error", "failed to checkout and determine revision", nil)); code != http.StatusAccepted {
		t.Fatalf("event answered %d", code)
	}
	ok.waitRequest(t, "the event", func(sinkRequest) bool { return true })
	var warnings []string
	deadline := time.Now().Add(60 * time.Second)
	for len(warnings) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no %s event on the Alert in 60s", server.DispatchFailedReason)
		}
		time.Sleep(100 * time.Millisecond)
		warnings = kubeEvents(t, ns, "to-broken", server.DispatchFailedReason)
	}
	if n := len(broken.requests()); n != 1+testRetry.Max {
		t.Errorf("the failing provider got %d requests, want %d (1 + %d retries)", n, 1+testRetry.Max, testRetry.Max)
	}
	w := warnings[0]
	if !strings.Contains(w, "answered 500") || !strings.Contains(w, "GitRepository/"+ns+"/app") ||
		strings.Contains(w, "secret-path") || strings.Contains(w, strings.TrimPrefix(broken.URL, "http://")) {
		t.Errorf("warning %q: want the status and object, and no address", w)
	}
	if evs := kubeEvents(t, ns, "to-ok", ""); len(evs) != 0 {
		t.Errorf("the working Alert has events %q", evs)
	}
}

// TestInvalidRegexpReportedOnAlert: an Alert with an invalid regexp gets a
// Warning event; the event server keeps serving other Alerts.
func TestInvalidRegexpReportedOnAlert(t *testing.T) {
	ns := newNamespace(t)
	s := newSink(t, 0)
	bad := alert(ns, "bad", "ok", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"})
	bad.Spec.InclusionList = []string{"(unclosed"}
	create(t, provider(ns, "ok", notificationv1.GenericProvider, "", func(p *notificationv1.Provider) { p.Spec.Address = s.URL }),
		bad, alert(ns, "good", "ok", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"}))
	waitAlertsSynced(t, ns)
	deadline := time.Now().Add(30 * time.Second)
	for len(kubeEvents(t, ns, "bad", server.InvalidConfigReason)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no InvalidConfig event on the Alert")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w := kubeEvents(t, ns, "bad", server.InvalidConfigReason)[0]; !strings.Contains(w, "inclusionList") || !strings.Contains(w, "(unclosed") {
		t.Errorf("warning %q", w)
	}
	if code := postEvent(t, fluxEvent(ns, "GitRepository", "app", "info", "stored artifact", nil)); code != http.StatusAccepted {
		t.Fatalf("event answered %d", code)
	}
	s.waitRequest(t, "the event through the good Alert", func(sinkRequest) bool { return true })
	eventServer.Wait() // a delivery through the bad Alert would be done too
	if n := len(s.requests()); n != 1 {
		t.Errorf("the provider got %d events, want 1 (only the valid Alert)", n)
	}
}

// TestGitHubCommitStatusFromKustomization: a github Provider whose address
// is a repository on a local server gets a commit status for the applied
// commit from "Reconciliation finished", and nothing for the change set.
func TestGitHubCommitStatusFromKustomization(t *testing.T) {
	ns := newNamespace(t)
	api := newSink(t, http.StatusCreated)
	r := newRepo(t, map[string]string{"apps/cm.yaml": configMap(ns, "cm")})
	head, _ := r.Git("rev-parse", "HEAD")
	p := provider(ns, "github", notificationv1.GitHubProvider, "gh", func(p *notificationv1.Provider) { p.Spec.Address = api.URL + "/acme/platform" })
	create(t, secret(ns, "gh", map[string]string{"token": "ghp_" + ns}), p, alert(ns, "status", "github", "", ksSource("apps")),
		gitRepository(ns, "platform", r), kustomization(ns, "apps", "platform", "./apps"))
	got := api.waitRequest(t, "a commit status", func(sinkRequest) bool { return true })
	uid := strings.SplitN(string(p.UID), "-", 2)[0]
	var status map[string]string
	if err := json.Unmarshal(got.Body, &status); err != nil {
		t.Fatal(err)
	}
	if got.Path != "/api/v3/repos/acme/platform/statuses/"+head || got.Header.Get("Authorization") != "Bearer ghp_"+ns ||
		status["state"] != "success" || status["context"] != "kustomization/apps/"+uid || status["description"] != "reconciliation succeeded" {
		t.Errorf("commit status %s %s (auth %q)", got.Path, got.Body, got.Header.Get("Authorization"))
	}
	// The change set (Progressing) is posted too: once the event server has
	// answered it and its deliveries are done, a commit status for it would
	// have arrived.
	deadline := time.Now().Add(30 * time.Second)
	for eventStats.servedCount(ns, "apps", "Progressing") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the change-set event did not reach the event server")
		}
		time.Sleep(50 * time.Millisecond)
	}
	eventServer.Wait()
	if n := len(api.requests()); n != 1 {
		t.Errorf("the GitHub API got %d requests, want 1 (change-set events are not commit statuses)", n)
	}
}

// waitKubeEvent waits for a Kubernetes Event of type typ and reason about
// name in ns and returns its message.
func waitKubeEvent(t *testing.T, ns, name, typ, reason string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list := &corev1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Type == typ && e.Reason == reason {
				return e.Message
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s %s event on %s/%s in 30s (events: %q)", typ, reason, ns, name, kubeEvents(t, ns, name, ""))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// warnings returns the Warning events about name in ns.
func warnings(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// TestAlertWaitsForItsProvider: an Alert applied a moment before its
// Provider (kustomize-controller applies kind Alert before kind Provider in
// one set) is waiting, not failing: a Normal
// DependencyNotReady event, no Warning, and it delivers once the Provider
// exists.
func TestAlertWaitsForItsProvider(t *testing.T) {
	ns := newNamespace(t)
	s := newSink(t, 0)
	create(t, alert(ns, "on-call", "slack", notificationv1.SeverityError, ksSource("apps")))
	if msg := waitKubeEvent(t, ns, "on-call", corev1.EventTypeNormal, meta.DependencyNotReadyReason); msg != "provider slack not found, retrying" {
		t.Errorf("waiting event %q", msg)
	}
	// An event while the Provider is still missing is dropped, logged, and
	// no Warning either.
	postEvent(t, fluxEvent(ns, "Kustomization", "apps", "error", "apply failed before the provider", nil))
	create(t, secret(ns, "slack-url", map[string]string{"address": s.URL + "/services/T/B/X"}),
		provider(ns, "slack", notificationv1.SlackProvider, "slack-url"))
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; len(s.requests()) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("the Alert delivered nothing in 30s after its Provider appeared")
		}
		postEvent(t, fluxEvent(ns, "Kustomization", "apps", "error", fmt.Sprintf("apply failed %d", i), nil))
		time.Sleep(100 * time.Millisecond)
	}
	if w := warnings(t, ns, "on-call"); len(w) != 0 {
		t.Errorf("Warning events on an Alert that waited for its Provider: %q", w)
	}
}

// TestAlertCheckedWhenItsProviderAppears: the Alert reconciler watches
// Providers, so an Alert that waited for its Provider is checked again as
// soon as the Provider appears, here reporting its type that Eddy does not
// implement (admitted by a newer CRD), long before the waiting Alert's
// requeue (1m).
func TestAlertCheckedWhenItsProviderAppears(t *testing.T) {
	ns := newNamespace(t)
	create(t, alert(ns, "to-later", "later", "", ksSource("apps")))
	waitKubeEvent(t, ns, "to-later", corev1.EventTypeNormal, meta.DependencyNotReadyReason)
	createFutureProvider(t, provider(ns, "later", "", ""))
	if msg := waitKubeEvent(t, ns, "to-later", corev1.EventTypeWarning, server.InvalidConfigReason); msg != "provider later: type "+futureType+" is not supported by Eddy" {
		t.Errorf("warning %q", msg)
	}
}

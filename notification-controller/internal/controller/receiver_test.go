package controller

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func receiver(ns, name, typ, secretName string, resources ...notificationv1.CrossNamespaceObjectReference) *notificationv1.Receiver {
	r := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       notificationv1.ReceiverSpec{Type: typ, SecretRef: &meta.LocalObjectReference{Name: secretName}},
	}
	for _, res := range resources {
		r.Spec.Resources = append(r.Spec.Resources, notificationv1.ReceiverResource{CrossNamespaceObjectReference: res})
	}
	return r
}

// waitReceiverReady waits for Ready=True and returns the webhook path.
func waitReceiverReady(t *testing.T, r *notificationv1.Receiver, token string) string {
	t.Helper()
	want := webhook.Path(token, r.Name, r.Namespace)
	waitFor(t, r, "Ready", func() bool {
		c := apimeta.FindStatusCondition(r.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && r.Status.ObservedGeneration == r.Generation
	})
	c := apimeta.FindStatusCondition(r.Status.Conditions, meta.ReadyCondition)
	if r.Status.WebhookPath != want || c.Reason != meta.SucceededReason || c.Message != "Receiver initialized for path: "+want {
		t.Fatalf("status path %q, Ready %s %q; want path %s", r.Status.WebhookPath, c.Reason, c.Message, want)
	}
	// The server finds receivers through its cache: wait until it knows the path.
	deadline := time.Now().Add(30 * time.Second)
	for probe(t, want) == http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver server does not know %s after 30s", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return want
}

// probe sends a request without credentials: refused (400) by verifying
// receiver types; on a generic receiver it requests the reconciles, which
// the tests using generic receivers allow.
func probe(t *testing.T, path string) int {
	return post(t, path, []byte("{}"), map[string]string{"X-Probe": "1"})
}

func post(t *testing.T, path string, body []byte, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, receiverURL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func requestedAt(t *testing.T, obj client.Object) string {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
}

// TestGitHubReceiver: a signed GitHub push on the receiver path requests a
// reconcile that source-controller handles and that fetches the pushed
// commit; a wrong signature, an unknown path and an event type not in
// spec.events patch nothing; a ping requests a reconcile.
func TestGitHubReceiver(t *testing.T) {
	ns := newNamespace(t)
	repo := newRepo(t, map[string]string{"apps/cm.yaml": configMap(ns, "cm")})
	before, _ := repo.Git("rev-parse", "HEAD")
	src := gitRepository(ns, "platform", repo)
	token := "gh-secret-" + ns
	rcv := receiver(ns, "github", notificationv1.GitHubReceiver, "gh-token",
		notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "platform"})
	rcv.Spec.Events = []string{"ping", "push"}
	create(t, src, secret(ns, "gh-token", map[string]string{"token": token}), rcv)
	waitFor(t, src, "artifact", func() bool { return src.Status.Artifact != nil })
	path := waitReceiverReady(t, rcv, token)

	after, err := repo.Commit(map[string]string{"apps/cm2.yaml": configMap(ns, "cm2")}, "add cm2")
	if err != nil {
		t.Fatal(err)
	}
	payload, err := webhook.GitHubPush("refs/heads/main", before, after, "acme/platform", gitSrv.URL+"/"+repo.Name,
		webhook.Commit{ID: after, Message: "add cm2", Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	gh := func(event, sig string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			"X-Hub-Signature-256": sig, "User-Agent": "GitHub-Hookshot/044aadd"}
	}

	if code := post(t, path, payload, gh("push", webhook.GitHubSignature(payload, "not-the-token"))); code != http.StatusBadRequest {
		t.Errorf("wrong signature answered %d, want 400", code)
	}
	if code := post(t, path, payload, gh("push", "")); code != http.StatusBadRequest {
		t.Errorf("no signature answered %d, want 400", code)
	}
	if code := post(t, "/hook/"+strings.Repeat("0", 64), payload, gh("push", webhook.GitHubSignature(payload, token))); code != http.StatusNotFound {
		t.Errorf("unknown path answered %d, want 404", code)
	}
	if code := post(t, path, payload, gh("issues", webhook.GitHubSignature(payload, token))); code != http.StatusBadRequest {
		t.Errorf("an event type outside spec.events answered %d, want 400", code)
	}
	// Each refusal above was answered after the handler finished: nothing was patched.
	if v := requestedAt(t, src); v != "" {
		t.Fatalf("refused webhooks patched %s=%q", meta.ReconcileRequestAnnotation, v)
	}
	// Flux compatible: a ping (sent when the webhook is created) is an event
	// like the others, and requests a reconcile.
	ping := []byte(`{"zen":"Keep it logically awesome.","hook_id":1,"hook":{"type":"Repository","events":["push"]}}`)
	if code := post(t, path, ping, gh("ping", webhook.GitHubSignature(ping, token))); code != http.StatusOK {
		t.Errorf("ping answered %d, want 200", code)
	}
	pinged := requestedAt(t, src)
	if pinged == "" {
		t.Error("the ping did not annotate the GitRepository")
	}

	if code := post(t, path, payload, gh("push", webhook.GitHubSignature(payload, token))); code != http.StatusOK {
		t.Fatalf("signed push answered %d, want 200", code)
	}
	v := requestedAt(t, src)
	if v == "" || v == pinged {
		t.Fatal("the push did not annotate the GitRepository")
	}
	waitFor(t, src, "lastHandledReconcileAt "+v, func() bool { return src.Status.LastHandledReconcileAt == v })
	waitFor(t, src, "artifact of the pushed commit", func() bool { return src.Status.Artifact.Revision == "main@sha1:"+after })
}

// TestReceiverTypes: gitlab (X-Gitlab-Token), generic-hmac (X-Signature)
// and generic receivers; Kustomizations with an explicit apiVersion and
// `*` with matchLabels; suspended and token-less receivers.
func TestReceiverTypes(t *testing.T) {
	ns := newNamespace(t)
	repo := newRepo(t, map[string]string{"apps/cm.yaml": configMap(ns, "cm")})
	label := func(k *kustomizev1.Kustomization) { k.Labels = map[string]string{"team": "web"} }
	ks1, ks2, other := kustomization(ns, "web-1", "platform", "./apps", label), kustomization(ns, "web-2", "platform", "./apps", label),
		kustomization(ns, "other", "platform", "./apps")
	create(t, gitRepository(ns, "platform", repo), ks1, ks2, other, secret(ns, "tok", map[string]string{"token": "tok-" + ns}))
	ksRef := notificationv1.CrossNamespaceObjectReference{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind,
		Name: "*", MatchLabels: map[string]string{"team": "web"}}

	t.Run("gitlab", func(t *testing.T) {
		r := receiver(ns, "gitlab", notificationv1.GitLabReceiver, "tok", ksRef)
		r.Spec.Events = []string{"Push Hook"}
		create(t, r)
		path := waitReceiverReady(t, r, "tok-"+ns)
		body := []byte(`{"object_kind":"push","ref":"refs/heads/main","checkout_sha":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7"}`)
		if code := post(t, path, body, map[string]string{"X-Gitlab-Token": "wrong", "X-Gitlab-Event": "Push Hook"}); code != http.StatusBadRequest {
			t.Errorf("wrong token answered %d, want 400", code)
		}
		if v := requestedAt(t, ks1); v != "" {
			t.Fatalf("a refused webhook annotated web-1: %q", v)
		}
		if code := post(t, path, body, map[string]string{"X-Gitlab-Token": "tok-" + ns, "X-Gitlab-Event": "push hook"}); code != http.StatusOK {
			t.Fatalf("valid webhook answered %d, want 200", code)
		}
		if requestedAt(t, ks1) == "" || requestedAt(t, ks2) == "" {
			t.Error("matchLabels resources not annotated")
		}
		if v := requestedAt(t, other); v != "" {
			t.Errorf("a Kustomization without the label was annotated: %q", v)
		}
	})

	t.Run("generic-hmac", func(t *testing.T) {
		r := receiver(ns, "hmac", notificationv1.GenericHMACReceiver, "tok",
			notificationv1.CrossNamespaceObjectReference{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind, Name: "other"})
		create(t, r)
		path := waitReceiverReady(t, r, "tok-"+ns)
		body := []byte(`{"image":"ghcr.io/acme/app:1.2.3"}`)
		mac := hmac.New(sha256.New, []byte("tok-"+ns))
		mac.Write(body)
		sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		if code := post(t, path, append(body, ' '), map[string]string{"X-Signature": sig}); code != http.StatusBadRequest {
			t.Errorf("a body that does not match the signature answered %d, want 400", code)
		}
		if code := post(t, path, body, map[string]string{"X-Signature": sig}); code != http.StatusOK {
			t.Fatalf("signed webhook answered %d, want 200", code)
		}
		v := requestedAt(t, other)
		if v == "" {
			t.Fatal("not annotated")
		}
		waitFor(t, other, "lastHandledReconcileAt", func() bool { return other.Status.LastHandledReconcileAt == v })
	})

	t.Run("kustomization without apiVersion", func(t *testing.T) {
		r := receiver(ns, "no-version", notificationv1.GenericReceiver, "tok",
			notificationv1.CrossNamespaceObjectReference{Kind: kustomizev1.KustomizationKind, Name: "other"})
		create(t, r)
		path := waitReceiverReady(t, r, "tok-"+ns)
		if code := post(t, path, nil, nil); code != http.StatusInternalServerError {
			t.Errorf("answered %d, want 500 (Kustomization needs an explicit apiVersion)", code)
		}
	})

	t.Run("suspended", func(t *testing.T) {
		r := receiver(ns, "suspended", notificationv1.GenericReceiver, "tok",
			notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "platform"})
		create(t, r)
		path := waitReceiverReady(t, r, "tok-"+ns)
		patch := client.MergeFrom(r.DeepCopy())
		r.Spec.Suspend = true
		if err := env.Client.Patch(context.Background(), r, patch); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for post(t, path, nil, nil) != http.StatusServiceUnavailable {
			if time.Now().After(deadline) {
				t.Fatal("a suspended receiver is not answered 503")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("token not found", func(t *testing.T) {
		r := receiver(ns, "no-secret", notificationv1.GenericReceiver, "missing",
			notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "platform"})
		create(t, r)
		waitFor(t, r, "Ready=False TokenNotFound", func() bool {
			c := apimeta.FindStatusCondition(r.Status.Conditions, meta.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == notificationv1.TokenNotFoundReason
		})
		if r.Status.WebhookPath != "" {
			t.Errorf("webhookPath %q without a token", r.Status.WebhookPath)
		}
	})
}

// TestUnsupportedTypesReported: a Provider type that Eddy does not
// implement (admitted by a newer CRD) is reported, not silently ignored:
// an Alert whose Provider has such a type gets an InvalidConfig event.
func TestUnsupportedTypesReported(t *testing.T) {
	ns := newNamespace(t)
	create(t, secret(ns, "tok", map[string]string{"token": "x"}))
	createFutureProvider(t, provider(ns, "eh", "", "tok"))
	create(t, alert(ns, "eh", "eh", "", ksSource("apps")))
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs := kubeEvents(t, ns, "eh", "InvalidConfig")
		if len(evs) > 0 {
			if evs[0] != "provider eh: type "+futureType+" is not supported by Eddy" {
				t.Errorf("event %q", evs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no InvalidConfig event on the Alert")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReceiverReadyOnceSecretExists: a Receiver created before its token
// Secret (apply order, SOPS, external-secrets) is Ready=False
// TokenNotFound, then Ready with its path once the Secret appears, long
// before its 1h interval.
func TestReceiverReadyOnceSecretExists(t *testing.T) {
	ns := newNamespace(t)
	rcv := receiver(ns, "late", notificationv1.GenericReceiver, "late-token",
		notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "missing"})
	rcv.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	create(t, rcv)
	waitFor(t, rcv, "Ready=False TokenNotFound", func() bool {
		c := apimeta.FindStatusCondition(rcv.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == notificationv1.TokenNotFoundReason
	})
	// Flux's wording, with the API server's kind and name.
	if c := apimeta.FindStatusCondition(rcv.Status.Conditions, meta.ReadyCondition); c.Message !=
		"unable to read token from secret '"+ns+"/late-token' error: secrets \"late-token\" not found" {
		t.Errorf("message %q", c.Message)
	}
	tok := "late-" + ns
	create(t, secret(ns, "late-token", map[string]string{"token": tok}))
	path := waitReceiverReady(t, rcv, tok)
	// The path is served: the missing GitRepository makes it a 500, not a 404.
	if code := post(t, path, []byte("{}"), nil); code != http.StatusInternalServerError {
		t.Errorf("the new receiver's path answered %d, want 500 (its resource does not exist)", code)
	}
	// No check of Warning events here: the Receiver reconciler records no
	// events at all (it has no recorder), so such a check could not fail.
}

// TestSuspendedReceiverObservesGeneration: suspending a Ready Receiver
// records its new generation, so kstatus and kubectl wait read it as
// Current, not in progress. Flux compatible.
func TestSuspendedReceiverObservesGeneration(t *testing.T) {
	ns := newNamespace(t)
	create(t, secret(ns, "susp-token", map[string]string{"token": "susp-" + ns}))
	rcv := receiver(ns, "susp", notificationv1.GenericReceiver, "susp-token",
		notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "missing"})
	create(t, rcv)
	waitReceiverReady(t, rcv, "susp-"+ns)
	patch := []byte(`{"spec":{"suspend":true}}`)
	if err := env.Client.Patch(context.Background(), rcv, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, rcv, "observedGeneration of the suspended Receiver", func() bool {
		return rcv.Spec.Suspend && rcv.Status.ObservedGeneration == rcv.Generation
	})
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rcv)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := status.Compute(&unstructured.Unstructured{Object: m}); err != nil || res.Status != status.CurrentStatus {
		t.Errorf("kstatus of the suspended Receiver: %+v %v", res, err)
	}
}

// TestReceiverTokenRotation: updating the token Secret of a Ready Receiver
// (interval 1h) moves status.webhookPath to the new token's path, which
// the server then serves while the old path answers 404; deleting the
// Secret makes the Receiver Ready=False TokenNotFound without a path.
func TestReceiverTokenRotation(t *testing.T) {
	ns := newNamespace(t)
	rcv := receiver(ns, "rot", notificationv1.GenericReceiver, "rot-token",
		notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "missing"})
	rcv.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	sec := secret(ns, "rot-token", map[string]string{"token": "old-" + ns})
	create(t, sec, rcv)
	oldPath := waitReceiverReady(t, rcv, "old-"+ns)

	sec.StringData = map[string]string{"token": "new-" + ns}
	if err := env.Client.Update(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	newPath := webhook.Path("new-"+ns, rcv.Name, rcv.Namespace)
	waitFor(t, rcv, "status.webhookPath of the new token", func() bool { return rcv.Status.WebhookPath == newPath })
	waitReceiverReady(t, rcv, "new-"+ns)
	deadline := time.Now().Add(30 * time.Second)
	for probe(t, oldPath) != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the old path is still served 30s after the new one")
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := env.Client.Delete(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, rcv, "Ready=False TokenNotFound without a path", func() bool {
		c := apimeta.FindStatusCondition(rcv.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == notificationv1.TokenNotFoundReason && rcv.Status.WebhookPath == ""
	})
}

package controller

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/notification-controller/webhook"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBinaryReceiverOnBootstrappedRepository runs the built
// notification-controller, its manager made by NewManager as the in-process
// one is, beside the built source- and kustomize-controller, on a real
// repository that carries CRDs (flux2-kustomize-helm-example with Eddy's
// CRDs where `flux bootstrap` writes Flux's components): the binary's
// Receiver turns a webhook into a fetch of the new commit, which
// kustomize-controller applies, CRDs included, to Ready.
func TestBinaryReceiverOnBootstrappedRepository(t *testing.T) {
	evPort, _ := testenv.FreePort()
	rcvPort, _ := testenv.FreePort()
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=binary", fmt.Sprintf("--events-addr=127.0.0.1:%d", evPort),
		fmt.Sprintf("--receiverAddr=127.0.0.1:%d", rcvPort), "--min-retry-delay=200ms", "--max-retry-delay=2s")

	ns := newNamespace(t)
	r := newRepo(t, nil)
	if _, err := testenv.BootstrappedRepo(testenv.TestdataDir(t), "flux2-kustomize-helm-example-v2.6", "production", r.Work); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(map[string]string{}, "bootstrap"); err != nil {
		t.Fatal(err)
	}
	token := "binary-" + ns
	rcv := receiver(ns, "generic", notificationv1.GenericReceiver, "webhook-token",
		notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "flux-system"})
	rcv.Labels = map[string]string{shardKey: "binary"}
	// The directory holds Eddy's CRDs only; no pruning, so that deleting the
	// Kustomization leaves them installed in the shared cluster.
	ks := kustomization(ns, "flux-system", "flux-system", "./clusters/production/flux-system",
		func(k *kustomizev1.Kustomization) { k.Spec.Prune = false })
	create(t, secret(ns, "webhook-token", map[string]string{"token": token}), rcv, gitRepository(ns, "flux-system", r), ks)
	head, _ := r.Git("rev-parse", "HEAD")
	waitReady := func(rev string) {
		t.Helper()
		waitFor(t, ks, "Ready at "+rev, func() bool {
			c := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionTrue && ks.Status.LastAppliedRevision == rev
		})
	}
	waitReady("main@sha1:" + head)

	path := webhook.Path(token, rcv.Name, rcv.Namespace)
	waitFor(t, rcv, "Ready with the webhook path", func() bool {
		return apimeta.IsStatusConditionTrue(rcv.Status.Conditions, meta.ReadyCondition) && rcv.Status.WebhookPath == path
	})
	after, err := r.Commit(map[string]string{"clusters/production/flux-system/gotk-sync.yaml": "# synced by the test\n"}, "a new commit")
	if err != nil {
		t.Fatal(err)
	}
	// The receiver server finds the Receiver through its cache: post until
	// it answers 200 rather than 404.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d%s", rcvPort, path), "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("POST %s: %s", path, resp.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitReady("main@sha1:" + after)
}

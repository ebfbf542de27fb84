package controller

import (
	"context"
	"fmt"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// commitStatusKey is the metadata of the success event that
// notification-controller turns into a Git commit status.
const commitStatusKey = "kustomize.toolkit.fluxcd.io/commit_status"

// eventOf is the first event about Kustomization ns/name with reason
// that reached the sink, or nil.
func eventOf(ns, name, reason string) *events.Event {
	for _, ev := range eventSink.of(kustomizev1.KustomizationKind, ns, name) {
		if ev.Reason == reason {
			return &ev
		}
	}
	return nil
}

// TestBinaryCommitStatusEvent: the built kustomize-controller sends
// "Reconciliation finished…" with commit_status=update after a success; a
// second one with --feature-gates=DisableCommitStatusEvent=true (Flux kc
// v1.9.6) sends neither that event nor its Kubernetes Event, while its
// other events still arrive. Every event of a reconcile that read its
// source names the source as relatedObject (Flux kc v1.10.1).
func TestBinaryCommitStatusEvent(t *testing.T) {
	const gatedShard = "no-commit-status"
	testenv.RunController(t, env, ControllerName, "--watch-label-selector="+shardKey+"="+gatedShard,
		"--events-addr="+eventSink.url, "--min-retry-delay=200ms", "--max-retry-delay=2s",
		"--feature-gates=DisableCommitStatusEvent=true")

	ns, suffix := binaryNS, newNamespace(t)
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\n", name, ns)
	}
	r := newRepo(t, map[string]string{"on/cm.yaml": cm("cs-on-" + suffix), "off/cm.yaml": cm("cs-off-" + suffix)})
	rev := "main@sha1:" + r.MustGit(t, "rev-parse", "HEAD")
	src := newSource(t, ns, "cs-"+suffix, r)
	on := newKustomization(t, ns, "cs-on-"+suffix, src.Name, func(k *kustomizev1.Kustomization) { k.Spec.Path = "./on" })
	off := newKustomization(t, ns, "cs-off-"+suffix, src.Name, func(k *kustomizev1.Kustomization) {
		k.Spec.Path = "./off"
		k.Labels = map[string]string{shardKey: gatedShard}
	})
	waitApplied(t, on, rev)
	waitApplied(t, off, rev)

	waitEvent(t, kustomizev1.KustomizationKind, ns, on.Name, kustomizev1.ReconciliationSucceededReason)
	if ev := eventOf(ns, on.Name, kustomizev1.ReconciliationSucceededReason); ev.Metadata[commitStatusKey] != "update" {
		t.Errorf("success event metadata %v, want %s=update", ev.Metadata, commitStatusKey)
	}
	// relatedObject is the GitRepository, as Flux's object reference.
	related := func(name, reason string) {
		t.Helper()
		ev := eventOf(ns, name, reason)
		if ev == nil {
			t.Errorf("no %s event about %s", reason, name)
			return
		}
		if o := ev.RelatedObject; o == nil || o.Kind != sourcev1.GitRepositoryKind || o.APIVersion != sourcev1.GroupVersion.String() ||
			o.Namespace != ns || o.Name != src.Name || o.UID != src.UID {
			t.Errorf("%s event about %s: relatedObject %+v, want GitRepository %s/%s (uid %s)", reason, name, o, ns, src.Name, src.UID)
		}
	}
	related(on.Name, kustomizev1.ReconciliationSucceededReason)
	related(on.Name, "Progressing")

	// The gated binary's next event, a failure, is sent after the success
	// event would have been: once it is in, the success event is not coming.
	if err := env.Client.Patch(context.Background(), off, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"path":"./missing"}}`))); err != nil {
		t.Fatal(err)
	}
	waitFailed(t, off, meta.ArtifactFailedReason)
	waitEvent(t, kustomizev1.KustomizationKind, ns, off.Name, meta.ArtifactFailedReason)
	if ev := eventOf(ns, off.Name, kustomizev1.ReconciliationSucceededReason); ev != nil {
		t.Errorf("DisableCommitStatusEvent=true, yet the success event was sent: %q %v", ev.Message, ev.Metadata)
	}
	if evs := kubeEvents(t, ns, off.Name, kustomizev1.ReconciliationSucceededReason); len(evs) != 0 {
		t.Errorf("DisableCommitStatusEvent=true, yet Kubernetes Events %q", evs)
	}
	related(off.Name, "Progressing")
	related(off.Name, meta.ArtifactFailedReason)
}

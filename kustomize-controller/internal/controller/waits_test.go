package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// noErrors fails the test if any event about kind ns/name that reached the
// event sink is a Warning (severity error), or a Kubernetes Warning event.
func noErrors(t *testing.T, kind, ns, name string) {
	t.Helper()
	for _, ev := range eventSink.of(kind, ns, name) {
		if ev.Severity != events.SeverityInfo {
			t.Errorf("%s/%s/%s: %s event %s %q", kind, ns, name, ev.Severity, ev.Reason, ev.Message)
		}
	}
	list := &corev1.EventList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
			t.Errorf("%s/%s/%s: Kubernetes Warning event %s %q", kind, ns, name, e.Reason, e.Message)
		}
	}
}

// waitEvent waits until the event sink has an event about kind ns/name
// with reason.
func waitEvent(t *testing.T, kind, ns, name, reason string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, ev := range eventSink.of(kind, ns, name) {
			if ev.Reason == reason {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event about %s/%s/%s in 60s: %+v", reason, kind, ns, name, eventSink.of(kind, ns, name))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWaitingIsNotFailing creates, with the built binaries, a Kustomization
// before its GitRepository exists and before it has an artifact, and a
// GitRepository that includes one not created yet: each waits, then becomes
// Ready, and sent no Warning event (no error alert) on the way. Flux
// compatible: kustomize-controller only logs these waits, source-controller
// records a Trace event.
func TestWaitingIsNotFailing(t *testing.T) {
	ns := binaryNS
	suffix := newNamespace(t)
	r := newRepo(t, map[string]string{
		"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: early-" + suffix + ", namespace: " + ns + "}\n",
	})
	rev := "main@sha1:" + r.MustGit(t, "rev-parse", "HEAD")
	srcName := "late-" + suffix
	k := newKustomization(t, ns, "early-"+suffix, srcName, func(k *kustomizev1.Kustomization) { k.Spec.Path = "./apps" })
	waitFor(t, k, "source not found", func() bool {
		c := readyCond(k)
		return c != nil && c.Message == fmt.Sprintf("Source 'GitRepository/%s/%s' not found", ns, srcName)
	})
	// Created suspended, the GitRepository has no artifact until resumed.
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: srcName, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: r.URL(), Interval: metav1.Duration{Duration: time.Hour}, Suspend: true,
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	if err := env.Client.Create(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k, "artifact not found", func() bool {
		c := readyCond(k)
		return c != nil && c.Message == fmt.Sprintf("Source 'GitRepository/%s/%s' is not ready, artifact not found", ns, srcName)
	})
	if err := env.Client.Patch(context.Background(), src, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"suspend":false}}`))); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, k, rev)
	// Events are sent in order: the success event comes after any event
	// of the waits.
	waitEvent(t, kustomizev1.KustomizationKind, ns, k.Name, kustomizev1.ReconciliationSucceededReason)
	noErrors(t, kustomizev1.KustomizationKind, ns, k.Name)

	// An include not created yet.
	lib := newRepo(t, map[string]string{"lib/values.yaml": "a: 1\n"})
	app := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app-" + suffix, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: r.URL(), Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
			Include:   []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "lib-" + suffix}}}},
	}
	if err := env.Client.Create(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	waitFor(t, app, "include unavailable", func() bool {
		c := apimeta.FindStatusCondition(app.Status.Conditions, sourcev1.IncludeUnavailableCondition)
		return c != nil && c.Reason == sourcev1.NotFoundReason
	})
	newSource(t, ns, "lib-"+suffix, lib)
	waitFor(t, app, "artifact with the include", func() bool { return app.Status.Artifact != nil })
	waitEvent(t, sourcev1.GitRepositoryKind, ns, app.Name, "NewArtifact")
	noErrors(t, sourcev1.GitRepositoryKind, ns, app.Name)
}

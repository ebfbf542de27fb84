package controller

import (
	"context"
	"fmt"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kstatusOf is kstatus's reading of obj, as kubectl wait, a parent's health
// check and flux resume see it.
func kstatusOf(t *testing.T, obj client.Object) status.Status {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func suspend(t *testing.T, obj client.Object) {
	t.Helper()
	patch := []byte(`{"spec":{"suspend":true}}`)
	if err := env.Client.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

// TestSuspendedObservesGeneration suspends a Ready Kustomization and a Ready
// GitRepository (built binaries): each records the new generation, so
// kstatus reads it as Current, and a dependant of the suspended
// Kustomization on a new revision says the revision is not up to date, not
// that the dependency is not ready. Flux compatible.
func TestSuspendedObservesGeneration(t *testing.T) {
	ns := binaryNS
	suffix := newNamespace(t) // a unique name
	r := newRepo(t, map[string]string{
		"infra/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: infra-" + suffix + ", namespace: " + ns + "}\n",
		"apps/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: apps-" + suffix + ", namespace: " + ns + "}\n",
	})
	src := newSource(t, ns, "suspend-"+suffix, r)
	rev := src.Status.Artifact.Revision
	infra := newKustomization(t, ns, "infra-"+suffix, src.Name, func(k *kustomizev1.Kustomization) { k.Spec.Path = "./infra" })
	apps := newKustomization(t, ns, "apps-"+suffix, src.Name, func(k *kustomizev1.Kustomization) {
		k.Spec.Path = "./apps"
		k.Spec.DependsOn = []meta.DependencyReference{{Name: infra.Name}}
	})
	waitApplied(t, infra, rev)
	waitApplied(t, apps, rev)

	suspend(t, infra)
	waitFor(t, infra, "observedGeneration of the suspended Kustomization", func() bool {
		return infra.Spec.Suspend && infra.Status.ObservedGeneration == infra.Generation
	})
	if s := kstatusOf(t, infra); s != status.CurrentStatus {
		t.Errorf("kstatus of the suspended Kustomization: %s", s)
	}
	if c := readyCond(infra); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready of the suspended Kustomization: %+v", c)
	}

	rev2 := push(t, r, src, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: apps-" + suffix +
		", namespace: " + ns + "}\ndata: {v: \"2\"}\n"}, "change apps")
	c := waitFailed(t, apps, meta.DependencyNotReadyReason)
	if want := fmt.Sprintf("dependency '%s/%s' revision is not up to date", ns, infra.Name); c.Message != want {
		t.Errorf("dependant's message %q, want %q (new revision %s)", c.Message, want, rev2)
	}

	other := newSource(t, ns, "suspend-src-"+suffix, r)
	suspend(t, other)
	waitFor(t, other, "observedGeneration of the suspended GitRepository", func() bool {
		return other.Spec.Suspend && other.Status.ObservedGeneration == other.Generation
	})
	if s := kstatusOf(t, other); s != status.CurrentStatus {
		t.Errorf("kstatus of the suspended GitRepository: %s", s)
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// replicasPatch, appended to clusters/node/flux-system/kustomization.yaml,
// runs two kustomize-controller replicas: a bootstrapped controller is
// changed through Git, or its Kustomization would undo the change.
const replicasPatch = `patches:
- target:
    kind: Deployment
    name: kustomize-controller
  patch: |
    - op: replace
      path: /spec/replicas
      value: 2
`

// leaderHandover runs two kustomize-controller replicas, deletes the pod
// of the one that holds the Lease flux-system/kustomize-controller-leader-election
// and checks that another pod holds it within the Lease's duration and
// reconciles, and that nothing is applied twice: a replica starts its
// controllers only once it leads (the others' logs show none), and the new
// leader's reconcile of the unchanged revision writes no applied object
// (their resourceVersions stay). The standby, retrying every 5s, or the
// Deployment's replacement pod, starting meanwhile, may take the lead.
func (s *gitopsSuite) leaderHandover(t *testing.T) {
	flux := "clusters/node/flux-system/kustomization.yaml"
	cur, err := os.ReadFile(filepath.Join(s.repo.Work, flux))
	if err != nil {
		t.Fatal(err)
	}
	rev := s.commit(t, map[string]string{flux: string(cur) + replicasPatch}, "Two kustomize-controller replicas")
	s.eddyMust(t, s.ctx, "reconcile", "kustomization", "flux-system", "--with-source")
	s.waitKs(t, "flux-system", time.Minute, readyAt(rev))
	pods := s.waitControllerReplicas(t, "kustomize-controller", 2)
	key := client.ObjectKey{Namespace: "flux-system", Name: "kustomize-controller-leader-election"}
	lease, leader := s.leaseHolder(t, key, "", time.Minute)
	duration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	t.Logf("leader %s of %d replicas, lease duration %s (args %v)", leader, len(pods), duration, pods[0].Spec.Containers[0].Args)
	s.checkOnlyLeaderStarted(t, leader)
	app := s.kustomization(t, "podinfo")
	applied := s.appliedVersions(t)

	start := time.Now()
	if err := s.CS.CoreV1().Pods("flux-system").Delete(s.ctx, leader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, next := s.leaseHolder(t, key, leader, 2*duration)
	took := time.Since(start)
	role := "the Deployment's replacement pod"
	for _, p := range pods {
		if p.Name == next {
			role = "the standby"
		}
	}
	t.Logf("leader's pod deleted to %s, %s, holding the Lease: %s", next, role, took.Round(100*time.Millisecond))
	if took > duration {
		t.Errorf("%s took %s to lead; the lease duration is %s", next, took, duration)
	}

	token := s.requestReconcile(t, &kustomizev1.Kustomization{}, "podinfo")
	s.waitKs(t, "podinfo", time.Minute, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastHandledReconcileAt == token && readyAt(app.Status.LastAppliedRevision)(k)
	})
	if after := s.appliedVersions(t); after != applied {
		t.Errorf("the unchanged revision's objects were written across the handover: before %s, after %s", applied, after)
	} else {
		t.Logf("applied objects unchanged across the handover: %s", applied)
	}
	s.checkOnlyLeaderStarted(t, next)
}

// leaseHolder waits until a pod other than not holds the Lease and returns
// the Lease and the pod's name.
func (s *gitopsSuite) leaseHolder(t *testing.T, key client.ObjectKey, not string, within time.Duration) (*coordinationv1.Lease, string) {
	t.Helper()
	lease := &coordinationv1.Lease{}
	holder := ""
	if err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		if err := s.Client.Get(ctx, key, lease); err != nil || lease.Spec.HolderIdentity == nil {
			return false, nil
		}
		holder, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
		return holder != "" && holder != not, nil
	}); err != nil {
		t.Fatalf("no pod but %q holds the Lease %s: %v (holder %q)", not, key, err, holder)
	}
	return lease, holder
}

// checkOnlyLeaderStarted checks from the kustomize-controller pods' logs
// that the leader started its controllers after it acquired the Lease and
// that no other pod started any.
func (s *gitopsSuite) checkOnlyLeaderStarted(t *testing.T, leader string) {
	t.Helper()
	for _, p := range s.waitControllerReplicas(t, "kustomize-controller", 2) {
		logs := s.podLog(t, p.Name)
		acquired, started := strings.Index(logs, "Successfully acquired lease"), strings.Index(logs, "Starting workers")
		switch {
		case p.Name == leader && (acquired < 0 || started < acquired):
			t.Errorf("the leader %s did not start its controllers after acquiring the Lease:\n%s", p.Name, logs)
		case p.Name != leader && (acquired >= 0 || started >= 0):
			t.Errorf("%s, not the leader, acquired the Lease or started controllers:\n%s", p.Name, logs)
		}
	}
}

// appliedVersions are the resourceVersions of podinfo's objects that only
// an apply writes (no controller updates their status), and their
// managers.
func (s *gitopsSuite) appliedVersions(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, obj := range []client.Object{&corev1.Service{}, &corev1.ConfigMap{}} {
		name := "podinfo"
		if _, ok := obj.(*corev1.ConfigMap); ok {
			name = "podinfo-note"
		}
		if err := s.Client.Get(s.ctx, client.ObjectKey{Namespace: "default", Name: name}, obj); err != nil {
			t.Fatal(err)
		}
		b.WriteString(name + "@" + obj.GetResourceVersion() + " managers:")
		for _, m := range obj.GetManagedFields() {
			b.WriteString(" " + m.Manager + "/" + string(m.Operation))
		}
		b.WriteString("; ")
	}
	return b.String()
}

// waitControllerReplicas waits for n Ready pods of the controller.
func (s *gitopsSuite) waitControllerReplicas(t *testing.T, controller string, n int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	if err := wait.PollUntilContextTimeout(s.ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l := &corev1.PodList{}
		if err := s.Client.List(ctx, l, client.InNamespace("flux-system"), client.MatchingLabels{"app": controller}); err != nil {
			return false, nil
		}
		pods = nil
		for i := range l.Items {
			if p := &l.Items[i]; p.DeletionTimestamp == nil && !podReadySince(p).IsZero() {
				pods = append(pods, p)
			}
		}
		d, err := s.CS.AppsV1().Deployments("flux-system").Get(ctx, controller, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		// The rollout done: no pod on its way in or out.
		st := d.Status
		done := d.Generation == st.ObservedGeneration && st.Replicas == int32(n) && st.UpdatedReplicas == int32(n) && st.AvailableReplicas == int32(n)
		return done && len(pods) == n && len(l.Items) == n, nil
	}); err != nil {
		t.Fatalf("%s: %d Ready pods; want %d: %v", controller, len(pods), n, err)
	}
	return pods
}

func (s *gitopsSuite) podLog(t *testing.T, pod string) string {
	t.Helper()
	b, err := s.CS.CoreV1().Pods("flux-system").GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(s.ctx)
	if err != nil {
		t.Fatalf("log of %s: %v", pod, err)
	}
	return string(b)
}

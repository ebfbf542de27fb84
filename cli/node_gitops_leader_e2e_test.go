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
// and checks that the other holds it within the Lease's duration and
// reconciles, and that nothing is applied twice: the standby started no
// controller before it led, and the new leader's reconcile of the
// unchanged revision writes no applied object (their resourceVersions stay).
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

	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: "flux-system", Name: "kustomize-controller-leader-election"}
	var leader, standby *corev1.Pod
	if err := wait.PollUntilContextTimeout(s.ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := s.Client.Get(ctx, key, lease); err != nil || lease.Spec.HolderIdentity == nil {
			return false, nil
		}
		for i, p := range pods {
			if strings.HasPrefix(*lease.Spec.HolderIdentity, p.Name+"_") {
				leader, standby = p, pods[1-i]
			}
		}
		return leader != nil, nil
	}); err != nil {
		t.Fatalf("neither pod of %v holds the Lease %s: %v", pods, key, err)
	}
	duration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	t.Logf("leader %s, standby %s, lease duration %s (args %v)", leader.Name, standby.Name, duration, leader.Spec.Containers[0].Args)
	if logs := s.podLog(t, standby.Name); strings.Contains(logs, "Starting workers") {
		t.Errorf("the standby %s started controllers before it led:\n%s", standby.Name, logs)
	}
	app := s.kustomization(t, "podinfo")
	applied := s.appliedVersions(t)

	start := time.Now()
	if err := s.CS.CoreV1().Pods("flux-system").Delete(s.ctx, leader.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, 2*duration, true, func(ctx context.Context) (bool, error) {
		err := s.Client.Get(ctx, key, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && strings.HasPrefix(*lease.Spec.HolderIdentity, standby.Name+"_"), nil
	}); err != nil {
		t.Fatalf("the standby %s does not hold the Lease: %v (holder %v)", standby.Name, err, lease.Spec.HolderIdentity)
	}
	took := time.Since(start)
	t.Logf("leader's pod deleted to the standby holding the Lease: %s", took.Round(100*time.Millisecond))
	if took > duration {
		t.Errorf("the standby took %s to lead; the lease duration is %s", took, duration)
	}

	token := s.requestReconcile(t, &kustomizev1.Kustomization{}, "podinfo")
	s.waitKs(t, "podinfo", time.Minute, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastHandledReconcileAt == token && readyAt(app.Status.LastAppliedRevision)(k)
	})
	if after := s.appliedVersions(t); after != applied {
		t.Errorf("the unchanged revision's objects were written across the handover: before %s, after %s", applied, after)
	}
	if logs := s.podLog(t, standby.Name); !strings.Contains(logs, "Starting workers") {
		t.Errorf("the new leader %s logged no controller start:\n%s", standby.Name, logs)
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
		return len(pods) == n && len(l.Items) == n, nil
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

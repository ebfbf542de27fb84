package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type autoscalingHPA = autoscalingv2.HorizontalPodAutoscaler

// appKustomization deploys apps/podinfo into default and waits for its
// objects; the timeout bounds how long a broken rollout takes to report,
// the retry interval how long a failed fetch of an artifact that did not
// change (source-controller restarting) waits to be tried again.
const appKustomization = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 10m
  retryInterval: 15s
  path: ./apps/podinfo
  prune: true
  wait: true
  timeout: 1m
  targetNamespace: default
  sourceRef:
    kind: GitRepository
    name: flux-system
`

// crashPatch makes tinyapp exit 1 at start.
const crashPatch = `patches:
- target:
    kind: Deployment
    name: podinfo
  patch: |
    - op: add
      path: /spec/template/spec/containers/0/command/-
      value: --crash
`

// noteConfigMap is an object whose existence shows a commit was applied.
const noteConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo-note
data:
  note: applied after source-controller's restart
`

// appKustomize is apps/podinfo/kustomization.yaml: podinfo's resources
// (and note.yaml from step 4 on), its image replaced by the tiny app's by
// digest, plus extra.
func (s *gitopsSuite) appKustomize(extra string) string {
	repo, digest, _ := strings.Cut(s.Refs["tinyapp"], "@")
	resources := "resources:\n- hpa.yaml\n- deployment.yaml\n- service.yaml\n"
	if s.note {
		resources += "- note.yaml\n"
	}
	return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + resources +
		"images:\n- name: ghcr.io/stefanprodan/podinfo\n  newName: " + repo + "\n  digest: " + digest + "\n" + extra
}

// commit commits files (none: what the work tree has committed already),
// pushes to main and returns the revision as Flux writes it.
func (s *gitopsSuite) commit(t *testing.T, files map[string]string, msg string) string {
	t.Helper()
	if files == nil {
		if _, err := s.repo.Git("push", "-q", s.repo.Bare, "HEAD:main"); err != nil {
			t.Fatal(err)
		}
		return "main@sha1:" + head(s.repo.Bare, "main")
	}
	h, err := s.repo.Commit(files, msg)
	if err != nil {
		t.Fatal(err)
	}
	return "main@sha1:" + h
}

// readyAt is true of a Kustomization Ready at rev for its generation.
func readyAt(rev string) func(*kustomizev1.Kustomization) bool {
	return func(k *kustomizev1.Kustomization) bool {
		return k.Status.ObservedGeneration == k.Generation && k.Status.LastAppliedRevision == rev &&
			apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.ReadyCondition)
	}
}

// waitKs waits until the Kustomization flux-system/name satisfies ok and
// returns it.
func (s *gitopsSuite) waitKs(t *testing.T, name string, within time.Duration, ok func(*kustomizev1.Kustomization) bool) *kustomizev1.Kustomization {
	t.Helper()
	k := &kustomizev1.Kustomization{}
	if err := wait.PollUntilContextTimeout(s.ctx, 250*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: name}, k)
		return err == nil && ok(k), nil
	}); err != nil {
		t.Fatalf("Kustomization %s: %v; status %+v", name, err, k.Status)
	}
	return k
}

func (s *gitopsSuite) kustomization(t *testing.T, name string) *kustomizev1.Kustomization {
	t.Helper()
	return s.waitKs(t, name, time.Minute, func(*kustomizev1.Kustomization) bool { return true })
}

// gitRepository is GitRepository flux-system once it has an artifact.
func (s *gitopsSuite) gitRepository(t *testing.T) *sourcev1.GitRepository {
	t.Helper()
	r := &sourcev1.GitRepository{}
	if err := wait.PollUntilContextTimeout(s.ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, r)
		return err == nil && r.Status.Artifact != nil, nil
	}); err != nil {
		t.Fatalf("GitRepository flux-system has no artifact: %v", err)
	}
	return r
}

// requestReconcile sets the reconcile.fluxcd.io/requestedAt annotation of
// obj's kind named flux-system/name, as `eddy reconcile` does, without
// waiting, and returns the token.
func (s *gitopsSuite) requestReconcile(t *testing.T, obj client.Object, name string) string {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	obj.SetNamespace("flux-system")
	obj.SetName(name)
	patch := []byte(`{"metadata":{"annotations":{"` + meta.ReconcileRequestAnnotation + `":"` + token + `"}}}`)
	if err := s.Client.Patch(s.ctx, obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	return token
}

// appPods are podinfo's pods in default that match.
func (s *gitopsSuite) appPods(t *testing.T, match func(*corev1.Pod) bool) []*corev1.Pod {
	t.Helper()
	l := &corev1.PodList{}
	if err := s.Client.List(s.ctx, l, client.InNamespace("default"), client.MatchingLabels{"app": "podinfo"}); err != nil {
		t.Fatal(err)
	}
	var out []*corev1.Pod
	for i := range l.Items {
		if p := &l.Items[i]; p.DeletionTimestamp == nil && match(p) {
			out = append(out, p)
		}
	}
	return out
}

// waitAppPods waits until podinfo has exactly n pods, each matching,
// Running and Ready.
func (s *gitopsSuite) waitAppPods(t *testing.T, n int, match func(*corev1.Pod) bool) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	if err := wait.PollUntilContextTimeout(s.ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods = s.appPods(t, func(*corev1.Pod) bool { return true })
		if len(pods) != n {
			return false, nil
		}
		for _, p := range pods {
			if !match(p) || p.Status.Phase != corev1.PodRunning || podReadySince(p).IsZero() {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		var got []string
		for _, p := range pods {
			got = append(got, p.Name+" "+string(p.Status.Phase)+" "+p.Labels["pod-template-hash"])
		}
		t.Fatalf("podinfo's pods %v; want %d Ready: %v", got, n, err)
	}
	return pods
}

// controllerPod is the controller's one Ready pod.
func (s *gitopsSuite) controllerPod(t *testing.T, controller string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	if err := wait.PollUntilContextTimeout(s.ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		p, err = readyPod(ctx, s.CS, controller)
		return err == nil && p != nil, nil
	}); err != nil {
		t.Fatalf("no Ready %s pod: %v", controller, err)
	}
	return p
}

// processesOfContainers lists the live processes whose cgroup names one of
// the containers (runc names a container's cgroup by its ID); zombies have
// exited already.
func processesOfContainers(ids []string) []string {
	var left []string
	files, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, f := range files {
		b, err := os.ReadFile(f)
		stat, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "stat"))
		if end := strings.LastIndexByte(string(stat), ')'); err != nil || end < 0 || end+2 >= len(stat) || stat[end+2] == 'Z' {
			continue
		}
		for _, id := range ids {
			if len(id) >= 12 && strings.Contains(string(b), id) {
				left = append(left, filepath.Base(filepath.Dir(f))+" ("+id[:12]+")")
			}
		}
	}
	return left
}

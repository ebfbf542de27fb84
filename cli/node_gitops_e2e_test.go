package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// gitopsSuite is what the steps of TestGitOpsOnTheRealNode share: one
// cluster, one Git server, one repository, in order.
type gitopsSuite struct {
	*nodeEnv
	ctx      context.Context
	testdata string
	git      *gitserver.Server
	repo     *gitserver.Repo
	// appHash is podinfo's healthy pod-template-hash (step 2).
	appHash string
	// note: apps/podinfo has note.yaml (step 4 on).
	note bool
	// failed: a step failed; the rest are not run.
	failed bool
}

const (
	gitUser, gitPassword = "eddy", "s3cret-pw"
	appKsPath            = "clusters/node/podinfo.yaml"
	appDir               = "apps/podinfo"
)

// TestGitOpsOnTheRealNode runs Eddy as its users do, on the node profile
// (a real kubelet and containerd) with the built bin/eddy and the
// controllers as pods from their images: bootstrap from a Git server the
// pods reach; podinfo's manifests with the tiny app's image deployed by a
// commit; a crashing commit reported by the health check and its revert
// recovering; source-controller's pod deleted during a reconcile;
// kustomize-controller's leader deleted with a standby replica; and, after
// Stop, nothing of the node left on the machine.
func TestGitOpsOnTheRealNode(t *testing.T) {
	longNodeSuite(t)
	testdata := testenv.TestdataDir(t)
	e := startNodeEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	s := &gitopsSuite{nodeEnv: e, ctx: ctx, testdata: testdata}
	root := t.TempDir()
	bare, err := gitserver.InitBare(root, "fleet.git")
	if err == nil {
		_, err = gitserver.Git(bare, "config", "http.receivepack", "true")
	}
	if err != nil {
		t.Fatal(err)
	}
	// On the node IP: the pods reach it, not the host's loopback.
	if s.git, err = gitserver.Start(gitserver.Options{Root: root, Username: gitUser, Password: gitPassword,
		Addr: localcluster.NodeIP + ":0"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.git.Close)
	s.repo = &gitserver.Repo{Name: "fleet.git", Work: filepath.Join(root, "work"), Bare: bare}

	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"bootstrap git syncs the cluster from a server the pods reach", s.bootstrap},
		{"a commit deploys the app", s.deployApp},
		{"a crashing commit is reported and its revert recovers", s.crashAndRevert},
		{"source-controller's pod deleted during a reconcile", s.sourceControllerRestart},
		{"kustomize-controller's leader deleted hands over to the standby", s.leaderHandover},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.run) {
			s.failed = true
			break // each step builds on the ones before
		}
	}
	t.Run("after Stop nothing of the node is left", s.stopLeavesNothing)
}

// bootstrap runs `eddy bootstrap git` into the empty repository: the
// controllers come up as pods from the local registry's images and the
// Kustomization flux-system is Ready at the pushed commit, its source
// fetched by source-controller's pod from the node IP and its artifact by
// kustomize-controller's pod through the cluster DNS.
func (s *gitopsSuite) bootstrap(t *testing.T) {
	start := time.Now()
	s.eddyMust(t, s.ctx, "bootstrap", "git", "--url", s.git.URL+"/fleet.git", "--allow-insecure-http",
		"--username", gitUser, "--password", gitPassword, "--token-auth", "--path", "clusters/node",
		"--registry", s.Registry.Host(), "--version", s.version, "--timeout=5m", "--silent")
	s.waitControllerPods(t, s.ctx, start)
	rev := "main@sha1:" + head(s.repo.Bare, "main")
	s.waitKs(t, "flux-system", time.Minute, readyAt(rev))
	t.Logf("eddy bootstrap git to Kustomization flux-system Ready at %s: %s", rev, time.Since(start).Round(100*time.Millisecond))
	repo := s.gitRepository(t)
	if u, err := url.Parse(repo.Status.Artifact.URL); err != nil || u.Host != "source-controller.flux-system.svc.cluster.local." {
		t.Errorf("the artifact's URL %s is not source-controller's Service name", repo.Status.Artifact.URL)
	}
	if _, err := gitserver.Git(filepath.Dir(s.repo.Work), "clone", "-q", s.repo.Bare, s.repo.Work); err != nil {
		t.Fatal(err)
	}
}

// deployApp commits podinfo's kustomize/ directory with the tiny app's
// image (by digest) and a Kustomization that waits for it: Ready, the
// Deployment's pods Running and Ready from that image (their exec probes
// run podcli in the container), the HPA created and scaling to its
// minimum.
func (s *gitopsSuite) deployApp(t *testing.T) {
	files := map[string]string{appKsPath: appKustomization, appDir + "/kustomization.yaml": s.appKustomize("")}
	for _, f := range []string{"deployment.yaml", "hpa.yaml", "service.yaml"} {
		b, err := os.ReadFile(filepath.Join(s.testdata, "repos", "podinfo", "kustomize", f))
		if err != nil {
			t.Fatal(err)
		}
		files[appDir+"/"+f] = string(b)
	}
	start := time.Now()
	rev := s.commit(t, files, "Deploy podinfo with the tiny app")
	s.eddyMust(t, s.ctx, "reconcile", "kustomization", "flux-system", "--with-source")
	s.waitKs(t, "podinfo", 2*time.Minute, readyAt(rev))
	t.Logf("commit to Kustomization podinfo Ready: %s", time.Since(start).Round(100*time.Millisecond))
	if err := s.Client.Get(s.ctx, client.ObjectKey{Namespace: "default", Name: "podinfo"}, &autoscalingHPA{}); err != nil {
		t.Errorf("HorizontalPodAutoscaler default/podinfo: %v", err)
	}
	// The HPA raises the Deployment to its minReplicas, 2.
	pods := s.waitAppPods(t, 2, func(p *corev1.Pod) bool { return true })
	t.Logf("commit to %d podinfo pods Ready: %s", len(pods), time.Since(start).Round(100*time.Millisecond))
	_, digest, _ := strings.Cut(s.Refs["tinyapp"], "@")
	for _, p := range pods {
		st := p.Status.ContainerStatuses[0]
		if !strings.HasSuffix(st.ImageID, "@"+digest) || st.RestartCount != 0 {
			t.Errorf("pod %s runs %s, %d restarts; want tinyapp@%s, none", p.Name, st.ImageID, st.RestartCount, digest)
		}
		s.appHash = p.Labels["pod-template-hash"]
	}
}

// crashAndRevert commits a patch that makes the app exit at start: the
// Kustomization turns Ready=False naming the Deployment and the pods'
// CrashLoopBackOff, while the old pods go on serving (podinfo's rollout has
// maxUnavailable 0). `git revert` of it makes the Kustomization Ready
// again and removes the crashing pods.
func (s *gitopsSuite) crashAndRevert(t *testing.T) {
	good := s.gitRepository(t).Status.Artifact.Revision
	start := time.Now()
	crash := s.commit(t, map[string]string{appDir + "/kustomization.yaml": s.appKustomize(crashPatch)}, "Crash the app")
	s.eddyMust(t, s.ctx, "reconcile", "source", "git", "flux-system")
	ks := s.waitKs(t, "podinfo", 3*time.Minute, func(k *kustomizev1.Kustomization) bool {
		c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
		return k.Status.LastAttemptedRevision == crash && c != nil && c.Status == metav1.ConditionFalse
	})
	msg := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition).Message
	t.Logf("crashing commit to Ready=False: %s: %s", time.Since(start).Round(100*time.Millisecond), msg)
	for _, want := range []string{"Deployment/default/podinfo", "CrashLoopBackOff"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready=False message %q does not name %s", msg, want)
		}
	}
	// As Flux: the last applied revision is the last healthy one.
	if ks.Status.LastAppliedRevision != good {
		t.Errorf("last applied %s; want the last healthy %s", ks.Status.LastAppliedRevision, good)
	}
	crashing := s.appPods(t, func(p *corev1.Pod) bool { return p.Labels["pod-template-hash"] != s.appHash })
	serving := s.appPods(t, func(p *corev1.Pod) bool {
		return p.Labels["pod-template-hash"] == s.appHash && podReadySince(p).After(time.Time{})
	})
	if len(crashing) == 0 || len(serving) < 2 {
		t.Errorf("%d pods of the crashing template, %d Ready of the good one; want some and 2", len(crashing), len(serving))
	}

	start = time.Now()
	if _, err := s.repo.Git("revert", "--no-edit", "HEAD"); err != nil {
		t.Fatal(err)
	}
	reverted := s.commit(t, nil, "")
	s.eddyMust(t, s.ctx, "reconcile", "source", "git", "flux-system")
	s.waitKs(t, "podinfo", 2*time.Minute, readyAt(reverted))
	gone := s.waitAppPods(t, 2, func(p *corev1.Pod) bool { return p.Labels["pod-template-hash"] == s.appHash })
	t.Logf("revert to Ready with %d pods of the good template: %s", len(gone), time.Since(start).Round(100*time.Millisecond))
	if good == reverted {
		t.Errorf("the revert is the good revision %s", good)
	}
	for _, p := range crashing {
		if err := wait.PollUntilContextTimeout(s.ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(s.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})), nil
		}); err != nil {
			t.Errorf("crashing pod %s is still there: %v", p.Name, err)
		}
	}
	t.Logf("revert to the crashing pods gone: %s", time.Since(start).Round(100*time.Millisecond))
}

// sourceControllerRestart deletes source-controller's pod right after a
// reconcile of a new commit is requested: kustomize-controller keeps the
// last applied revision meanwhile and converges to the new commit once the
// new pod, whose storage (an emptyDir) starts empty, serves the artifact.
// A second deletion with no new commit rebuilds the same artifact: same
// revision and digest, served at its URL.
func (s *gitopsSuite) sourceControllerRestart(t *testing.T) {
	before := s.kustomization(t, "podinfo").Status.LastAppliedRevision
	s.note = true
	rev := s.commit(t, map[string]string{appDir + "/note.yaml": noteConfigMap, appDir + "/kustomization.yaml": s.appKustomize("")},
		"Add a note")
	old := s.controllerPod(t, "source-controller")
	start := time.Now()
	s.requestReconcile(t, &sourcev1.GitRepository{}, "flux-system")
	if err := s.CS.CoreV1().Pods("flux-system").Delete(s.ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Whether the old pod had published the new artifact: either way the
	// new pod must serve it.
	t.Logf("source-controller's pod deleted %s after the request; the artifact was then at %s",
		time.Since(start).Round(time.Millisecond), s.gitRepository(t).Status.Artifact.Revision)
	seen := map[string]bool{}
	s.waitKs(t, "podinfo", 3*time.Minute, func(k *kustomizev1.Kustomization) bool {
		seen[k.Status.LastAppliedRevision] = true
		return k.Status.LastAppliedRevision == rev && apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.ReadyCondition)
	})
	t.Logf("source-controller deleted to podinfo applied at the new commit: %s", time.Since(start).Round(100*time.Millisecond))
	delete(seen, rev)
	if len(seen) != 1 || !seen[before] {
		t.Errorf("meanwhile the Kustomization's last applied revisions were %v; want only %s", seen, before)
	}
	if err := s.Client.Get(s.ctx, client.ObjectKey{Namespace: "default", Name: "podinfo-note"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the new commit's ConfigMap: %v", err)
	}
	if p := s.controllerPod(t, "source-controller"); p.Name == old.Name {
		t.Errorf("source-controller's pod is still %s", p.Name)
	}

	a := s.gitRepository(t).Status.Artifact
	s.checkArtifactServed(t, a)
	old = s.controllerPod(t, "source-controller")
	if err := s.CS.CoreV1().Pods("flux-system").Delete(s.ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(s.ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := readyPod(ctx, s.CS, "source-controller")
		return err == nil && p != nil && p.Name != old.Name, nil
	}); err != nil {
		t.Fatalf("no new Ready source-controller pod: %v", err)
	}
	b := s.checkArtifactServed(t, nil)
	t.Logf("after an idle restart: %s %s served through the service proxy", b.Revision, b.Digest)
	if b.Revision != a.Revision || b.Digest != a.Digest {
		t.Errorf("after a restart the artifact is %s %s; before %s %s", b.Revision, b.Digest, a.Revision, a.Digest)
	}
}

// checkArtifactServed waits until source-controller serves the
// GitRepository's artifact (want, or the status's current one when nil)
// through the API server's service proxy, with the status's digest, and
// returns the artifact.
func (s *gitopsSuite) checkArtifactServed(t *testing.T, want *sourcev1.Artifact) *sourcev1.Artifact {
	t.Helper()
	var a *sourcev1.Artifact
	var last string
	if err := wait.PollUntilContextTimeout(s.ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		a = s.gitRepository(t).Status.Artifact
		if want != nil && a.Revision != want.Revision {
			return false, nil
		}
		u, err := url.Parse(a.URL)
		if err != nil {
			return false, err
		}
		body, err := s.CS.CoreV1().Services("flux-system").ProxyGet("http", "source-controller", "http", u.Path, nil).DoRaw(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("sha256:%x", sha256.Sum256(body))
		return last == a.Digest, nil
	}); err != nil {
		t.Fatalf("artifact %s (%s) not served through the service proxy (last: %s): %v", a.URL, a.Digest, last, err)
	}
	return a
}

// stopLeavesNothing stops the cluster: no container of the suite runs any
// more, and the machine's mounts, network devices, nftables tables,
// cgroups, sysctls and shims are as before Start.
func (s *gitopsSuite) stopLeavesNothing(t *testing.T) {
	if s.failed {
		s.diagnose(t)
	}
	out, err := exec.Command(filepath.Join(dev.K8sBinDir(s.root), "ctr"), "--address", s.Cluster.ContainerdSocket,
		"-n", "k8s.io", "containers", "ls", "-q").Output()
	if err != nil {
		t.Fatalf("ctr containers ls: %v", err)
	}
	var ids []string
	for _, f := range strings.Fields(string(out)) {
		if len(f) == 64 {
			ids = append(ids, f)
		} else {
			t.Logf("ctr containers ls -q printed %q", f)
		}
	}
	t.Logf("%d containers in containerd before Stop", len(ids))
	s.git.Close()
	start := time.Now()
	s.Cluster.Stop()
	t.Logf("Stop took %s", time.Since(start).Round(10*time.Millisecond))
	if err := s.Cluster.StopError(); err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		t.Error("containerd listed no container before Stop: the check proves nothing")
	}
	// Killed processes may be zombies a moment, until init reaps them.
	var left []string
	if err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		left = processesOfContainers(ids)
		return len(left) == 0, nil
	}); err != nil {
		t.Errorf("processes of the suite's containers 10s after Stop: %v", left)
	}
	after, err := localcluster.HostState()
	if err != nil {
		t.Fatal(err)
	}
	if after != s.Before {
		t.Errorf("machine state after Stop differs from before Start:\n--- before\n%s\n--- after\n%s", s.Before, after)
	}
}

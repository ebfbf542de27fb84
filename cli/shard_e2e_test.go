package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDevShardsE2E: `eddy dev up --shards 2` runs source-, kustomize- and
// helm-controller twice more (dev status lists them). A GitRepository
// labelled shard1 and a Kustomization labelled shard2 that applies it are
// Ready: the GitRepository's artifact stored and served by
// source-controller-shard1, the Kustomization's reconcile in
// logs/kustomize-controller-shard2.log and not in the main or shard1 logs;
// `get ks -o wide` shows each Kustomization's shard; down leaves nothing.
func TestDevShardsE2E(t *testing.T) {
	u := newUser(t)
	oneLineError(t, u.fails("dev", "up", "--detach", "--shards=-1"), "--shards=-1")

	podinfo := repoFrom(t, "podinfo")
	u.must("dev", "up", "--detach", "--shards=2", "--repo", podinfo, "--path", "./kustomize", "--target-namespace", "default")
	state, err := dev.ReadState(u.dir())
	if err != nil {
		t.Fatal(err)
	}
	status := u.must("dev", "status")
	for _, name := range []string{"source-controller", "kustomize-controller", "helm-controller"} {
		for _, p := range []string{name, name + "-shard1", name + "-shard2"} {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(p) + `\s+\d+\s+ready\s`).MatchString(status) {
				t.Errorf("dev status does not list %s ready", p)
			}
		}
	}
	if strings.Contains(status, "notification-controller-shard") {
		t.Error("notification-controller is sharded")
	}
	oneLineError(t, u.fails("dev", "up", "--shards=3"), "--shards=3", "runs 2 shard(s)")

	c := u.client()
	ctx := context.Background()
	main := &sourcev1.GitRepository{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: dev.Namespace, Name: dev.SyncName}, main); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sharded"}}); err != nil {
		t.Fatal(err)
	}
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: dev.Namespace, Name: "podinfo-shard1", Labels: map[string]string{"sharding.fluxcd.io/key": "shard1"}},
		Spec:       *main.Spec.DeepCopy(),
	}
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: dev.Namespace, Name: "podinfo-shard2", Labels: map[string]string{"sharding.fluxcd.io/key": "shard2"}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: 10 * time.Minute}, Path: "./kustomize", Prune: true,
			TargetNamespace: "sharded", SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: repo.Name}},
	}
	for _, obj := range []client.Object{repo, ks} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "Kustomization podinfo-shard2 Ready", 2*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
		if cond == nil {
			return false, "no Ready condition"
		}
		return cond.Status == metav1.ConditionTrue && ks.Status.ObservedGeneration == ks.Generation, cond.Reason + ": " + cond.Message
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(repo), repo); err != nil || repo.Status.Artifact == nil {
		t.Fatalf("GitRepository %s: %v, no artifact", repo.Name, err)
	}
	// Stored by shard1's source-controller, in its own directory, served at
	// its own address.
	if a := repo.Status.Artifact; hostOf(a.URL) == hostOf(main.Status.Artifact.URL) || !fileExists(filepath.Join(u.dir(), "storage", "shard1", filepath.FromSlash(a.Path))) {
		t.Errorf("artifact of %s at %s (path %s): want it in storage/shard1 and at another address than the main one's %s", repo.Name, a.URL, a.Path, main.Status.Artifact.URL)
	}

	logs := func(name string) string { return readFile(filepath.Join(u.dir(), "logs", name+".log")) }
	reconciled := regexp.MustCompile(`"msg":"Reconciliation finished[^\n]*"name":"podinfo-shard2"|"name":"podinfo-shard2"[^\n]*"msg":"Reconciliation finished`)
	if !reconciled.MatchString(logs("kustomize-controller-shard2")) {
		t.Errorf("logs/kustomize-controller-shard2.log has no reconcile of podinfo-shard2")
	}
	for _, other := range []string{"kustomize-controller", "kustomize-controller-shard1"} {
		if strings.Contains(logs(other), "podinfo-shard2") {
			t.Errorf("logs/%s.log mentions podinfo-shard2: only shard2 may reconcile it", other)
		}
	}
	if !strings.Contains(logs("source-controller-shard1"), "podinfo-shard1") || strings.Contains(logs("source-controller"), "podinfo-shard1") {
		t.Errorf("podinfo-shard1 not reconciled by source-controller-shard1 alone")
	}

	wide := u.must("get", "ks", "-o", "wide")
	if !regexp.MustCompile(`(?m)^NAME\s+REVISION\s+SUSPENDED\s+READY\s+SHARD\s+MESSAGE$`).MatchString(wide) ||
		!regexp.MustCompile(`(?m)^podinfo-shard2\s+main@sha1:\S+\s+False\s+True\s+shard2\s+Applied revision`).MatchString(wide) ||
		!regexp.MustCompile(`(?m)^flux-system\s+main@sha1:\S+\s+False\s+True\s+Applied revision`).MatchString(wide) {
		t.Errorf("get ks -o wide does not show the SHARD column:\n%s", wide)
	}

	u.must("dev", "down")
	checkAllGone(t, state, u.dir())
	if _, err := os.Stat(filepath.Join(u.dir(), "storage")); err == nil {
		t.Error("dev down left storage/")
	}
}

// hostOf is the host:port of an http URL.
func hostOf(u string) string {
	host, _, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
	return host
}

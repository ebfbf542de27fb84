package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/process"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Kustomization steps drive the example's Kustomizations flux-system
// (./clusters/dev) and apps (./apps), which applies the payment-api and
// cart-api Deployments and their ConfigMaps and Services in production.

func (d *demo) firstSync() (string, error) {
	rev, err := d.head()
	if err != nil {
		return "", err
	}
	d.did("waiting for Kustomizations flux-system (path ./clusters/dev) and apps (path ./apps) to apply %s", rev)
	if _, err := d.waitApplied(dev.SyncName, rev); err != nil {
		return "", err
	}
	apps, err := d.waitApplied("apps", rev)
	if err != nil {
		return "", err
	}
	if apps.Status.Inventory == nil {
		return "", errors.New("Kustomization apps has no inventory")
	}
	d.saw("Kustomization apps applied revision %s; inventory:", apps.Status.LastAppliedRevision)
	for _, e := range apps.Status.Inventory.Entries {
		if f := strings.Split(e.ID, "_"); len(f) == 4 {
			d.saw("  %s %s/%s", f[3], f[0], f[1])
		}
	}
	var avail []string
	for _, name := range []string{"payment-api", "cart-api"} {
		nodes, err := d.waitAvailable(name, 2)
		if err != nil {
			return "", err
		}
		avail = append(avail, fmt.Sprintf("%s 2/2 available on %s", name, strings.Join(nodes, ",")))
	}
	d.saw("%s", strings.Join(avail, "; "))
	return fmt.Sprintf("%d objects applied at %s; %s", len(apps.Status.Inventory.Entries), short(rev), strings.Join(avail, "; ")), nil
}

func (d *demo) drift() (string, error) {
	before, err := d.events("apps", "DriftCorrected")
	if err != nil {
		return "", err
	}
	old, err := d.kubectlEdit("payment-config", "MAX_RETRIES", "10", func(old string) {
		d.did("edit ConfigMap production/payment-config: .data.MAX_RETRIES %q → \"10\", as field manager kubectl-edit (what `kubectl edit` does)", old)
	})
	if err != nil {
		return "", err
	}
	d.did("request a reconcile of Kustomization apps instead of waiting for its 1m interval")
	if err := d.eddy("reconcile", "ks", "apps"); err != nil {
		return "", err
	}
	msg, err := d.newEvent("apps", "DriftCorrected", "payment-config", before)
	if err != nil {
		return "", err
	}
	d.saw("event DriftCorrected: %s", msg)
	now, err := d.configValue("payment-config", "MAX_RETRIES")
	if err != nil {
		return "", err
	}
	if now != old {
		return "", fmt.Errorf("ConfigMap still has MAX_RETRIES %q, want %q", now, old)
	}
	d.saw("ConfigMap production/payment-config has MAX_RETRIES %q again", old)
	for _, want := range []string{"MAX_RETRIES", "kubectl-edit"} {
		if !strings.Contains(msg, want) {
			return "", fmt.Errorf("the drift event does not name %s: %s", want, msg)
		}
	}
	return msg, nil
}

func (d *demo) scale() (string, error) {
	dep, err := d.read("apps/cart-api/deployment.yaml")
	if err != nil {
		return "", err
	}
	if !strings.Contains(dep, "replicas: 2") {
		return "", errors.New("apps/cart-api/deployment.yaml has no `replicas: 2`")
	}
	rev, err := d.applied(d.commit("cart-api: scale to 4 replicas", map[string]string{
		"apps/cart-api/deployment.yaml": strings.Replace(dep, "replicas: 2", "replicas: 4", 1)}))
	if err != nil {
		return "", err
	}
	nodes, err := d.waitAvailable("cart-api", 4)
	if err != nil {
		return "", err
	}
	d.saw("Deployment production/cart-api: 4/4 replicas available on %s; Kustomization apps Ready (health checked) at %s", strings.Join(nodes, ","), short(rev))
	return fmt.Sprintf("cart-api 4/4 available, apps Ready at %s", short(rev)), nil
}

func (d *demo) inventoryHas(id string) (bool, error) {
	k, err := d.kustomization("apps")
	if err != nil {
		return false, err
	}
	if k.Status.Inventory == nil {
		return false, nil
	}
	for _, e := range k.Status.Inventory.Entries {
		if e.ID == id {
			return true, nil
		}
	}
	return false, nil
}

const serviceID = "production_payment-api__Service"

func (d *demo) prune() (string, error) {
	svc := &corev1.Service{}
	key := types.NamespacedName{Namespace: "production", Name: "payment-api"}
	if err := d.c.Get(d.ctx, key, svc); err != nil {
		return "", fmt.Errorf("Service production/payment-api before the commit: %w", err)
	}
	kz, err := d.read("apps/payment-api/kustomization.yaml")
	if err != nil {
		return "", err
	}
	before, err := d.events("apps", "Progressing")
	if err != nil {
		return "", err
	}
	if _, err := d.applied(d.commit("payment-api: remove the Service", map[string]string{
		"apps/payment-api/service.yaml":       "",
		"apps/payment-api/kustomization.yaml": strings.Replace(kz, "  - service.yaml\n", "", 1),
	})); err != nil {
		return "", err
	}
	err = d.c.Get(d.ctx, key, &corev1.Service{})
	if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("Service production/payment-api still exists after the prune (get: %v)", err)
	}
	if in, err := d.inventoryHas(serviceID); err != nil || in {
		return "", fmt.Errorf("the inventory still lists %s (%v)", serviceID, err)
	}
	msg, err := d.newEvent("apps", "Progressing", "Service/production/payment-api deleted", before)
	if err != nil {
		return "", err
	}
	d.saw("event Progressing: %s", strings.ReplaceAll(msg, "\n", "; "))
	d.saw("Service production/payment-api: not found (uid %s gone); the inventory no longer lists it", svc.UID)
	return "Service production/payment-api deleted and gone from the inventory", nil
}

func (d *demo) revert() (string, error) {
	if _, err := d.git("revert", "--no-edit", "HEAD"); err != nil {
		return "", err
	}
	rev, err := d.applied(d.head())
	if err != nil {
		return "", err
	}
	svc := &corev1.Service{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: "production", Name: "payment-api"}, svc); err != nil {
		return "", fmt.Errorf("Service production/payment-api after the revert: %w", err)
	}
	if in, err := d.inventoryHas(serviceID); err != nil || !in {
		return "", fmt.Errorf("the inventory does not list %s after the revert (%v)", serviceID, err)
	}
	d.saw("Service production/payment-api exists again (new uid %s, created %s) and is in the inventory, at %s",
		svc.UID, svc.CreationTimestamp.Format(time.TimeOnly), short(rev))
	return fmt.Sprintf("Service production/payment-api back at %s", short(rev)), nil
}

// supervised is the supervisor's status of the process name (the zero
// Status when it runs none of that name).
func (d *demo) supervised(name string) process.Status {
	var st process.Status
	for _, p := range d.env.Sup.Status() {
		if p.Name == name {
			st = p
		}
	}
	return st
}

func (d *demo) kill() (string, error) {
	const kc = "kustomize-controller"
	apps, err := d.kustomization("apps")
	if err != nil {
		return "", err
	}
	applied := apps.Status.LastAppliedRevision
	pid := d.supervised(kc).PID
	// Held, so the supervisor restarts it only once the source side was shown working alone.
	d.env.Sup.Hold(kc)
	d.did("kill -9 %d (%s); the supervisor holds the restart for this step", pid, kc)
	if err := d.env.Sup.Kill(kc); err != nil {
		return "", err
	}
	if dev.Alive(pid) {
		return "", fmt.Errorf("%s (pid %d) still runs", kc, pid)
	}
	d.saw("%s pid %d is gone", kc, pid)

	cm, err := d.read("apps/payment-api/configmap.yaml")
	if err != nil {
		return "", err
	}
	rev, err := d.commit("payment-api: switch the currency to USD", map[string]string{
		"apps/payment-api/configmap.yaml": strings.Replace(cm, "CURRENCY: EUR", "CURRENCY: USD", 1)})
	if err != nil {
		return "", err
	}
	if err := d.eddy("reconcile", "source", "git", dev.SyncName); err != nil {
		return "", err
	}
	src := &sourcev1.GitRepository{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: dev.Namespace, Name: dev.SyncName}, src); err != nil {
		return "", err
	}
	if src.Status.Artifact == nil || src.Status.Artifact.Revision != rev {
		return "", fmt.Errorf("GitRepository has no artifact for %s", rev)
	}
	size, err := fetchVerify(d.ctx, src.Status.Artifact.URL, src.Status.Artifact.Digest)
	if err != nil {
		return "", err
	}
	d.saw("source-controller reconciled the new commit alone: artifact %s, served at %s (%d bytes, digest verified)",
		short(rev), src.Status.Artifact.URL, size)
	if apps, err = d.kustomization("apps"); err != nil {
		return "", err
	}
	if apps.Status.LastAppliedRevision != applied {
		return "", fmt.Errorf("Kustomization apps moved to %s while kustomize-controller was down", apps.Status.LastAppliedRevision)
	}
	d.saw("Kustomization apps still at %s, nobody applies while kustomize-controller is down", short(applied))

	d.did("release the restart: the supervisor starts %s again, as a kubelet would", kc)
	t := time.Now()
	d.env.Sup.Release(kc)
	if _, err := d.waitApplied("apps", rev); err != nil {
		return "", err
	}
	took := time.Since(t).Round(100 * time.Millisecond)
	st := d.supervised(kc)
	d.saw("%s restarted (pid %d, restarts %d); Kustomization apps applied %s %s after the restart (includes taking over the leader-election lease)",
		kc, st.PID, st.Restarts, short(rev), took)
	currency, err := d.configValue("payment-config", "CURRENCY")
	if err != nil {
		return "", err
	}
	if currency != "USD" {
		return "", fmt.Errorf("ConfigMap payment-config has CURRENCY %q, want USD", currency)
	}
	n, err := d.checkNoOrphans()
	if err != nil {
		return "", err
	}
	d.saw("ConfigMap payment-config has CURRENCY USD; %d inventory entries, no duplicates; every object labelled by Kustomization apps is in the inventory and vice versa", n)
	return fmt.Sprintf("source-controller served %s alone; after the restart apps converged in %s, %d objects, no duplicate or orphan", short(rev), took, n), nil
}

// checkNoOrphans compares the apps inventory with the objects in the
// cluster labelled as applied by it, for every kind the example uses.
func (d *demo) checkNoOrphans() (int, error) {
	apps, err := d.kustomization("apps")
	if err != nil {
		return 0, err
	}
	inv := map[string]bool{}
	for _, e := range apps.Status.Inventory.Entries {
		if inv[e.ID] {
			return 0, fmt.Errorf("inventory lists %s twice", e.ID)
		}
		inv[e.ID] = true
	}
	labels := client.MatchingLabels{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": dev.Namespace}
	found := map[string]bool{}
	add := func(ns, name, group, kind string) error {
		id := ns + "_" + name + "_" + group + "_" + kind
		if found[id] {
			return fmt.Errorf("%s found twice", id)
		}
		found[id] = true
		return nil
	}
	lists := []struct {
		list        client.ObjectList
		group, kind string
	}{
		{&corev1.NamespaceList{}, "", "Namespace"},
		{&corev1.ConfigMapList{}, "", "ConfigMap"},
		{&corev1.ServiceList{}, "", "Service"},
		{&appsv1.DeploymentList{}, "apps", "Deployment"},
		{&helmv2.HelmReleaseList{}, helmv2.GroupVersion.Group, helmv2.HelmReleaseKind},
	}
	for _, l := range lists {
		if err := d.c.List(d.ctx, l.list, labels); err != nil {
			return 0, err
		}
		objs, err := apimeta.ExtractList(l.list)
		if err != nil {
			return 0, err
		}
		for _, o := range objs {
			m := o.(metav1.Object)
			if err := add(m.GetNamespace(), m.GetName(), l.group, l.kind); err != nil {
				return 0, err
			}
		}
	}
	for id := range found {
		if !inv[id] {
			return 0, fmt.Errorf("orphan: %s is labelled by Kustomization apps but not in its inventory", id)
		}
	}
	for id := range inv {
		if !found[id] {
			return 0, fmt.Errorf("inventory lists %s, which does not exist", id)
		}
	}
	return len(inv), nil
}

// fetchVerify downloads url and checks its sha256 against digest
// ("sha256:<hex>"); it returns the size in bytes.
func fetchVerify(ctx context.Context, url, digest string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		return 0, err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		return 0, fmt.Errorf("artifact digest %s, status says %s", got, digest)
	}
	return n, nil
}

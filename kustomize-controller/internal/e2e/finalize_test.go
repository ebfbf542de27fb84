package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// remoteToSelf sets k's spec.kubeConfig to a Secret "kubeconfig", created
// in k's namespace, holding the test cluster's own admin kubeconfig: a
// "remote" cluster that is this one.
func remoteToSelf(t *testing.T) func(*kustomizev1.Kustomization) {
	return func(k *kustomizev1.Kustomization) {
		data, err := os.ReadFile(env.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: k.Namespace},
			Data: map[string][]byte{"value": data}}
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		k.Spec.KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: s.Name}}
	}
}

// finalizeEvents are the PruneFailed event messages about k.
func finalizeEvents(t *testing.T, k *kustomizev1.Kustomization) []string {
	return testenv.KubeEvents(t, env.Client, k.Namespace, k.Name, meta.PruneFailedReason)
}

// A namespace being deleted loses the kubeConfig Secret of its
// Kustomization as soon as the namespace controller gets to it; the
// Kustomization is then released at once with a Warning naming what it
// leaves in place, instead of holding the namespace in Terminating.
func TestDeleteAfterKubeConfigSecretGoneReleases(t *testing.T) {
	startKustomizeController(t)
	_, k := setup(t, map[string]string{"cm.yaml": configMap("left", "  a: b\n")}, remoteToSelf(t))
	waitFor(t, k, "Ready through the kubeconfig", func() bool { return ready(k) })
	ctx := context.Background()
	// The namespace controller's order: the Secret may go first.
	if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: k.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, k, "the Kustomization released")
	want := fmt.Sprintf("Skipping pruning: KubeConfig secret '%s/kubeconfig' not found; 1 object of the inventory left in place: ConfigMap/%s/left",
		k.Namespace, k.Namespace)
	if evs := finalizeEvents(t, k); len(evs) != 1 || evs[0] != want {
		t.Errorf("events %q, want [%q]", evs, want)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: "left"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap should be left in place: %v", err)
	}
}

// Deleting the namespace itself: the API server refuses events in a
// namespace being deleted, so the Warning cannot be recorded there; the
// controller's log keeps the message naming what was left in place.
func TestNamespaceDeletionLogsWhatIsLeftInPlace(t *testing.T) {
	p := testenv.RunBinary(t, env, kcExe)
	_, k := setup(t, map[string]string{"cm.yaml": configMap("left", "  a: b\n")}, remoteToSelf(t))
	waitFor(t, k, "Ready through the kubeconfig", func() bool { return ready(k) })
	ctx := context.Background()
	// The namespace controller's order: the namespace Terminating, the
	// Secret gone, then the Kustomization.
	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: k.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, k, "the Kustomization released")
	want := fmt.Sprintf("Skipping pruning: KubeConfig secret '%s/kubeconfig' not found; 1 object of the inventory left in place: ConfigMap/%s/left",
		k.Namespace, k.Namespace)
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var logged bool
	for _, line := range strings.Split(string(b), "\n") {
		logged = logged || (strings.Contains(line, `"level":"error"`) && strings.Contains(line, want) && strings.Contains(line, k.Name))
	}
	if !logged {
		t.Errorf("no error log line says %q", want)
	}
}

// A Kustomization whose remote cluster stops answering keeps retrying the
// prune for its spec.timeout after the deletion, then is released with a
// Warning naming what it leaves in place.
func TestDeleteWithUnreachableClusterReleasedAfterTimeout(t *testing.T) {
	startKustomizeController(t)
	_, k := setup(t, map[string]string{"cm.yaml": configMap("left", "  a: b\n")}, func(k *kustomizev1.Kustomization) {
		remoteToSelf(t)(k)
		k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second} // the least a timeout counts for
	})
	waitFor(t, k, "Ready through the kubeconfig", func() bool { return ready(k) })
	ctx := context.Background()
	port, err := testenv.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(env.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		c.Server = fmt.Sprintf("https://127.0.0.1:%d", port)
	}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: "kubeconfig"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"value": data}
	if err := env.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := env.Client.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	unreachable := func() bool {
		for _, msg := range finalizeEvents(t, k) {
			if strings.Contains(msg, "is unreachable") && !strings.HasPrefix(msg, "Skipping") {
				return true
			}
		}
		return false
	}
	waitFor(t, k, "a PruneFailed event saying the cluster is unreachable", unreachable)
	testenv.WaitGone(t, env.Client, k, "the Kustomization released after its timeout")
	if took := time.Since(start); took < 25*time.Second {
		t.Errorf("released after %s, before the 30s timeout", took.Round(time.Second))
	}
	prefix := "Skipping pruning: still failing 30s after the deletion: remote cluster 'https://127.0.0.1:"
	suffix := fmt.Sprintf("; 1 object of the inventory left in place: ConfigMap/%s/left", k.Namespace)
	var found bool
	for _, msg := range finalizeEvents(t, k) {
		found = found || strings.HasPrefix(msg, prefix) && strings.HasSuffix(msg, suffix)
	}
	if !found {
		t.Errorf("no event %q...%q in %q", prefix, suffix, finalizeEvents(t, k))
	}
}

// A forged status.inventory (an entry that is no object id, one of a kind
// the API server does not know) does not hold the deletion: an object of
// an unknown kind cannot exist, so it counts as gone; the real one is pruned.
func TestDeleteWithForgedInventoryReleases(t *testing.T) {
	startKustomizeController(t)
	_, k := setup(t, map[string]string{"cm.yaml": configMap("pruned", "  a: b\n")}, nil)
	waitFor(t, k, "Ready", func() bool { return ready(k) })
	ctx := context.Background()
	base := k.DeepCopy()
	k.Status.Inventory.Entries = append(k.Status.Inventory.Entries,
		kustomizev1.ResourceRef{ID: "no object id", Version: "v1"},
		kustomizev1.ResourceRef{ID: k.Namespace + "_w_example.com_Widget", Version: "v1"})
	if err := env.Client.Status().Patch(ctx, k, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, k, "the Kustomization released")
	if evs := finalizeEvents(t, k); len(evs) != 0 {
		t.Errorf("events %q, want none: nothing was left in place", evs)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: "pruned"}}
	testenv.WaitGone(t, env.Client, cm, "the ConfigMap pruned")
}

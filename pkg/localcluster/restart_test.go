package localcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestRestartKeepsPortsAndData kills etcd, then kube-apiserver, and starts
// each again in place: a new process each time, on the same ports, and an
// object written before the restarts is read back through the same client.
func TestRestartKeepsPortsAndData(t *testing.T) {
	ctx := context.Background()
	c := start(t, localcluster.Options{})
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ports := c.Ports()
	for _, name := range []string{localcluster.Etcd, localcluster.KubeAPIServer} {
		before := pidOf(t, c, name)
		begin := time.Now()
		if err := c.Restart(ctx, name); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s restarted in %s", name, time.Since(begin).Round(time.Millisecond))
		if after := pidOf(t, c, name); after == before || alive(before) {
			t.Errorf("%s: pid %d before the restart, %d after (old one alive: %v)", name, before, after, alive(before))
		}
		got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
		if err != nil || got.Data["k"] != "v" {
			t.Fatalf("after restarting %s: ConfigMap %v, err %v", name, got.Data, err)
		}
	}
	if got := c.Ports(); len(got) != len(ports) || got[0] != ports[0] || got[2] != ports[2] {
		t.Errorf("ports %v after the restarts, want %v", got, ports)
	}
	if err := c.Restart(ctx, "kubelet"); err == nil {
		t.Error("restarting a component the cluster does not run succeeded")
	}
}

func pidOf(t *testing.T, c *localcluster.Cluster, name string) int {
	t.Helper()
	for _, comp := range c.Components() {
		if comp.Name == name {
			return comp.PID
		}
	}
	t.Fatalf("no component %s", name)
	return 0
}

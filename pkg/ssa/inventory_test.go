package ssa_test

import (
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestInventoryIDs(t *testing.T) {
	for id, want := range map[string]string{
		"default_svc__Service": "Service/default/svc",
		"_system__controller__kube-dns_rbac.authorization.k8s.io_ClusterRole": "ClusterRole/system:controller:kube-dns",
		"apps_web_apps_Deployment": "Deployment/apps/web",
	} {
		m, err := ssa.ParseID(id)
		if err != nil || m.String() != want || m.ID() != id {
			t.Errorf("ParseID(%q) = %v (%v), ID() %q; want %s", id, m, err, m.ID(), want)
		}
	}
	// A custom resource name may hold a single '_' (Flux's String writes it
	// as is); cli-utils refuses it, ParseID splits it from both ends.
	if m, err := ssa.ParseID("apps_my_web_example.com_Widget"); err != nil || m.Name != "my_web" || m.ID() != "apps_my_web_example.com_Widget" {
		t.Errorf("ParseID of a name with '_': %v, %v", m, err)
	}
	// A Role named "_:" is written "_____..." by ID, which reads back as ":_".
	if _, err := ssa.ParseID("__:_rbac.authorization.k8s.io_Role"); err == nil || err.Error() != `ambiguous inventory id "__:_rbac.authorization.k8s.io_Role"` {
		t.Errorf("ParseID of an ambiguous RBAC name: %v", err)
	}
	if _, err := ssa.ParseID("apps_web_Deployment"); err == nil || err.Error() != `invalid inventory id "apps_web_Deployment"` {
		t.Errorf("ParseID of three fields: %v", err)
	}
}

// Inventory ids come from the status of a Kustomization, which anyone who
// may edit its status writes: ParseID must not panic, and what it accepts
// reads back the same from its own ID.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"default_svc__Service", "_system__controller__kube-dns_rbac.authorization.k8s.io_ClusterRole",
		"apps_web_apps_Deployment", "", "_", "___", "a_b_c_d_e", "ns_a___g_K",
		"ns_my_widget_example.com_Widget", "ns_a:b_c_rbac.authorization.k8s.io_Role",
		"__:_rbac.authorization.k8s.io_Role"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		m, err := ssa.ParseID(id)
		if err != nil {
			return
		}
		if strings.Contains(m.Namespace, "_") || strings.Contains(m.GroupKind.Group, "_") || strings.Contains(m.GroupKind.Kind, "_") {
			t.Fatalf("ParseID(%q) = %#v: a field holds '_'", id, m)
		}
		again, err := ssa.ParseID(m.ID())
		if err != nil || again != m {
			t.Fatalf("ParseID(%q) = %#v, ID() %q reads back as %#v (%v)", id, m, m.ID(), again, err)
		}
	})
}

// BenchmarkStale: the inventory ids of a 5,000-object Kustomization read
// back and compared, as every reconcile with prune does.
func BenchmarkStale(b *testing.B) {
	var ids []string
	var applied []ssa.ObjMeta
	for i := range 5000 {
		m := ssa.ObjMeta{Namespace: "apps", Name: "web-" + strings.Repeat("x", i%7), GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}}
		m.Name += string(rune('a' + i%26))
		ids = append(ids, m.ID())
		applied = append(applied, m)
	}
	b.ResetTimer()
	for b.Loop() {
		ssa.Stale(ids, applied)
	}
}

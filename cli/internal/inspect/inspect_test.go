package inspect_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/inspect"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var env *testenv.Environment

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// ready sets obj's status to Ready=True for its generation (as a
// controller would), through the status subresource.
func ready(t *testing.T, obj client.Object, conds *[]metav1.Condition, observed *int64) {
	t.Helper()
	apimeta.SetStatusCondition(conds, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: meta.SucceededReason, Message: "applied", ObservedGeneration: obj.GetGeneration()})
	*observed = obj.GetGeneration()
	if err := env.Client.Status().Update(context.Background(), obj); err != nil {
		t.Fatalf("status of %s: %v", obj.GetName(), err)
	}
}

func entry(t *testing.T, gk schema.GroupKind, version, ns, name string) kustomizev1.ResourceRef {
	t.Helper()
	return kustomizev1.ResourceRef{ID: ssa.ObjMeta{Namespace: ns, Name: name, GroupKind: gk}.ID(), Version: version}
}

func kustomization(ns, name string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "repo"}}}
}

// flat lists a tree as "Kind/ns/name health message" lines, depth-first,
// indented two spaces per level.
func flat(n *inspect.Node, indent string, out *[]string) {
	*out = append(*out, strings.TrimRight(fmt.Sprintf("%s%s %s %s %s", indent, n.APIVersion, n, n.Health, n.Message), " "))
	for _, c := range n.Children {
		flat(c, indent+"  ", out)
	}
}

// TestTree builds a Kustomization's tree on a real API server: inventory
// objects with their kstatus health, a nested Kustomization walked, a
// HelmRelease expanded from its Helm storage Secret, a deleted object
// NotFound; then, as a user who may not read Secrets, the Secret is
// "not readable" and the release's storage too, neither an error.
func TestTree(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	ns := testenv.NewNamespace(t, c, "tree-")
	cmGK, deployGK, secretGK := schema.GroupKind{Kind: "ConfigMap"}, schema.GroupKind{Group: "apps", Kind: "Deployment"},
		schema.GroupKind{Kind: "Secret"}
	ksGK := schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: "Kustomization"}
	hrGK := schema.GroupKind{Group: helmv2.GroupVersion.Group, Kind: "HelmRelease"}

	labels := map[string]string{"app": "web"}
	create(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm2"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hidden"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hr-sa"}},
		// No controller runs: the Deployment never becomes available.
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}},
	)
	// The Helm storage record of release hr v1: base64 of JSON with the manifest.
	record, _ := json.Marshal(map[string]string{"manifest": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: hr-sa\n"})
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.hr.v1"},
		Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(record))}})

	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hr"}, Spec: helmv2.HelmReleaseSpec{
		Interval: metav1.Duration{Duration: time.Hour},
		Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "app",
			SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"}}}}}
	create(t, hr)
	hr.Status.StorageNamespace = ns
	hr.Status.History = []helmv2.Snapshot{{Name: "hr", Namespace: ns, Version: 1, Status: "deployed", Digest: "sha256:0",
		ChartName: "app", ChartVersion: "1.0.0", ConfigDigest: "sha256:0",
		FirstDeployed: metav1.Now(), LastDeployed: metav1.Now()}}
	ready(t, hr, &hr.Status.Conditions, &hr.Status.ObservedGeneration)

	child := kustomization(ns, "child")
	create(t, child)
	child.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{entry(t, cmGK, "v1", ns, "cm2")}}
	ready(t, child, &child.Status.Conditions, &child.Status.ObservedGeneration)

	root := kustomization(ns, "root")
	create(t, root)
	root.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		entry(t, cmGK, "v1", ns, "cm"),
		entry(t, deployGK, "v1", ns, "web"),
		entry(t, cmGK, "v1", ns, "gone"),
		entry(t, secretGK, "v1", ns, "hidden"),
		entry(t, ksGK, "v1", ns, "root"), // itself: left out
		entry(t, ksGK, "v1", ns, "child"),
		entry(t, hrGK, "v2", ns, "hr"),
	}}
	ready(t, root, &root.Status.Conditions, &root.Status.ObservedGeneration)

	check := func(t *testing.T, c client.Client, want []string) {
		t.Helper()
		tree, err := inspect.Tree(ctx, c, "Kustomization", ns, "root")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		flat(tree, "", &got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	ksAV, hrAV := kustomizev1.GroupVersion.String(), helmv2.GroupVersion.String()
	t.Run("admin", func(t *testing.T) {
		check(t, c, []string{
			ksAV + " Kustomization/" + ns + "/root Current Resource is Ready",
			"  v1 ConfigMap/" + ns + "/cm Current Resource is always ready",
			"  apps/v1 Deployment/" + ns + "/web InProgress Replicas: 0/1",
			"  v1 ConfigMap/" + ns + "/gone NotFound",
			"  v1 Secret/" + ns + "/hidden Current Resource is always ready",
			"  " + ksAV + " Kustomization/" + ns + "/child Current Resource is Ready",
			"    v1 ConfigMap/" + ns + "/cm2 Current Resource is always ready",
			"  " + hrAV + " HelmRelease/" + ns + "/hr Current Resource is Ready",
			"    v1 ServiceAccount/" + ns + "/hr-sa Current Resource is current",
		})
	})

	t.Run("user who may not read Secrets", func(t *testing.T) {
		create(t,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps", "serviceaccounts"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{helmv2.GroupVersion.Group}, Resources: []string{"helmreleases"}, Verbs: []string{"get", "list", "watch"}},
			}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}}},
		)
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "viewer"}
		viewer, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		check(t, viewer, []string{
			ksAV + " Kustomization/" + ns + "/root Current Resource is Ready",
			"  v1 ConfigMap/" + ns + "/cm Current Resource is always ready",
			"  apps/v1 Deployment/" + ns + "/web InProgress Replicas: 0/1",
			"  v1 ConfigMap/" + ns + "/gone NotFound",
			"  v1 Secret/" + ns + "/hidden Unknown not readable",
			"  " + ksAV + " Kustomization/" + ns + "/child Current Resource is Ready",
			"    v1 ConfigMap/" + ns + "/cm2 Current Resource is always ready",
			"  " + hrAV + " HelmRelease/" + ns + "/hr Current Resource is Ready; Helm storage not readable",
		})
		// The root itself not readable is the API's error, for a 404.
		if _, err := inspect.Tree(ctx, viewer, "HelmRelease", "default", "hr"); err == nil {
			t.Error("Tree of a HelmRelease the user may not read: no error")
		}
	})

	t.Run("HelmRelease root and bad kind", func(t *testing.T) {
		tree, err := inspect.Tree(ctx, c, "HelmRelease", ns, "hr")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		flat(tree, "", &got)
		if want := []string{hrAV + " HelmRelease/" + ns + "/hr Current Resource is Ready",
			"  v1 ServiceAccount/" + ns + "/hr-sa Current Resource is current"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if _, err := inspect.Tree(ctx, c, "ConfigMap", ns, "cm"); err == nil || err.Error() != `kind "ConfigMap" has no tree: use Kustomization or HelmRelease` {
			t.Errorf("Tree of a ConfigMap: %v", err)
		}
	})
}

// artifactOf is a tar.gz of files (path → content) as source-controller
// stores it, and its digest.
func artifactOf(t *testing.T, files map[string]string) ([]byte, string) {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := artifact.WriteTarGz(&b, dir, artifact.TarOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), fmt.Sprintf("sha256:%x", sha256.Sum256(b.Bytes()))
}

// serve serves data at path on addr (host:0) until the test ends.
func serve(t *testing.T, addr, path string, data []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// TestDiffKustomization diffs a Kustomization built from its GitRepository's
// artifact against a real API server: an object to create, one drifted
// (the field, both values and the manager that wrote the live one), one
// pruned; the artifact fetched directly, then through the API server's
// service proxy when its URL names an in-cluster Service; a wrong digest
// is an error naming the artifact, not a local path.
func TestDiffKustomization(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	ns := testenv.NewNamespace(t, c, "diff-")
	data, digest := artifactOf(t, map[string]string{
		"app/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: ${COLOR}\n  size: big\n",
		"app/new.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\ndata:\n  a: b\n",
		"other/x.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-built\n",
	})
	path := fmt.Sprintf("/gitrepository/%s/repo/abc.tar.gz", ns)
	addr := serve(t, "127.0.0.1:0", path, data)

	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://git.example/repo", Interval: metav1.Duration{Duration: time.Hour}}}
	create(t, repo)
	setArtifact := func(url, digest string) {
		t.Helper()
		repo.Status.Artifact = &meta.Artifact{Path: "gitrepository/x/repo/abc.tar.gz", URL: url, Revision: "main@sha1:abc",
			Digest: digest, LastUpdateTime: metav1.Now(), Size: ptrTo(int64(len(data)))}
		ready(t, repo, &repo.Status.Conditions, &repo.Status.ObservedGeneration)
	}
	setArtifact("http://"+addr+path, digest)

	// The live state: settings applied by the controller, then its color
	// edited by someone else; old applied before and no longer in Git.
	owner := map[string]string{kustomize.NameLabel: "app", kustomize.NamespaceLabel: ns}
	settings := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings", Labels: owner},
		Data:       map[string]string{"color": "blue", "size": "big"}}
	if err := c.Patch(ctx, settings, client.Apply, client.FieldOwner(inspect.FieldManager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	settings.Data = map[string]string{"color": "red"}
	settings.ManagedFields = nil
	if err := c.Patch(ctx, settings, client.Apply, client.FieldOwner("kubectl-edit"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old", Labels: owner}})

	ks := kustomization(ns, "app")
	ks.Spec.Path = "./app"
	ks.Spec.TargetNamespace = ns
	ks.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"COLOR": "blue"}}
	create(t, ks)
	cmGK := schema.GroupKind{Kind: "ConfigMap"}
	ks.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
		entry(t, cmGK, "v1", ns, "settings"), entry(t, cmGK, "v1", ns, "old")}}
	ready(t, ks, &ks.Status.Conditions, &ks.Status.ObservedGeneration)

	want := []string{
		"ConfigMap/" + ns + "/new created",
		"ConfigMap/" + ns + `/settings configured: .data.color "blue" → "red" (by kubectl-edit)`,
		"ConfigMap/" + ns + "/old deleted",
	}
	check := func(t *testing.T) {
		t.Helper()
		rev, diff, err := inspect.DiffKustomization(ctx, env.Config, c, ks)
		if err != nil {
			t.Fatal(err)
		}
		if rev != "main@sha1:abc" {
			t.Errorf("revision %q", rev)
		}
		var got []string
		for _, d := range diff {
			line := d.String() + " " + d.Action
			var fields []string
			for _, f := range d.Fields {
				fields = append(fields, f.String())
			}
			if len(fields) > 0 {
				line += ": " + strings.Join(fields, ", ")
			}
			got = append(got, line)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	t.Run("artifact fetched directly", check)

	t.Run("wrong digest", func(t *testing.T) {
		setArtifact("http://"+addr+path, fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("other"))))
		defer setArtifact("http://"+addr+path, digest)
		_, _, err := inspect.DiffKustomization(ctx, env.Config, c, ks)
		if !errors.Is(err, artifact.ErrDigestMismatch) {
			t.Fatalf("err = %v, want a digest mismatch", err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "GitRepository/"+ns+"/repo artifact main@sha1:abc: ") || !strings.Contains(msg, "http://"+addr+path) ||
			strings.Contains(msg, os.TempDir()) {
			t.Errorf("error %q: want it to name the source, revision and URL, and no local path", msg)
		}
	})

	t.Run("artifact through the API server's service proxy", func(t *testing.T) {
		// The API server refuses to proxy to loopback addresses: the
		// artifact server listens on the host's first other address.
		ip := hostIP(t)
		addr := serve(t, net.JoinHostPort(ip, "0"), path, data)
		_, port, _ := net.SplitHostPort(addr)
		n, err := strconv.Atoi(port)
		if err != nil {
			t.Fatal(err)
		}
		p := int32(n)
		create(t,
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "artifacts"}, Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(p)}}}},
			// No controller manager runs to make the namespace's default account.
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "artifacts"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "source-controller"}}}},
		)
		// No kubelet runs: the Pod's address is set as the kubelet would.
		pod := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "artifacts"}, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		// The service proxy reads EndpointSlices and proxies only to
		// addresses of Pods.
		create(t,
			&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "artifacts-1",
				Labels: map[string]string{discoveryv1.LabelServiceName: "artifacts"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)},
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "artifacts", UID: pod.UID}}},
				Ports: []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: &p}}})
		host := fmt.Sprintf("artifacts.%s.svc.cluster.local.", ns)
		if addrs, err := net.LookupHost(host); err == nil {
			t.Fatalf("%s resolves here (%v): the test would not go through the proxy", host, addrs)
		}
		setArtifact("http://"+host+path, digest)
		check(t)
	})
}

// hostIP is an IPv4 address of this host other than loopback.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("no non-loopback IPv4 address on this host for the API server to proxy to")
	return ""
}

func ptrTo[T any](v T) *T { return &v }

// TestTreeCycle: Kustomizations that apply each other (a path that covers
// the parent's manifest too) give a finite tree, the repeated one shown
// with MessageCycle, with and without health.
func TestTreeCycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := env.Client
	ns := testenv.NewNamespace(t, c, "cycle-")
	ksGK := schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: "Kustomization"}
	a, b := kustomization(ns, "a"), kustomization(ns, "b")
	create(t, a, b)
	for _, p := range [][2]*kustomizev1.Kustomization{{a, b}, {b, a}} {
		p[0].Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
			entry(t, ksGK, "v1", ns, p[0].Name), entry(t, ksGK, "v1", ns, p[1].Name)}}
		if err := c.Status().Update(ctx, p[0]); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []inspect.TreeOptions{{}, {NoHealth: true}} {
		n, err := inspect.TreeWithOptions(ctx, c, "Kustomization", ns, "a", opts)
		if err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		var got []string
		flat(n, "", &got)
		if len(got) != 3 || !strings.Contains(got[1], "Kustomization/"+ns+"/b") || !strings.Contains(got[2], "Kustomization/"+ns+"/a") {
			t.Fatalf("%+v: tree\n%s", opts, strings.Join(got, "\n"))
		}
		if !opts.NoHealth && !strings.HasSuffix(got[2], inspect.MessageCycle) {
			t.Fatalf("the repeated node says not %q:\n%s", inspect.MessageCycle, strings.Join(got, "\n"))
		}
	}
}

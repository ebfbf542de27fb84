package dev

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/pkg/localcluster"
)

// TestControllerSpecShards: with --shards, a shard process is named
// <controller>-shard<i>, logs to its own file, has the main one's flags
// plus its selector, and source-controller's its own storage directory and
// port; the main processes skip labelled objects; notification-controller
// and an unsharded environment get no selector.
func TestControllerSpecShards(t *testing.T) {
	dir := t.TempDir()
	e := &Env{Opts: Options{Root: "/eddy", StateDir: dir, Shards: 2}, Cluster: &localcluster.Cluster{KubeconfigPath: "/k"}}
	e.state.EventsAddr = "http://127.0.0.1:1"
	arg := func(args []string, prefix string) string {
		for _, a := range args {
			if strings.HasPrefix(a, prefix) {
				return strings.TrimPrefix(a, prefix)
			}
		}
		return ""
	}
	for _, name := range ShardedControllers {
		main, _, err := e.controllerSpec(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := arg(main.Args, "--watch-label-selector="); got != "!sharding.fluxcd.io/key" {
			t.Errorf("%s selector %q", name, got)
		}
		shard, ports, err := e.controllerSpec(name, 2)
		if err != nil {
			t.Fatal(err)
		}
		if shard.Name != name+"-shard2" || shard.Bin != filepath.Join("/eddy", "bin", name) || shard.LogPath != filepath.Join(dir, "logs", name+"-shard2.log") {
			t.Errorf("shard 2 of %s: name %s, bin %s, log %s", name, shard.Name, shard.Bin, shard.LogPath)
		}
		if got := arg(shard.Args, "--watch-label-selector="); got != "sharding.fluxcd.io/key in (shard2)" {
			t.Errorf("%s selector %q", shard.Name, got)
		}
		for _, flag := range []string{"--kubeconfig=", "--enable-leader-election", "--events-addr=", "--log-encoding="} {
			if arg(shard.Args, flag) != arg(main.Args, flag) || !slices.ContainsFunc(shard.Args, func(a string) bool { return strings.HasPrefix(a, flag) }) {
				t.Errorf("%s flag %s differs from the main process's or is missing", shard.Name, flag)
			}
		}
		if arg(shard.Args, "--health-addr=") == arg(main.Args, "--health-addr=") || shard.HealthURL == main.HealthURL {
			t.Errorf("%s shares its health port with the main process", shard.Name)
		}
		if name == "source-controller" {
			storage := arg(shard.Args, "--storage-addr=")
			if arg(shard.Args, "--storage-path=") != filepath.Join(dir, "storage", "shard2") || storage == arg(main.Args, "--storage-addr=") ||
				arg(shard.Args, "--storage-adv-addr=") != storage || len(ports) != 3 {
				t.Errorf("%s storage flags %q, ports %v", shard.Name, shard.Args, ports)
			}
		}
	}
	nc, _, err := e.controllerSpec("notification-controller", 0)
	if err != nil || arg(nc.Args, "--watch-label-selector=") != "" {
		t.Errorf("notification-controller args %q, %v", nc.Args, err)
	}
	e.Opts.Shards = 0
	kc, _, err := e.controllerSpec("kustomize-controller", 0)
	if err != nil || arg(kc.Args, "--watch-label-selector=") != "" || kc.Name != "kustomize-controller" {
		t.Errorf("unsharded kustomize-controller %s args %q, %v", kc.Name, kc.Args, err)
	}
}

// TestApplicationControllerProcess: application-controller is eddy dev's
// fifth process, last to start, reconciling Argo CD's namespace argocd
// with its lease in flux-system as the others; the bundle eddy dev
// installs has its CRDs, its Deployment and that namespace, and no shard
// process of it runs.
func TestApplicationControllerProcess(t *testing.T) {
	if len(Controllers) != 5 || Controllers[4] != "application-controller" || slices.Contains(ShardedControllers, "application-controller") {
		t.Fatalf("Controllers %v, sharded %v", Controllers, ShardedControllers)
	}
	e := &Env{Opts: Options{Root: "/eddy", StateDir: t.TempDir(), Shards: 1}, Cluster: &localcluster.Cluster{KubeconfigPath: "/k"}}
	e.state.EventsAddr = "http://127.0.0.1:1"
	spec, ports, err := e.controllerSpec("application-controller", 0)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(spec.Args, " ")
	for _, want := range []string{"--namespace=argocd", "--events-addr=http://127.0.0.1:1", "--enable-leader-election", "--kubeconfig=/k"} {
		if !strings.Contains(args, want) {
			t.Errorf("application-controller args %q lack %s", spec.Args, want)
		}
	}
	if strings.Contains(args, "--watch-label-selector") || len(ports) != 2 || !slices.Equal(spec.Env, []string{"RUNTIME_NAMESPACE=flux-system"}) {
		t.Errorf("application-controller args %q, ports %v, env %v", spec.Args, ports, spec.Env)
	}
	if got := leaseName("application-controller", 1); got != "application-controller-leader-election" {
		t.Errorf("application-controller's lease %q", got)
	}
	objs, err := install.Objects(BundleOptions("v1"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range objs {
		if u.GetLabels()[install.ComponentLabel] == "application-controller" {
			names = append(names, u.GetKind()+"/"+u.GetName())
		}
	}
	slices.Sort(names)
	if want := []string{"CustomResourceDefinition/applications.argoproj.io", "CustomResourceDefinition/appprojects.argoproj.io",
		"Deployment/application-controller", "Namespace/argocd", "ServiceAccount/application-controller"}; !slices.Equal(names, want) {
		t.Errorf("eddy dev's bundle has of application-controller %v, want %v", names, want)
	}
}

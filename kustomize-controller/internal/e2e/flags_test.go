package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"sigs.k8s.io/yaml"
)

// fluxFlags are the flags each Flux controller defines, with a value of
// Flux's type, as read from Flux v2.10's sources: each controller's
// main.go, plus the flag sets it binds from fluxcd/pkg (runtime/client
// client.go and kubeconfig.go, runtime/logger, runtime/leaderelection,
// runtime/acl, runtime/controller rate_limiter.go and watch.go,
// runtime/features, runtime/jitter, cache/token.go, auth/controller_flags.go,
// artifact/config/flags.go). An empty value is passed as `--name=`.
var fluxFlags = map[string][]string{
	// fluxcd/kustomize-controller main.go
	"kustomize-controller": append(runtimeFlags("http://notification-controller.flux-system.svc.cluster.local./", "4"),
		"--no-cross-namespace-refs=true", "--insecure-kubeconfig-exec=false", "--insecure-kubeconfig-tls=false",
		"--watch-all-namespaces=true", "--watch-label-selector=sharding.fluxcd.io/key=shard1",
		"--watch-configs-label-selector=reconcile.fluxcd.io/watch=Enabled", "--interval-jitter-percentage=5",
		"--concurrent-ssa=4", "--requeue-dependency=30s", "--no-remote-bases=true", "--no-remote-bases", "--http-retry=9",
		"--default-service-account=default", "--default-decryption-service-account=sops", "--default-kubeconfig-service-account=remote",
		"--sops-age-secret=", "--sops-vault-configmap=", "--override-manager=", "--custom-apply-stage-kinds=",
		// internal/features/features.go, each gate at Flux's default
		"--feature-gates=CacheSecretsAndConfigMaps=false,DisableStatusPollerCache=true,DisableFailFastBehavior=false,"+
			"StrictPostBuildSubstitutions=true,GroupChangeLog=false,AdditiveCELDependencyCheck=false,ExternalArtifact=false,"+
			"CancelHealthCheckOnNewRevision=false,DisableConfigWatchers=false,DirectSourceFetch=false,MigrateAPIVersion=false,"+
			"ObjectLevelWorkloadIdentity=false"),
	// fluxcd/helm-controller main.go
	"helm-controller": append(runtimeFlags("http://notification-controller.flux-system.svc.cluster.local./", "4"),
		"--no-cross-namespace-refs=true", "--insecure-kubeconfig-exec=false", "--insecure-kubeconfig-tls=false",
		"--watch-all-namespaces=true", "--watch-label-selector=sharding.fluxcd.io/key=shard1",
		"--watch-configs-label-selector=reconcile.fluxcd.io/watch=Enabled", "--interval-jitter-percentage=5",
		"--requeue-dependency=30s", "--graceful-shutdown-timeout=600s", "--http-retry=9", "--http-timeout=30s",
		"--default-service-account=default", "--default-kubeconfig-service-account=remote",
		"--oom-watch-memory-threshold=95", "--oom-watch-interval=500ms", "--oom-watch-max-memory-path=/sys/fs/cgroup/memory.max",
		"--oom-watch-current-memory-path=/sys/fs/cgroup/memory.current", "--snapshot-digest-algo=sha256", "--override-manager=",
		// internal/features/features.go, each gate at Flux's default
		"--feature-gates=CacheSecretsAndConfigMaps=false,DetectDrift=false,CorrectDrift=false,AllowDNSLookups=false,OOMWatch=false,"+
			"AdoptLegacyReleases=false,DisableChartDigestTracking=false,AdditiveCELDependencyCheck=false,ExternalArtifact=false,"+
			"DisableConfigWatchers=false,DirectSourceFetch=false,UseHelm3Defaults=false,CancelHealthCheckOnNewRevision=false,"+
			"DefaultToRetryOnFailure=false,ObjectLevelWorkloadIdentity=false", "--feature-gates=OOMWatch=true"),
	// fluxcd/source-controller main.go and fluxcd/pkg artifact/config/flags.go
	"source-controller": append(runtimeFlags("http://notification-controller.flux-system.svc.cluster.local./", "2"),
		"--watch-all-namespaces=true", "--watch-label-selector=sharding.fluxcd.io/key=shard1",
		"--watch-configs-label-selector=reconcile.fluxcd.io/watch=Enabled", "--interval-jitter-percentage=5",
		"--helm-index-max-size=52428800", "--helm-chart-max-size=10485760", "--helm-chart-file-max-size=5242880",
		"--requeue-dependency=30s", "--helm-cache-max-size=10", "--helm-cache-ttl=60m", "--helm-cache-purge-interval=5m",
		"--ssh-kex-algos=curve25519-sha256,ecdh-sha2-nistp256", "--ssh-hostkey-algos=ssh-ed25519",
		"--default-service-account=default", "--storage-path=/data", "--storage-addr=:9090",
		"--storage-adv-addr=source-controller.flux-system.svc.cluster.local.", "--artifact-retention-ttl=60s",
		"--artifact-retention-records=2", "--artifact-digest-algo=sha256",
		"--feature-gates=CacheSecretsAndConfigMaps=false,ObjectLevelWorkloadIdentity=false"),
	// fluxcd/notification-controller main.go
	"notification-controller": append(runtimeFlags(":9090", "4"),
		"--no-cross-namespace-refs=true", "--receiverAddr=:9292", "--rate-limit-interval=5m", "--export-http-path-metrics=false",
		"--watch-all-namespaces=true", "--watch-configs-label-selector=reconcile.fluxcd.io/watch=Enabled",
		"--default-service-account=default",
		"--feature-gates=CacheSecretsAndConfigMaps=false,DisableConfigWatchers=false,ObjectLevelWorkloadIdentity=false"),
}

// runtimeFlags are the flags every Flux controller binds: its own address
// and concurrency flags and fluxcd/pkg's client, logger, leader-election,
// rate-limiter, feature-gate and token-cache flag sets.
func runtimeFlags(events, concurrent string) []string {
	return []string{"--metrics-addr=:8080", "--events-addr=" + events, "--health-addr=:9440", "--concurrent=" + concurrent,
		"--kube-api-qps=50", "--kube-api-burst=300", "--log-encoding=json", "--log-level=info",
		"--enable-leader-election=true", "--leader-election-release-on-cancel=true", "--leader-election-lease-duration=35s",
		"--leader-election-renew-deadline=30s", "--leader-election-retry-period=5s",
		"--min-retry-delay=750ms", "--max-retry-delay=15m", "--feature-gates=CacheSecretsAndConfigMaps=false",
		"--token-cache-max-size=100", "--token-cache-max-duration=1h"}
}

// builtController returns the built binary of the controller name.
func builtController(t *testing.T, name string) string {
	t.Helper()
	exe, err := testenv.BuildController(name, work)
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// versionCheck runs `<exe> --version args...` as `eddy dev up
// --controller-flags` checks flags: the flags are parsed and checked, and
// nothing touches a cluster.
func versionCheck(exe string, args ...string) (string, error) {
	cmd := exec.Command(exe, append([]string{"--version"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+os.DevNull)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestBinariesAcceptEveryFluxFlag: each of Flux's flags, with a value of
// its type, passes each built controller's flag parsing and checks.
func TestBinariesAcceptEveryFluxFlag(t *testing.T) {
	for _, name := range []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"} {
		exe := builtController(t, name)
		for _, f := range fluxFlags[name] {
			t.Run(name+"/"+f, func(t *testing.T) {
				if out, err := versionCheck(exe, f); err != nil || !strings.HasPrefix(out, name+" ") {
					t.Errorf("%s --version %s: %v\n%s", name, f, err, out)
				}
			})
		}
		t.Run(name+"/all at once", func(t *testing.T) {
			if out, err := versionCheck(exe, fluxFlags[name]...); err != nil {
				t.Errorf("%s --version <all Flux flags>: %v\n%s", name, err, out)
			}
		})
	}
}

// TestBinariesRefuseFluxFlagsTheyCannotHonour: a Flux flag naming a feature
// Eddy lacks stops the binary with exit 1 and one line naming the flag and
// why, already at `--version`; a value Flux's type refuses is refused too.
func TestBinariesRefuseFluxFlagsTheyCannotHonour(t *testing.T) {
	cases := []struct{ controller, flag, want string }{
		{"kustomize-controller", "--sops-age-secret=sops-age", "kustomize-controller: --sops-age-secret=sops-age: Eddy has no controller-wide SOPS key"},
		{"kustomize-controller", "--sops-vault-configmap=vaults", "kustomize-controller: --sops-vault-configmap=vaults: Eddy does not implement"},
		{"kustomize-controller", "--override-manager=kubectl-edit", "kustomize-controller: --override-manager=kubectl-edit: Eddy takes over"},
		{"kustomize-controller", "--custom-apply-stage-kinds=rbac.authorization.k8s.io/Role", "kustomize-controller: --custom-apply-stage-kinds=rbac.authorization.k8s.io/Role: Eddy applies in Flux's fixed stages"},
		{"helm-controller", "--override-manager=kubectl-edit", "helm-controller: --override-manager=kubectl-edit: Eddy's drift detection"},
		{"helm-controller", "--feature-gates=CorrectDrift=true", "helm-controller: --feature-gates=CorrectDrift=true: deprecated by Flux"},
		{"kustomize-controller", "--feature-gates=MigrateAPIVersion=true", "kustomize-controller: --feature-gates=MigrateAPIVersion=true: Eddy does not migrate"},
		{"source-controller", "--feature-gates=ObjectLevelWorkloadIdentity=true", "source-controller: --feature-gates=ObjectLevelWorkloadIdentity=true: Eddy does not implement object-level workload identity"},
	}
	for _, c := range cases {
		t.Run(c.controller+"/"+c.flag, func(t *testing.T) {
			out, err := versionCheck(builtController(t, c.controller), c.flag)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1; output:\n%s", err, out)
			}
			if strings.Contains(out, "\n") || !strings.HasPrefix(out, c.want) {
				t.Errorf("output %q, want one line starting %q", out, c.want)
			}
		})
	}
	for _, bad := range []string{"--token-cache-max-size=many", "--watch-configs-label-selector=a in (", "--no-remote-bases=maybe"} {
		t.Run("kustomize-controller/"+bad, func(t *testing.T) {
			if out, err := versionCheck(builtController(t, "kustomize-controller"), bad); err == nil {
				t.Errorf("accepted; output:\n%s", out)
			}
		})
	}
}

// recipeDir is Flux's multi-tenancy recipe (fluxcd/flux2-multi-tenancy).
func recipeDir(t *testing.T) string {
	return filepath.Join(testenv.TestdataDir(t), "repos", "flux2-multi-tenancy")
}

// recipeFlags reads the controller flags the recipe's clusters add to
// Flux's Deployments: the `--flag=value` of each JSON patch adding to
// /spec/template/spec/containers/0/args, by controller (of the four Eddy
// has) whose name the patch target's name pattern matches. Both clusters
// must add the same ones.
func recipeFlags(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(recipeDir(t), "clusters", "*", "flux-system", "kustomization.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cluster kustomization.yaml in the recipe (%v)", err)
	}
	var first map[string][]string
	for _, file := range files {
		got := patchedArgs(t, file)
		if first == nil {
			first = got
		} else if fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("%s adds %v, another cluster %v", file, got, first)
		}
	}
	if len(first["kustomize-controller"]) == 0 || len(first["helm-controller"]) == 0 {
		t.Fatalf("the recipe adds no flag to kustomize- or helm-controller: %v", first)
	}
	return first
}

func patchedArgs(t *testing.T, file string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Patches []struct {
			Patch  string
			Target struct{ Kind, Name string }
		}
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := map[string][]string{}
	for _, p := range k.Patches {
		var ops []struct {
			Op, Path string
			Value    json.RawMessage
		}
		if err := yaml.Unmarshal([]byte(p.Patch), &ops); err != nil {
			t.Fatalf("%s: patch %q: %v", file, p.Patch, err)
		}
		target := regexp.MustCompile("^(?:" + p.Target.Name + ")$")
		for _, op := range ops {
			var arg string
			if p.Target.Kind != "Deployment" || op.Op != "add" || !strings.HasSuffix(op.Path, "/args/-") || json.Unmarshal(op.Value, &arg) != nil {
				continue
			}
			for _, name := range []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"} {
				if target.MatchString(name) && !slices.Contains(out[name], arg) {
					out[name] = append(out[name], arg)
				}
			}
		}
	}
	return out
}

// TestRecipeFlagsStartTheBinaries: each built controller the multi-tenancy
// recipe patches starts with the recipe's flags (and a shard no object
// carries, so that it reconciles nothing here) and answers /readyz.
func TestRecipeFlagsStartTheBinaries(t *testing.T) {
	for name, args := range recipeFlags(t) {
		t.Run(name, func(t *testing.T) {
			args := append(slices.Clone(args), "--watch-label-selector=eddy.test/shard=none")
			switch name {
			case "notification-controller":
				ports := freePorts(t, 2)
				args = append(args, fmt.Sprintf("--events-addr=127.0.0.1:%d", ports[0]), fmt.Sprintf("--receiverAddr=127.0.0.1:%d", ports[1]))
			case "source-controller":
				port := freePorts(t, 1)[0]
				args = append(args, "--storage-path="+t.TempDir(), fmt.Sprintf("--storage-addr=127.0.0.1:%d", port))
			}
			t.Logf("%s %s", name, strings.Join(args, " "))
			testenv.RunBinary(t, env, builtController(t, name), args...)
		})
	}
}

// TestIgnoredFluxFlagsAreLoggedAtStartUp: a Flux flag Eddy accepts without
// Flux's effect, given, is named in one start-up log line saying what Eddy
// does instead; one at Eddy's behaviour (--no-remote-bases=true) is not.
func TestIgnoredFluxFlagsAreLoggedAtStartUp(t *testing.T) {
	p := testenv.RunBinary(t, env, builtController(t, "kustomize-controller"), "--watch-label-selector=eddy.test/shard=none",
		"--token-cache-max-size=5", "--no-remote-bases=false", "--feature-gates=GroupChangeLog=true")
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{`"flag":"--token-cache-max-size","value":"5","eddy":"Eddy caches each provider`,
		`"flag":"--no-remote-bases","value":"false","eddy":"Eddy never fetches remote bases`,
		`"flag":"--feature-gates=GroupChangeLog=true","eddy":"Eddy does not group`} {
		if !strings.Contains(log, want) {
			t.Errorf("start-up log lacks %s:\n%s", want, log)
		}
	}
	if strings.Count(log, "for Flux compatibility") != 3 {
		t.Errorf("want 3 compatibility lines:\n%s", log)
	}
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := localcluster.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The real flux CLI (v2.9.5, built into bin/flux by `make tools` from its Go
// module source) against Eddy: each command a Flux user runs day to day must
// exit 0 and print what it prints against Flux's own controllers.

// fluxCLI runs bin/flux against one kubeconfig.
type fluxCLI struct {
	t          *testing.T
	bin        string
	kubeconfig string
}

func newFluxCLI(t *testing.T, kubeconfig string) *fluxCLI {
	t.Helper()
	root, _ := built(t)
	bin := filepath.Join(root, "bin", "flux")
	if !fileExists(bin) {
		t.Fatal("bin/flux is missing: run `make tools` (tools/flux.sh builds the flux CLI)")
	}
	return &fluxCLI{t: t, bin: bin, kubeconfig: kubeconfig}
}

// on is f reporting to t (a subtest).
func (f *fluxCLI) on(t *testing.T) *fluxCLI {
	g := *f
	g.t = t
	return &g
}

// run runs flux and returns its combined output (flux prints its progress
// lines on stderr, tables on stdout), logged.
func (f *fluxCLI) run(args ...string) (string, error) {
	f.t.Helper()
	cmd := exec.Command(f.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.kubeconfig)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	f.t.Logf("$ flux %s   (%s, err=%v)\n%s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), err, out)
	return string(out), err
}

// must runs flux, fails the test unless it exits 0, and checks that the
// output has each of want (regular expressions, multi-line mode).
func (f *fluxCLI) must(args []string, want ...string) string {
	f.t.Helper()
	out, err := f.run(args...)
	if err != nil {
		f.t.Errorf("flux %s: %v", strings.Join(args, " "), err)
	}
	for _, w := range want {
		if !regexp.MustCompile("(?m)" + w).MatchString(out) {
			f.t.Errorf("flux %s: output has no line matching %q", strings.Join(args, " "), w)
		}
	}
	return out
}

// sha1Rev is a Git revision of branch main as flux prints it in progress
// lines, shortRev as its tables abbreviate it.
const (
	sha1Rev  = `main@sha1:[0-9a-f]{40}`
	shortRev = `main@sha1:[0-9a-f]{8}`
)

// TestFluxCLIE2E: `eddy dev up` on a Git copy of examples/platform-config,
// then the real flux CLI with KUBECONFIG pointing at the dev cluster: check, get,
// reconcile (with source), suspend and resume, tree, events, each exiting 0
// with the lines it prints against Flux; then the eddy lines of
// docs/helm-controller.md and docs/application-controller.md on the same
// environment (docs_commands_e2e_test.go).
func TestFluxCLIE2E(t *testing.T) {
	u := newUser(t)
	repo := examplesRepo(t)
	u.must("dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev")
	flux := newFluxCLI(t, filepath.Join(u.dir(), "cluster", "kubeconfig"))

	t.Run("check", func(t *testing.T) {
		flux := flux.on(t)
		flux.must([]string{"check"},
			`^✔ Kubernetes 1\.\d+\.\d+ >=1\.33\.0-0$`,
			`^✔ distribution: flux-\S+$`,
			`^✔ source-controller: deployment ready$`,
			`^✔ helm-controller: deployment ready$`,
			`^✔ gitrepositories\.source\.toolkit\.fluxcd\.io/v1$`,
			`^✔ alerts\.notification\.toolkit\.fluxcd\.io/v1$`,
			`^✔ all checks passed$`,
		)
	})
	t.Run("get all", func(t *testing.T) {
		flux := flux.on(t)
		flux.must([]string{"get", "all", "-A"},
			`^flux-system\s+gitrepository/flux-system\s+`+shortRev+`\s+False\s+True\s+stored artifact for revision '`+shortRev+`'`,
			`^flux-system\s+kustomization/flux-system\s+`+shortRev+`\s+False\s+True\s+Applied revision: `+shortRev,
			`^flux-system\s+kustomization/apps\s+`+shortRev+`\s+False\s+True\s+Applied revision: `+shortRev,
			`^flux-system\s+helmrelease/storefront\s+1\.0\.0\s+False\s+True\s+Helm install succeeded for release production/storefront\.v1 with chart storefront@1\.0\.0`,
			`^flux-system\s+helmchart/flux-system-storefront\s+1\.0\.0\s+False\s+True\s+packaged 'storefront' chart with version '1\.0\.0'`,
			`^flux-system\s+receiver/github\s+False\s+True\s+Receiver initialized for path: /hook/[0-9a-f]{64}`,
			`^flux-system\s+provider/alerts-sink\s+True\s+Provider is Ready`,
			`^flux-system\s+alert/platform\s+False\s+True\s+Alert is Ready`,
		)
	})
	t.Run("get hr", func(t *testing.T) {
		flux := flux.on(t)
		flux.must([]string{"get", "hr", "-A"},
			`^NAMESPACE\s+NAME\s+REVISION\s+SUSPENDED\s+READY\s+MESSAGE`,
			`^flux-system\s+storefront\s+1\.0\.0\s+False\s+True\s+Helm install succeeded for release production/storefront\.v1 with chart storefront@1\.0\.0`,
		)
	})
	t.Run("reconcile ks with source", func(t *testing.T) {
		flux := flux.on(t)
		flux.must([]string{"reconcile", "ks", "flux-system", "--with-source"},
			`^► annotating GitRepository flux-system in flux-system namespace`,
			`^✔ GitRepository annotated`,
			`^✔ fetched revision `+sha1Rev,
			`^► annotating Kustomization flux-system in flux-system namespace`,
			`^✔ Kustomization annotated`,
			`^✔ applied revision `+sha1Rev,
		)
	})
	t.Run("reconcile hr with source", func(t *testing.T) {
		flux := flux.on(t)
		flux.must([]string{"reconcile", "hr", "storefront", "--with-source"},
			`^► annotating GitRepository flux-system in flux-system namespace`,
			`^► annotating HelmChart flux-system-storefront in flux-system namespace`,
			`^✔ fetched revision 1\.0\.0`,
			`^► annotating HelmRelease storefront in flux-system namespace`,
			`^✔ applied revision 1\.0\.0`,
		)
	})
	t.Run("suspend and resume", func(t *testing.T) {
		flux := flux.on(t)
		flux.must([]string{"suspend", "ks", "apps"},
			`^► suspending kustomization apps in flux-system namespace`,
			`^✔ kustomization suspended`,
		)
		flux.must([]string{"get", "ks", "apps"}, `^apps\s+`+shortRev+`\s+True\s+True\s+`)
		flux.must([]string{"resume", "ks", "apps"},
			`^► resuming kustomization apps in flux-system namespace`,
			`^✔ kustomization resumed`,
			`^✔ Kustomization apps reconciliation completed`,
			`^✔ applied revision `+sha1Rev,
		)
		flux.must([]string{"get", "ks", "apps"}, `^apps\s+`+shortRev+`\s+False\s+True\s+`)
	})
	t.Run("tree", func(t *testing.T) {
		flux := flux.on(t)
		flux.must([]string{"tree", "ks", "flux-system"},
			`^Kustomization/flux-system/flux-system$`,
			`^├── Kustomization/flux-system/apps$`,
			`^│   ├── Namespace/production$`,
			`^│   ├── HelmRelease/flux-system/storefront$`,
			// the release's objects, read from its Helm storage Secret
			`^│   │   ├── ConfigMap/production/storefront-config$`,
			`^│   │   └── Deployment/production/storefront$`,
			`^│   ├── Deployment/production/cart-api$`,
			`^├── Receiver/flux-system/github$`,
			`^[├└]── Alert/flux-system/platform$`,
		)
	})
	t.Run("events", func(t *testing.T) {
		flux := flux.on(t)
		flux.must([]string{"events"},
			`^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE`,
			`\s+Normal\s+ReconciliationSucceeded\s+Kustomization/apps\s+`,
			`\s+Normal\s+NewArtifact\s+GitRepository/flux-system\s+stored artifact for commit 'initial'`,
			`\s+Normal\s+InstallSucceeded\s+HelmRelease/storefront\s+`,
		)
		flux.must([]string{"events", "--for", "Kustomization/apps"},
			`\s+Normal\s+ReconciliationSucceeded\s+Kustomization/apps\s+`,
			`\s+GitRepository/flux-system\s+`,
		)
	})
	// The same environment runs the lines of docs/ written for it, with eddy.
	t.Run("eddy runs helm-controller.md's HelmRelease lines", func(t *testing.T) { helmReleaseLines(t, u.on(t)) })
	t.Run("eddy dev syncs an Application from a linked checkout", func(t *testing.T) { applicationFromLinkedCheckout(t, u.on(t)) })
}

// fluxOnBootstrapped runs the real flux CLI against a cluster bootstrapped
// by `eddy bootstrap git` (its components and sync manifests in Git,
// applied by the Kustomization flux-system) at commit head: check sees a
// bootstrapped installation, get lists the sync objects at that commit,
// reconcile --with-source fetches and applies it. TestBootstrapGitE2E
// calls it on its cluster, so no second environment is started.
func fluxOnBootstrapped(t *testing.T, b *BootstrapEnv, head string) {
	rev := "main@sha1:" + head
	flux := newFluxCLI(t, b.Kubeconfig)
	flux.must([]string{"check"},
		`^✔ distribution: flux-\S+$`,
		`^✔ bootstrapped: true$`,
		`^✔ kustomize-controller: deployment ready$`,
		`^✔ kustomizations\.kustomize\.toolkit\.fluxcd\.io/v1$`,
		`^✔ all checks passed$`,
	)
	flux.must([]string{"get", "all", "-A"},
		`^flux-system\s+gitrepository/flux-system\s+`+regexp.QuoteMeta(rev[:18])+`\s+False\s+True\s+stored artifact for revision`,
		`^flux-system\s+kustomization/flux-system\s+`+regexp.QuoteMeta(rev[:18])+`\s+False\s+True\s+Applied revision: `,
	)
	flux.must([]string{"reconcile", "ks", "flux-system", "--with-source"},
		`^✔ fetched revision `+regexp.QuoteMeta(rev)+`$`,
		`^✔ applied revision `+regexp.QuoteMeta(rev)+`$`,
	)
}

package controller

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKilledMidUpgradeUnlocked kills a helm-controller binary (SIGKILL)
// while an upgrade waits for its Deployment, which leaves the release
// pending-upgrade in Helm's storage; a restarted binary unlocks it
// (PendingRelease "Unlocked Helm release ... in pending-upgrade state") and
// completes the upgrade. The binaries take only this test's objects (shard
// label), so the suite's shared binary stays out.
func TestKilledMidUpgradeUnlocked(t *testing.T) {
	t.Parallel()
	const shard = "killed"
	args := append(binaryFlags, "--watch-label-selector="+shardKey+"="+shard)
	p, err := testenv.StartController(env, exe, filepath.Join(t.TempDir(), "first.log"), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	ns, _, a := chartFixture(t)
	hr := newRelease(t, ns, "app", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Labels = map[string]string{shardKey: shard}
		hr.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Minute}
	})
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/app.v1 with chart podinfo@%s", ns, a.Revision))

	// No node matches: the upgrade waits for its new pods.
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"nodeSelector":{"type":"none"}}`) })
	waitFor(t, hr, "an upgrade waiting with release v2 pending-upgrade", func() bool {
		c := cond(hr, meta.ReconcilingCondition)
		return c != nil && strings.HasPrefix(c.Message, "Running 'upgrade' action") &&
			slices.ContainsFunc(releaseSecrets(t, ns, "app"), func(s corev1.Secret) bool {
				return s.Name == "sh.helm.release.v1.app.v2" && s.Labels["status"] == "pending-upgrade"
			})
	})
	p.Kill()

	// The fix gives the key the fake nodes' value: the three-way merge from
	// the last deployed release keeps what the failed one added, so the
	// key must be overwritten, not dropped.
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"nodeSelector":{"type":"kwok"}}`) })
	testenv.RunBinary(t, env, exe, args...)
	waitReady(t, hr, helmv2.UpgradeSucceededReason,
		fmt.Sprintf("Helm upgrade succeeded for release %s/app.v3 with chart podinfo@%s", ns, a.Revision))
	want := fmt.Sprintf("Unlocked Helm release %s/app.v2 with chart podinfo@%s in pending-upgrade state", ns, a.Revision)
	if ev := kubeEvents(t, ns, "app", helmv2.PendingReleaseReason); !slices.Contains(ev, want) {
		t.Errorf("PendingRelease events %q, want %q", ev, want)
	}
	var statuses []string
	for _, s := range hr.Status.History {
		statuses = append(statuses, fmt.Sprintf("v%d %s", s.Version, s.Status))
	}
	if got := strings.Join(statuses, ", "); got != "v3 deployed, v2 failed, v1 superseded" {
		t.Errorf("history %s", got)
	}
}

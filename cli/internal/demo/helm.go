package demo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Helm steps drive the example's HelmRelease flux-system/storefront
// (apps/storefront/release.yaml): the chart charts/storefront of the same
// Git repository, released as production/storefront, Helm storage in
// flux-system. The messages they check are Flux's (flux-contract-2.10.md
// §2.1).
const (
	releaseFile   = "apps/storefront/release.yaml"
	releaseName   = "production/storefront" // <namespace>/<name> of the Helm release
	banner        = `banner: "Welcome to the storefront"`
	storefrontCfg = "storefront-config"
)

var hrKey = types.NamespacedName{Namespace: dev.Namespace, Name: "storefront"}

func condition(hr *helmv2.HelmRelease, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(hr.Status.Conditions, t)
}

func isTrue(hr *helmv2.HelmRelease, t string) bool {
	c := condition(hr, t)
	return c != nil && c.Status == metav1.ConditionTrue
}

// readyNow is Ready=True for the HelmRelease's current generation.
func readyNow(hr *helmv2.HelmRelease) bool {
	c := condition(hr, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == hr.Generation &&
		hr.Status.ObservedGeneration == hr.Generation
}

// describe is a condition as `Type=Status Reason: message` on one line.
func describe(c *metav1.Condition) string {
	if c == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, strings.ReplaceAll(c.Message, "\n", " ⏎ "))
}

// waitRelease reads HelmRelease flux-system/storefront every pollInterval
// until cond holds, for at most timeout; the error says what was awaited
// and the last Ready condition.
func (d *demo) waitRelease(what string, timeout time.Duration, cond func(*helmv2.HelmRelease) bool) (*helmv2.HelmRelease, error) {
	hr := &helmv2.HelmRelease{}
	err := d.poll(timeout, func() (bool, error) {
		if err := d.c.Get(d.ctx, hrKey, hr); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(hr), nil
	})
	if err != nil && wait.Interrupted(err) && d.ctx.Err() == nil {
		return hr, fmt.Errorf("HelmRelease %s: no %s within %s; last %s", hrKey, what, timeout, describe(condition(hr, meta.ReadyCondition)))
	}
	return hr, err
}

// chartVersion reads the HelmChart helm-controller made for hr and returns
// its artifact revision: the chart version Flux's messages name.
func (d *demo) chartVersion(hr *helmv2.HelmRelease) (string, *sourcev1.HelmChart, error) {
	ns, name, ok := strings.Cut(hr.Status.HelmChart, "/")
	if !ok {
		return "", nil, fmt.Errorf("HelmRelease %s names no HelmChart in status.helmChart (%q)", hrKey, hr.Status.HelmChart)
	}
	hc := &sourcev1.HelmChart{}
	if err := d.c.Get(d.ctx, types.NamespacedName{Namespace: ns, Name: name}, hc); err != nil {
		return "", nil, fmt.Errorf("HelmChart %s: %w", hr.Status.HelmChart, err)
	}
	if hc.Status.Artifact == nil {
		return "", nil, fmt.Errorf("HelmChart %s has no artifact", hr.Status.HelmChart)
	}
	return hc.Status.Artifact.Revision, hc, nil
}

// sawHistory prints status.history, newest first, as `helm history` would.
func (d *demo) sawHistory(hr *helmv2.HelmRelease) {
	d.saw("status.history (newest first):")
	for _, s := range hr.Status.History {
		d.saw("  %s.v%d  %-10s %-8s chart %s@%s  config %s", releaseName, s.Version, s.Status, s.Action, s.ChartName, s.ChartVersion, shortDigest(s.ConfigDigest))
	}
}

func shortDigest(d string) string {
	if i := strings.Index(d, ":"); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

// helmStorage lists the release's Helm storage Secrets in flux-system (the
// storage namespace: the HelmRelease's) as `<version>:<status>`, oldest
// first: what `helm history` reads.
func (d *demo) helmStorage() ([]string, error) {
	l := &corev1.SecretList{}
	if err := d.c.List(d.ctx, l, client.InNamespace(dev.Namespace), client.MatchingLabels{"owner": "helm", "name": "storefront"}); err != nil {
		return nil, err
	}
	slices.SortFunc(l.Items, func(a, b corev1.Secret) int {
		var x, y int
		fmt.Sscan(a.Labels["version"], &x)
		fmt.Sscan(b.Labels["version"], &y)
		return x - y
	})
	var out []string
	for _, s := range l.Items {
		out = append(out, s.Name+" "+s.Labels["status"])
	}
	if len(out) == 0 {
		return nil, errors.New("no Helm storage Secret (owner=helm, name=storefront) in flux-system")
	}
	d.saw("Helm storage, Secrets in flux-system: %s", strings.Join(out, ", "))
	return out, nil
}

// latest is the newest snapshot of status.history.
func latest(hr *helmv2.HelmRelease) *helmv2.Snapshot {
	if len(hr.Status.History) == 0 {
		return nil
	}
	return &hr.Status.History[0]
}

// helmInstall: the first sync applied the HelmRelease (the Kustomization
// apps waits for its health); helm-controller made the HelmChart from the
// GitRepository, source-controller packaged the chart, and the release was
// installed. The five commits since (none touching the chart or the
// release) must have left release v1 alone.
func (d *demo) helmInstall() (string, error) {
	d.did("HelmRelease %s (%s): chart ./charts/storefront from GitRepository flux-system, released as %s", hrKey, releaseFile, releaseName)
	hr, err := d.waitRelease("Ready=True", 2*time.Minute, readyNow)
	if err != nil {
		return "", err
	}
	ver, hc, err := d.chartVersion(hr)
	if err != nil {
		return "", err
	}
	d.saw("HelmChart %s (made by helm-controller from spec.chart): %s; artifact revision %s",
		hr.Status.HelmChart, describe(apimeta.FindStatusCondition(hc.Status.Conditions, meta.ReadyCondition)), ver)
	ready := condition(hr, meta.ReadyCondition)
	want := fmt.Sprintf("Helm install succeeded for release %s.v1 with chart storefront@%s", releaseName, ver)
	d.saw("HelmRelease %s: %s", hrKey, describe(ready))
	if ready.Reason != helmv2.InstallSucceededReason || ready.Message != want {
		return "", fmt.Errorf("HelmRelease Ready is %s, want InstallSucceeded %q (did a commit that changed neither chart nor values upgrade it?)", describe(ready), want)
	}
	d.sawHistory(hr)
	if s := latest(hr); len(hr.Status.History) != 1 || s.Version != 1 || s.Status != "deployed" {
		return "", fmt.Errorf("status.history %+v, want release v1 deployed only", hr.Status.History)
	}
	if _, err := d.helmStorage(); err != nil {
		return "", err
	}
	ev, err := d.newEventOf(helmv2.HelmReleaseKind, hrKey.Name, helmv2.InstallSucceededReason, want, nil)
	if err != nil {
		return "", err
	}
	d.saw("event InstallSucceeded: %s", ev)
	nodes, err := d.waitAvailable("storefront", 2)
	if err != nil {
		return "", err
	}
	d.saw("Deployment production/storefront (rendered by Helm): 2/2 replicas available on %s", strings.Join(nodes, ","))
	return fmt.Sprintf("%s.v1 installed with chart storefront@%s (from Git); storefront 2/2 available", releaseName, ver), nil
}

// helmUpgrade commits a values change in release.yaml: a new banner and 3
// replicas. The Kustomization apps applies it and waits for the
// HelmRelease's health; helm-controller upgrades the release to v2.
func (d *demo) helmUpgrade() (string, error) {
	rel, err := d.read(releaseFile)
	if err != nil {
		return "", err
	}
	if !strings.Contains(rel, banner) {
		return "", fmt.Errorf("%s has no `%s`", releaseFile, banner)
	}
	hr0, err := d.waitRelease("Ready=True", time.Minute, readyNow)
	if err != nil {
		return "", err
	}
	const newBanner = "Winter sale on now"
	changed := strings.Replace(rel, banner, fmt.Sprintf("banner: %q\n    replicaCount: 3", newBanner), 1)
	rev, err := d.applied(d.commit("storefront: winter sale banner, 3 replicas", map[string]string{releaseFile: changed}))
	if err != nil {
		return "", err
	}
	next := latest(hr0).Version + 1
	hr, err := d.waitRelease(fmt.Sprintf("upgrade to v%d", next), 2*time.Minute, func(hr *helmv2.HelmRelease) bool {
		s := latest(hr)
		return hr.Generation > hr0.Generation && readyNow(hr) && s != nil && s.Version == next
	})
	if err != nil {
		return "", err
	}
	ver, _, err := d.chartVersion(hr)
	if err != nil {
		return "", err
	}
	want := fmt.Sprintf("Helm upgrade succeeded for release %s.v%d with chart storefront@%s", releaseName, next, ver)
	ready, released := condition(hr, meta.ReadyCondition), condition(hr, helmv2.ReleasedCondition)
	d.saw("HelmRelease %s generation %d: %s", hrKey, hr.Generation, describe(ready))
	d.saw("%s", describe(released))
	if ready.Message != want || released == nil || released.Status != metav1.ConditionTrue || released.Reason != helmv2.UpgradeSucceededReason {
		return "", fmt.Errorf("HelmRelease after the values change: %s, %s; want Released=True UpgradeSucceeded %q", describe(ready), describe(released), want)
	}
	d.sawHistory(hr)
	if len(hr.Status.History) < 2 || hr.Status.History[1].Status != "superseded" {
		return "", fmt.Errorf("status.history %+v: the previous release is not superseded", hr.Status.History)
	}
	if _, err := d.helmStorage(); err != nil {
		return "", err
	}
	shown, err := d.configValue(storefrontCfg, "BANNER")
	if err != nil {
		return "", err
	}
	if shown != newBanner {
		return "", fmt.Errorf("ConfigMap production/%s has BANNER %q, want %q", storefrontCfg, shown, newBanner)
	}
	nodes, err := d.waitAvailable("storefront", 3)
	if err != nil {
		return "", err
	}
	d.saw("ConfigMap production/%s BANNER %q; Deployment production/storefront 3/3 available on %s; Kustomization apps Ready at %s",
		storefrontCfg, newBanner, strings.Join(nodes, ","), short(rev))
	return fmt.Sprintf("%s.v%d: Released UpgradeSucceeded, new banner, 3/3 available", releaseName, next), nil
}

// helmRollback commits values that make the Deployment unschedulable (a
// nodeSelector no node matches): the upgrade fails after the HelmRelease's
// timeout, upgrade remediation (retries 0, remediateLastFailure) rolls it
// back, and the release stalls until a new commit. Reverting that commit
// gives a new generation, which resets the failure counters: Ready again.
func (d *demo) helmRollback() (string, error) {
	rel, err := d.read(releaseFile)
	if err != nil {
		return "", err
	}
	if !strings.Contains(rel, "  values:\n") {
		return "", fmt.Errorf("%s has no `values:`", releaseFile)
	}
	hr0, err := d.waitRelease("Ready=True", time.Minute, readyNow)
	if err != nil {
		return "", err
	}
	last := latest(hr0)
	beforeFail, err := d.eventsOf(helmv2.HelmReleaseKind, hrKey.Name, helmv2.UpgradeFailedReason)
	if err != nil {
		return "", err
	}
	beforeRollback, err := d.eventsOf(helmv2.HelmReleaseKind, hrKey.Name, helmv2.RollbackSucceededReason)
	if err != nil {
		return "", err
	}
	broken := strings.Replace(rel, "  values:\n",
		"  values:\n    # No node has this label: the new Pods stay Pending.\n    nodeSelector:\n      eddy.dev/pool: gpu\n", 1)
	rev, err := d.commit("storefront: run on the gpu pool (no node has it)", map[string]string{releaseFile: broken})
	if err != nil {
		return "", err
	}
	// Not `reconcile ks apps`, which waits for a health check this commit fails.
	if err := d.eddy("reconcile", "source", "git", dev.SyncName); err != nil {
		return "", err
	}
	timeout := "the default 5m"
	if hr0.Spec.Timeout != nil {
		timeout = hr0.Spec.Timeout.Duration.String()
	}
	d.did("the Kustomization apps applies %s; helm-controller upgrades and waits up to the HelmRelease's timeout (%s) for the Deployment", short(rev), timeout)
	hr, err := d.waitRolledBack(hr0, last.Version, rev, beforeFail, beforeRollback)
	if err != nil {
		return "", err
	}
	rolledBack, err := d.sawRollbackServes(hr, last.Version)
	if err != nil {
		return "", err
	}
	if err := d.revertBroken(); err != nil {
		return "", err
	}
	return fmt.Sprintf("upgrade failed after %s, rolled back to v%d (%s.v%d, RollbackSucceeded); Ready again after git revert",
		timeout, last.Version, releaseName, rolledBack), nil
}

// waitRolledBack waits until the upgrade of hr0's release at rev failed
// and remediation rolled it back to version last, then stalled; it checks
// the conditions and the UpgradeFailed and RollbackSucceeded events not
// in beforeFail and beforeRollback, and returns the stalled HelmRelease.
func (d *demo) waitRolledBack(hr0 *helmv2.HelmRelease, last int, rev string, beforeFail, beforeRollback map[string]corev1.Event) (*helmv2.HelmRelease, error) {
	t := time.Now()
	hr, err := d.waitRelease("Remediated=True after the failed upgrade", 3*time.Minute, func(hr *helmv2.HelmRelease) bool {
		c := condition(hr, helmv2.RemediatedCondition)
		return hr.Generation > hr0.Generation && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == hr.Generation
	})
	if err != nil {
		return nil, err
	}
	ver, _, err := d.chartVersion(hr)
	if err != nil {
		return nil, err
	}
	released, remediated := condition(hr, helmv2.ReleasedCondition), condition(hr, helmv2.RemediatedCondition)
	d.saw("after %s: %s", time.Since(t).Round(100*time.Millisecond), describe(released))
	d.saw("%s", describe(remediated))
	failPrefix := fmt.Sprintf("Helm upgrade failed for release %s with chart storefront@%s: ", releaseName, ver)
	if released == nil || released.Status != metav1.ConditionFalse || released.Reason != helmv2.UpgradeFailedReason || !strings.HasPrefix(released.Message, failPrefix) {
		return nil, fmt.Errorf("%s; want Released=False UpgradeFailed %q…", describe(released), failPrefix)
	}
	rollback := fmt.Sprintf("Helm rollback to previous release %s.v%d with chart storefront@%s succeeded", releaseName, last, ver)
	if remediated.Reason != helmv2.RollbackSucceededReason || remediated.Message != rollback {
		return nil, fmt.Errorf("%s; want RollbackSucceeded %q", describe(remediated), rollback)
	}
	hr, err = d.waitRelease("Stalled=True RetriesExceeded", time.Minute, func(hr *helmv2.HelmRelease) bool {
		c := condition(hr, meta.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == helmv2.RetriesExceededReason
	})
	if err != nil {
		return nil, err
	}
	ready := condition(hr, meta.ReadyCondition)
	d.saw("%s; %s", describe(condition(hr, meta.StalledCondition)), describe(ready))
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != helmv2.RollbackSucceededReason {
		return nil, fmt.Errorf("%s, want Ready=False RollbackSucceeded", describe(ready))
	}
	if err := d.sawAppsUnhealthy(rev); err != nil {
		return nil, err
	}
	failed, err := d.newEventOf(helmv2.HelmReleaseKind, hrKey.Name, helmv2.UpgradeFailedReason, failPrefix, beforeFail)
	if err != nil {
		return nil, err
	}
	d.saw("event UpgradeFailed (Warning): %s", ui.OneLine(failed))
	rolled, err := d.newEventOf(helmv2.HelmReleaseKind, hrKey.Name, helmv2.RollbackSucceededReason, rollback, beforeRollback)
	if err != nil {
		return nil, err
	}
	d.saw("event RollbackSucceeded: %s", rolled)
	return hr, nil
}

// sawRollbackServes checks that hr's history holds the failed upgrade and,
// newest, a deployed rollback past version last, and that the Deployment
// the rollback rendered serves; it returns the rollback's version.
func (d *demo) sawRollbackServes(hr *helmv2.HelmRelease, last int) (int, error) {
	d.sawHistory(hr)
	var sawFailed bool
	for _, s := range hr.Status.History {
		sawFailed = sawFailed || s.Status == "failed"
	}
	if s := latest(hr); s == nil || s.Status != "deployed" || s.Version <= last+1 || !sawFailed {
		return 0, fmt.Errorf("status.history %+v: want the failed upgrade, then the rollback deployed", hr.Status.History)
	}
	if _, err := d.helmStorage(); err != nil {
		return 0, err
	}
	dep, err := d.deployment("storefront")
	if err != nil {
		return 0, err
	}
	if len(dep.Spec.Template.Spec.NodeSelector) != 0 {
		return 0, fmt.Errorf("Deployment production/storefront still has nodeSelector %v after the rollback", dep.Spec.Template.Spec.NodeSelector)
	}
	nodes, err := d.waitAvailable("storefront", 3)
	if err != nil {
		return 0, err
	}
	d.saw("Deployment production/storefront: no nodeSelector, 3/3 available on %s (the rolled-back release serves)", strings.Join(nodes, ","))
	return latest(hr).Version, nil
}

// revertBroken reverts the commit at HEAD and waits until the HelmRelease
// is Ready again with its failure counters reset.
func (d *demo) revertBroken() error {
	d.did("fix it in Git: revert the commit (a new generation resets the failure counters)")
	if _, err := d.git("revert", "--no-edit", "HEAD"); err != nil {
		return err
	}
	rev, err := d.applied(d.head())
	if err != nil {
		return err
	}
	hr, err := d.waitRelease("Ready=True after the revert", 2*time.Minute, func(hr *helmv2.HelmRelease) bool {
		return readyNow(hr) && condition(hr, meta.StalledCondition) == nil && condition(hr, helmv2.RemediatedCondition) == nil
	})
	if err != nil {
		return err
	}
	ready := condition(hr, meta.ReadyCondition)
	d.saw("HelmRelease %s at %s: %s; upgradeFailures %d, failures %d", hrKey, short(rev), describe(ready), hr.Status.UpgradeFailures, hr.Status.Failures)
	if hr.Status.UpgradeFailures != 0 {
		return fmt.Errorf("upgradeFailures %d after the revert, want 0", hr.Status.UpgradeFailures)
	}
	return nil
}

// sawAppsUnhealthy waits until the Kustomization apps, which applied rev
// and health-checks the HelmRelease (wait: true), reports it not Ready.
func (d *demo) sawAppsUnhealthy(rev string) error {
	k, err := d.waitKustomization("apps", time.Minute, "Kustomization apps to report the HelmRelease unhealthy at "+rev,
		func(k *kustomizev1.Kustomization, ready *metav1.Condition) bool {
			return ready != nil && ready.Status == metav1.ConditionFalse && k.Status.LastAttemptedRevision == rev &&
				strings.Contains(ready.Message, "HelmRelease/"+hrKey.String())
		})
	if err != nil {
		return err
	}
	ready := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
	d.saw("Kustomization apps (last attempted %s, last applied %s): Ready=%s %s: %s",
		short(k.Status.LastAttemptedRevision), short(k.Status.LastAppliedRevision), ready.Status, ready.Reason, ui.OneLine(ready.Message))
	return nil
}

// helmDrift edits a ConfigMap the release rendered, outside Git: with
// driftDetection enabled, helm-controller reports the drift (field, old →
// new, manager) and corrects it.
func (d *demo) helmDrift() (string, error) {
	beforeDrift, err := d.eventsOf(helmv2.HelmReleaseKind, hrKey.Name, helmv2.DriftDetectedReason)
	if err != nil {
		return "", err
	}
	beforeFix, err := d.eventsOf(helmv2.HelmReleaseKind, hrKey.Name, "DriftCorrected")
	if err != nil {
		return "", err
	}
	const edited = "Closed for maintenance"
	old, err := d.kubectlEdit(storefrontCfg, "BANNER", edited, func(old string) {
		d.did("edit ConfigMap production/%s (rendered by Helm): .data.BANNER %q → %q, as field manager kubectl-edit", storefrontCfg, old, edited)
	})
	if err != nil {
		return "", err
	}
	d.did("request a reconcile of HelmRelease storefront instead of waiting for its 10m interval")
	if err := d.eddy("reconcile", "hr", hrKey.Name); err != nil {
		return "", err
	}
	drifted, err := d.newEventOf(helmv2.HelmReleaseKind, hrKey.Name, helmv2.DriftDetectedReason, storefrontCfg, beforeDrift)
	if err != nil {
		return "", err
	}
	d.saw("event DriftDetected (Warning):")
	for _, l := range strings.Split(drifted, "\n") {
		d.saw("  %s", l)
	}
	fixed, err := d.newEventOf(helmv2.HelmReleaseKind, hrKey.Name, "DriftCorrected", storefrontCfg, beforeFix)
	if err != nil {
		return "", err
	}
	d.saw("event DriftCorrected: %s", strings.ReplaceAll(fixed, "\n", " ⏎ "))
	for _, want := range []string{"Cluster state of release " + releaseName + ".v", "has drifted from the desired state", "BANNER", "kubectl-edit"} {
		if !strings.Contains(drifted, want) {
			return "", fmt.Errorf("the DriftDetected event does not say %q: %s", want, drifted)
		}
	}
	now, err := d.configValue(storefrontCfg, "BANNER")
	if err != nil {
		return "", err
	}
	if now != old {
		return "", fmt.Errorf("ConfigMap production/%s has BANNER %q after the correction, want %q", storefrontCfg, now, old)
	}
	d.saw("ConfigMap production/%s has BANNER %q again", storefrontCfg, old)
	hr := &helmv2.HelmRelease{}
	if err := d.c.Get(d.ctx, hrKey, hr); err != nil {
		return "", err
	}
	d.saw("%s", describe(condition(hr, helmv2.DriftedCondition)))
	_, field, _ := strings.Cut(drifted, "): ")
	return fmt.Sprintf("DriftDetected %s; corrected, BANNER %q again", ui.OneLine(field), old), nil
}

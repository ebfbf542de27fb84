package dev

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// settled reports whether a Kustomization's last reconcile of its current
// generation (kinds.ReadyCondition) has ended: Ready=True, Stalled, or
// failed with a reason. Not the readiness of kinds.Ready: a failed sync has
// settled too, and the wait then says why. A Kustomization waiting for its
// dependencies (DependencyNotReady) has settled only while one of them is
// not Ready: once they all are, it is retried after --requeue-dependency
// and is waited for. ready holds, by namespace/name, whether each
// Kustomization is Ready (readyNow).
func settled(k *kustomizev1.Kustomization, ready map[string]bool) bool {
	cond, current := kinds.ReadyCondition(k)
	if cond == nil || !current || k.Status.LastAttemptedRevision == "" && cond.Reason != meta.DependencyNotReadyReason {
		return false
	}
	if cond.Status != metav1.ConditionTrue && cond.Reason == meta.DependencyNotReadyReason {
		for _, d := range k.Spec.DependsOn {
			ns := d.Namespace
			if ns == "" {
				ns = k.Namespace
			}
			if !ready[ns+"/"+d.Name] {
				return true
			}
		}
		return len(k.Spec.DependsOn) == 0
	}
	return cond.Status == metav1.ConditionTrue || cond.Reason != meta.ProgressingReason && cond.Reason != meta.ProgressingWithRetryReason
}

// readyNow reports whether o is Ready=True for its current generation
// (kinds.ReadyCondition), as kustomize-controller requires of a dependency
// before it applies the Kustomizations that dependsOn it.
func readyNow(o kinds.Object) bool {
	cond, current := kinds.ReadyCondition(o)
	return cond != nil && current && cond.Status == metav1.ConditionTrue
}

// hint says how to fix the usual causes of a failed first sync, from the
// Ready message; "" when it knows none.
func hint(msg string) string {
	switch {
	case strings.Contains(msg, "namespace not specified"):
		return "objects without metadata.namespace: set it in the repository, or pass --target-namespace"
	case strings.Contains(msg, "no matches for kind") && optionalHint(msg) != "":
		return optionalHint(msg)
	case strings.Contains(msg, "no matches for kind"):
		return "a kind whose CRD is not installed: eddy dev installs the CRDs of Eddy's controllers only (config/crd/bases: sources, Kustomization, HelmRelease, notifications); install other CRDs from a Kustomization that the one applying their objects dependsOn"
	case strings.Contains(msg, "kustomize build failed"), strings.Contains(msg, "yaml: "), strings.Contains(msg, "failed to decode"):
		return "the manifests do not parse: fix the file named in the message and commit"
	}
	return ""
}

// waitSynced prints each change of the sync objects' Ready status until the
// flux-system Kustomization and every Kustomization it created settled, then
// prints them. The error says which are not Ready and why.
func waitSynced(ctx context.Context, c client.Client, u *ui.UI, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	seen := map[string]string{}
	report := func(key string, conds []metav1.Condition) {
		ready, msg := status.ReadyOf(conds)
		if line := ready + " " + ui.OneLine(msg); seen[key] != line {
			seen[key] = line
			if ready == "True" {
				u.Success("%s: %s", key, ui.OneLine(msg))
			} else {
				u.Waiting("%s: %s", key, ui.OneLine(msg))
			}
		}
	}
	stop := u.Spin("waiting for the GitRepository and the Kustomizations to be Ready")
	defer stop()
	var kss *kustomizev1.KustomizationList
	var failed error // the repository cannot be fetched
	// A List that fails is tried again after the interval, like any read.
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		repos := &sourcev1.GitRepositoryList{}
		kss = &kustomizev1.KustomizationList{}
		if c.List(ctx, repos) != nil || c.List(ctx, kss) != nil {
			return false, nil
		}
		artifact := ""
		for _, o := range repos.Items {
			report("GitRepository "+o.Namespace+"/"+o.Name, o.Status.Conditions)
			if o.Namespace != Namespace || o.Name != SyncName {
				continue
			}
			if o.Status.Artifact != nil {
				artifact = o.Status.Artifact.Revision
			} else if r, current := kinds.ReadyCondition(&o); r != nil &&
				r.Status == metav1.ConditionFalse && current && r.Reason != meta.ProgressingReason {
				failed = fmt.Errorf("GitRepository %s/%s cannot fetch the repository: %s: %s", o.Namespace, o.Name, r.Reason, ui.OneLine(r.Message))
				return false, failed
			}
		}
		all, rootDone := true, false
		ready := map[string]bool{}
		for _, k := range kss.Items {
			ready[k.Namespace+"/"+k.Name] = readyNow(&k)
		}
		for i := range kss.Items {
			k := &kss.Items[i]
			report("Kustomization "+k.Namespace+"/"+k.Name, k.Status.Conditions)
			if !settled(k, ready) {
				all = false
			} else if k.Namespace == Namespace && k.Name == SyncName && artifact != "" && k.Status.LastAttemptedRevision == artifact {
				rootDone = true
			}
		}
		return rootDone && all, nil
	})
	stop()
	if failed != nil {
		return failed
	}
	fmt.Fprintln(u.Out())
	if ctx.Err() != nil {
		status.PrintSyncTable(context.Background(), u.Out(), c)
		return fmt.Errorf("not all Kustomizations settled within %s (see the MESSAGE column)", timeout)
	}
	var notReady []string
	sort.Slice(kss.Items, func(i, j int) bool { return kss.Items[i].Name < kss.Items[j].Name })
	for _, k := range kss.Items {
		if ready, _ := status.ReadyOf(k.Status.Conditions); ready != "True" {
			notReady = append(notReady, k.Namespace+"/"+k.Name)
		}
	}
	status.PrintSyncTable(ctx, u.Out(), c)
	if len(notReady) == 0 {
		return nil
	}
	for _, k := range kss.Items {
		if _, msg := status.ReadyOf(k.Status.Conditions); hint(msg) != "" {
			u.Warning("Kustomization %s/%s: %s", k.Namespace, k.Name, hint(msg))
		}
	}
	return fmt.Errorf("not Ready: Kustomization %s (see the MESSAGE column)", strings.Join(notReady, ", "))
}

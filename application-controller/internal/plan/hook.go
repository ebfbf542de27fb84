// Package plan holds the pure rules of an Argo CD sync: which rendered
// objects are hooks and in which phases they run, each object's sync wave
// and sync options, and the order of a sync's tasks in (phase, wave)
// steps (argocd-contract §4.1, §4.3, §4.4, §1.9, §1.12 and the per-object
// rules of §5). Nothing here calls the API server.
package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// Sync phases, in the order a sync runs them (argocd-contract §4.1).
// SyncFail runs only when the operation fails; PreDelete and PostDelete
// run only while an Application is deleted (§1.12), never in a sync.
const (
	PhasePreSync    = "PreSync"
	PhaseSync       = "Sync"
	PhasePostSync   = "PostSync"
	PhaseSyncFail   = "SyncFail"
	PhasePreDelete  = "PreDelete"
	PhasePostDelete = "PostDelete"
)

// Hook delete policies (argocd-contract §4.3).
const (
	PolicyBeforeHookCreation = "BeforeHookCreation"
	PolicyHookSucceeded      = "HookSucceeded"
	PolicyHookFailed         = "HookFailed"
)

// Annotations read here besides those of the api package: Helm's hook
// annotations, which Argo CD maps onto its own (argocd-contract §4.3).
const (
	AnnotationHelmHook             = "helm.sh/hook"
	AnnotationHelmHookWeight       = "helm.sh/hook-weight"
	AnnotationHelmHookDeletePolicy = "helm.sh/hook-delete-policy"
	AnnotationHelmResourcePolicy   = "helm.sh/resource-policy"
)

// hookSkip is the argocd.argoproj.io/hook value of an object never applied.
const hookSkip = "Skip"

// phaseOrder lists every phase in run order; its index is the phase's rank.
var phaseOrder = []string{PhasePreSync, PhaseSync, PhasePostSync, PhaseSyncFail, PhasePreDelete, PhasePostDelete}

// helmPhases maps helm.sh/hook values onto Argo CD phases. Values missing
// here (test, test-success, test-failure, pre-rollback, post-rollback) still
// make an object a hook, one without a phase.
var helmPhases = map[string]string{
	"pre-install":  PhasePreSync,
	"pre-upgrade":  PhasePreSync,
	"post-install": PhasePostSync,
	"post-upgrade": PhasePostSync,
	"pre-delete":   PhasePreDelete,
	"post-delete":  PhasePostDelete,
}

// helmPolicies maps helm.sh/hook-delete-policy values onto Argo CD's.
var helmPolicies = map[string]string{
	"before-hook-creation": PolicyBeforeHookCreation,
	"hook-succeeded":       PolicyHookSucceeded,
	"hook-failed":          PolicyHookFailed,
}

// csv returns the comma separated values of annotation key on u, trimmed,
// empty items and repeats dropped; nil when u is nil or has no such key.
func csv(u *unstructured.Unstructured, key string) []string {
	if u == nil {
		return nil
	}
	var out []string
	for item := range strings.SplitSeq(u.GetAnnotations()[key], ",") {
		item = strings.TrimSpace(item)
		if item != "" && !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	return out
}

// hasAnnotation is true when u carries annotation key, whatever its value.
func hasAnnotation(u *unstructured.Unstructured, key string) bool {
	_, ok := u.GetAnnotations()[key]
	return ok
}

// argoHookTypes returns the values of argocd.argoproj.io/hook that Argo CD
// knows (the six phases and Skip), in the annotation's order.
func argoHookTypes(u *unstructured.Unstructured) []string {
	var out []string
	for _, v := range csv(u, argov1.AnnotationHook) {
		if v == hookSkip || slices.Contains(phaseOrder, v) {
			out = append(out, v)
		}
	}
	return out
}

// Hook reports whether u is a hook and the phases it runs in, in run order
// without repeats (argocd-contract §4.1, §4.3). The phases come from the
// known values of argocd.argoproj.io/hook; when it has none, from
// helm.sh/hook mapped as the contract's table says. isHook is true when
// argocd.argoproj.io/hook is present (even for Skip or an unknown value) or
// helm.sh/hook is present and not "crd-install"; a hook with no phase (Skip,
// Helm test and rollback hooks) is never applied.
func Hook(u *unstructured.Unstructured) (phases []string, isHook bool) {
	if u == nil {
		return nil, false
	}
	types := argoHookTypes(u)
	if len(types) == 0 {
		for _, v := range csv(u, AnnotationHelmHook) {
			if p, ok := helmPhases[v]; ok {
				types = append(types, p)
			}
		}
	}
	for _, p := range phaseOrder {
		if slices.Contains(types, p) {
			phases = append(phases, p)
		}
	}
	if hasAnnotation(u, argov1.AnnotationHook) {
		return phases, true
	}
	helm, ok := u.GetAnnotations()[AnnotationHelmHook]
	return phases, ok && helm != "crd-install"
}

// Skip is true when argocd.argoproj.io/hook names Skip and no other known
// value: such an object is never applied (argocd-contract §4.1).
func Skip(u *unstructured.Unstructured) bool {
	if u == nil {
		return false
	}
	types := argoHookTypes(u)
	return len(types) == 1 && types[0] == hookSkip
}

// Wave is u's sync wave: the integer in argocd.argoproj.io/sync-wave (may
// be negative); when absent or not an integer, the integer in
// helm.sh/hook-weight, for any object, hook or not; else 0
// (argocd-contract §4.1).
func Wave(u *unstructured.Unstructured) int {
	if u == nil {
		return 0
	}
	for _, key := range []string{argov1.AnnotationSyncWave, AnnotationHelmHookWeight} {
		if text, ok := u.GetAnnotations()[key]; ok {
			if n, err := strconv.Atoi(text); err == nil {
				return n
			}
		}
	}
	return 0
}

// DeletePolicies returns a hook's delete policies: the known values of
// argocd.argoproj.io/hook-delete-policy followed by those of
// helm.sh/hook-delete-policy mapped onto Argo CD's, without repeats;
// [BeforeHookCreation] when neither gives one (argocd-contract §4.3).
func DeletePolicies(u *unstructured.Unstructured) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, v := range csv(u, argov1.AnnotationHookDeletePolicy) {
		switch v {
		case PolicyBeforeHookCreation, PolicyHookSucceeded, PolicyHookFailed:
			add(v)
		}
	}
	for _, v := range csv(u, AnnotationHelmHookDeletePolicy) {
		if p, ok := helmPolicies[v]; ok {
			add(p)
		}
	}
	if len(out) == 0 {
		out = []string{PolicyBeforeHookCreation}
	}
	return out
}

// HookName is the name given to a hook that has only metadata.generateName:
// generateName followed by the first 7 characters of revision (all of it
// when shorter), "-", the phase and "-", the operation's start in Unix
// seconds, the part after generateName lowercased so that it is a valid
// object name (argocd-contract §4.3). Example: "upgrade-sql-schema" +
// "0d521c6…" + PreSync at 1700000000 gives
// "upgrade-sql-schema0d521c6-presync-1700000000".
func HookName(generateName, revision, phase string, startedAt time.Time) string {
	if len(revision) > 7 {
		revision = revision[:7]
	}
	return generateName + strings.ToLower(fmt.Sprintf("%s-%s-%d", revision, phase, startedAt.Unix()))
}

// IgnoreExtraneous is true when argocd.argoproj.io/compare-options lists
// IgnoreExtraneous: the object, when it is to be pruned, stays OutOfSync
// itself but does not make its Application OutOfSync (argocd-contract §4.4).
func IgnoreExtraneous(u *unstructured.Unstructured) bool {
	return slices.Contains(csv(u, argov1.AnnotationCompareOptions), "IgnoreExtraneous")
}

// IgnoreHealth is true when argocd.argoproj.io/ignore-healthcheck is
// "true": the object is left out of its Application's health
// (argocd-contract §4.4).
func IgnoreHealth(u *unstructured.Unstructured) bool {
	return u != nil && u.GetAnnotations()[argov1.AnnotationIgnoreHealth] == "true"
}

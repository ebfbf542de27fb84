package controllerkit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Feature gates that Eddy implements, with Flux's names (each Flux
// controller's internal/features/features.go, Flux v2.10).
const (
	// CacheSecretsAndConfigMaps reads Secrets and ConfigMaps through the
	// manager's cache (watching them all) instead of from the API server.
	// Every controller; default false.
	CacheSecretsAndConfigMaps = "CacheSecretsAndConfigMaps"
	// StrictPostBuildSubstitutions fails a postBuild substitution on an
	// undefined variable without a default; off, it becomes "".
	// kustomize-controller; default true (opt-out since kustomize-controller v1.9).
	StrictPostBuildSubstitutions = "StrictPostBuildSubstitutions"
	// CancelHealthCheckOnNewRevision cancels a Kustomization's running
	// health checks (HealthCheckCanceled) when a new source revision or a
	// new generation arrives, so the new one is applied at once; off, the
	// wait goes on to its end first. kustomize-controller; default true,
	// beyond Flux (whose default is false): Eddy's health checks hold no
	// worker either way, and a fix should not wait for a timeout.
	CancelHealthCheckOnNewRevision = "CancelHealthCheckOnNewRevision"
	// DisableCommitStatusEvent stops the "Reconciliation finished…" event
	// (the one notification-controller turns into a Git commit status) that
	// a Kustomization emits after each successful reconcile, which can flood
	// the notification system when there are many. kustomize-controller;
	// default false (opt-in since kustomize-controller v1.9.6).
	DisableCommitStatusEvent = "DisableCommitStatusEvent"
	// DisableChartDigestTracking keeps a chart from an OCIRepository at its
	// own version instead of appending `+<first 12 hex of the digest>`, so a
	// chart re-pushed under the same version is not upgraded. helm-controller;
	// default false (opt-in since helm-controller v1.3.0).
	DisableChartDigestTracking = "DisableChartDigestTracking"
	// AdditiveCELDependencyCheck makes a dependsOn readyExpr an extra
	// condition on top of the usual readiness check of the dependency
	// instead of its replacement. kustomize-controller; default false.
	AdditiveCELDependencyCheck = "AdditiveCELDependencyCheck"
	// ExternalArtifact lets a Kustomization's sourceRef or a HelmRelease's
	// chartRef name an ExternalArtifact. kustomize-controller and
	// helm-controller; default false (opt-in since Flux v2.7).
	ExternalArtifact = "ExternalArtifact"
)

// gateDefaults are the defaults of the gates above: Flux's, except
// CancelHealthCheckOnNewRevision.
var gateDefaults = map[string]bool{
	CacheSecretsAndConfigMaps:      false,
	StrictPostBuildSubstitutions:   true,
	CancelHealthCheckOnNewRevision: true,
	DisableCommitStatusEvent:       false,
	DisableChartDigestTracking:     false,
	AdditiveCELDependencyCheck:     false,
	ExternalArtifact:               false,
}

// FeatureGates is Flux's `--feature-gates` flag: a comma-separated list of
// `Name=bool` pairs (`--feature-gates=StrictPostBuildSubstitutions=false,CacheSecretsAndConfigMaps=true`),
// over a controller's known gates and their defaults. A name the controller
// does not know, or a value that is not a boolean, fails flag parsing, so the
// binary exits non-zero at start-up. Flux compatible (fluxcd/pkg
// runtime/features): the same syntax and `feature-gate '<name>' not supported`.
type FeatureGates struct {
	known map[string]bool     // name ⇒ default
	set   map[string]bool     // from the flag
	flux  map[string]fluxGate // Flux's gates Eddy does not implement (FluxGate)
}

// NewFeatureGates returns the gates named in defaults (name ⇒ default).
func NewFeatureGates(defaults map[string]bool) *FeatureGates {
	return &FeatureGates{known: maps.Clone(defaults), set: map[string]bool{}}
}

// Enabled reports whether gate name is on: the flag's value, else Flux's
// default, also on a nil *FeatureGates (Options not bound to flags).
func (g *FeatureGates) Enabled(name string) bool {
	if g != nil {
		if v, ok := g.set[name]; ok {
			return v
		}
	}
	return gateDefaults[name]
}

// String is the flag's value as given, sorted by name.
func (g *FeatureGates) String() string {
	if g == nil {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(g.set)) {
		parts = append(parts, k+"="+strconv.FormatBool(g.set[k]))
	}
	return strings.Join(parts, ",")
}

// Set parses `Name=bool[,Name=bool...]`; a repeated flag adds to the set.
func (g *FeatureGates) Set(value string) error {
	for _, pair := range strings.Split(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, val, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return fmt.Errorf("missing bool value for %s", name)
		}
		b, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("invalid value of %s: %s", name, strings.TrimSpace(val))
		}
		if _, known := g.known[name]; !known && g.flux[name].why == "" {
			return fmt.Errorf("feature-gate '%s' not supported (supported: %s)", name, g.names())
		}
		g.set[name] = b
	}
	return nil
}

func (g *FeatureGates) names() string {
	var parts []string
	all := maps.Clone(g.known)
	for k, f := range g.flux {
		all[k] = f.def
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		parts = append(parts, fmt.Sprintf("%s=%t", k, all[k]))
	}
	return strings.Join(parts, ", ")
}

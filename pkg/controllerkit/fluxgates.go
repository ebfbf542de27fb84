package controllerkit

import (
	"maps"
	"slices"
	"strconv"
)

// fluxGate is a feature gate of Flux's controller that Eddy does not
// implement: --feature-gates takes its name, and the value on asks for
// what Flux does with it.
type fluxGate struct {
	def bool // Flux's default
	on  bool // the value asking for Flux's behaviour
	// refuse: on stops the binary (CheckFlags); otherwise on is logged.
	refuse bool
	why    string
}

// Why texts of the Flux gates that several controllers know (each Flux
// controller's internal/features/features.go and fluxcd/pkg's
// runtime/controller and auth feature gates, Flux v2.10).
const (
	// WhyNoConfigWatchers: Flux's DisableConfigWatchers=true is Eddy's behaviour.
	WhyNoConfigWatchers = "Eddy watches no ConfigMaps or Secrets; those an object refers to are read again at each of its reconciles"
	// WhyNoDirectSourceFetch: Flux's DirectSourceFetch tunes where sources are read from.
	WhyNoDirectSourceFetch = "Eddy reads source objects from its cache; the artifact itself is always fetched and verified"
)

// FluxGate makes --feature-gates take Flux's gate name (default def),
// which Eddy does not implement: the value on, given, is refused at
// start-up (CheckFlags) when refuse, else logged (LogFlags) with why; the
// other value is Eddy's behaviour. Call it after BindFlags.
func (o *Options) FluxGate(name string, def, on, refuse bool, why string) {
	if o.FeatureGates.flux == nil {
		o.FeatureGates.flux = map[string]fluxGate{}
	}
	o.FeatureGates.flux[name] = fluxGate{def: def, on: on, refuse: refuse, why: why}
}

// bindFluxGates adds the Flux gates every controller knows.
func (o *Options) bindFluxGates() {
	o.FluxGate("ObjectLevelWorkloadIdentity", false, true, true,
		"Eddy does not implement object-level workload identity (spec.serviceAccountName with a spec.provider is refused; the controller's own identity serves the providers)")
}

// gateFindings returns, for the Flux gates given with their value on, the
// refused ones (refuse true) or the ignored ones (refuse false), each as
// `feature-gates=<name>=<value>` and why.
func (o *Options) gateFindings(refuse bool) (flags, whys []string) {
	g := o.FeatureGates
	if g == nil {
		return nil, nil
	}
	for _, name := range slices.Sorted(maps.Keys(g.flux)) {
		f := g.flux[name]
		if v, ok := g.set[name]; ok && v == f.on && f.refuse == refuse {
			flags = append(flags, "feature-gates="+name+"="+strconv.FormatBool(v))
			whys = append(whys, f.why)
		}
	}
	return flags, whys
}

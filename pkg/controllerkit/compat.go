package controllerkit

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
)

// FlagKind is the type a Flux flag is parsed as, so that a value Flux would
// refuse (`--token-cache-max-size=many`) is refused here too.
type FlagKind int

const (
	// BoolFlag takes true or false, or no value (true).
	BoolFlag FlagKind = iota
	// StringFlag takes any text.
	StringFlag
	// IntFlag takes a decimal integer.
	IntFlag
	// DurationFlag takes a Go duration ("15m").
	DurationFlag
	// ListFlag takes text and may be repeated (Flux's string arrays and
	// comma-separated slices); the values are joined with commas.
	ListFlag
	// SelectorFlag takes a Kubernetes label selector.
	SelectorFlag
)

// compatFlag is a Flux flag Eddy parses without giving it Flux's effect.
type compatFlag struct {
	name, def, why string
	// refuse: a value other than def stops the binary (CheckFlags);
	// otherwise a set value is only logged (LogFlags).
	refuse bool
	// when, if set, limits the log line or the refusal to the values it
	// accepts (e.g. --no-remote-bases=false only).
	when  func(value string) bool
	value *compatValue
}

// compatValue is a compatFlag's flag.Value: it checks the text as kind and
// keeps it.
type compatValue struct {
	kind  FlagKind
	value string
	set   bool
}

func (v *compatValue) String() string {
	if v == nil {
		return ""
	}
	return v.value
}

// IsBoolFlag lets a BoolFlag be given without a value, as Flux's.
func (v *compatValue) IsBoolFlag() bool { return v.kind == BoolFlag }

func (v *compatValue) Set(s string) error {
	var err error
	switch v.kind {
	case BoolFlag:
		var b bool
		if b, err = strconv.ParseBool(s); err == nil {
			s = strconv.FormatBool(b)
		}
	case IntFlag:
		_, err = strconv.Atoi(s)
	case DurationFlag:
		_, err = time.ParseDuration(s)
	case SelectorFlag:
		_, err = labels.Parse(s)
	case ListFlag:
		if v.set && v.value != "" {
			s = v.value + "," + s
		}
	}
	if err != nil {
		return err
	}
	v.value, v.set = s, true
	return nil
}

// IgnoreFlag registers Flux's flag name (of kind, default def) on fs for a
// behaviour Eddy does differently: it parses as Flux's does, changes
// nothing, and when given it is logged at start-up (LogFlags) with why,
// which also ends its help text "accepted for Flux compatibility: <why>".
// when, if not nil, limits the log line to the values it accepts.
func (o *Options) IgnoreFlag(fs *flag.FlagSet, kind FlagKind, name, def, why string, when func(string) bool) {
	o.compatFlag(fs, compatFlag{name: name, def: def, why: why, when: when}, kind, "accepted for Flux compatibility: "+why)
}

// RefuseFlag registers Flux's flag name (of kind, default def) on fs for a
// feature Eddy does not have: its default is accepted, any other value
// stops the binary at start-up (CheckFlags: exit 1, one line naming the
// flag and why).
func (o *Options) RefuseFlag(fs *flag.FlagSet, kind FlagKind, name, def, why string) {
	o.compatFlag(fs, compatFlag{name: name, def: def, why: why, refuse: true}, kind,
		"accepted for Flux compatibility at its default only: "+why)
}

func (o *Options) compatFlag(fs *flag.FlagSet, f compatFlag, kind FlagKind, usage string) {
	f.value = &compatValue{kind: kind, value: f.def}
	o.compat = append(o.compat, f)
	fs.Var(f.value, f.name, usage)
}

// applies tells whether f was given on the command line with a value its
// log line or refusal is about.
func (f compatFlag) applies() bool {
	if !f.value.set {
		return false
	}
	if f.when != nil {
		return f.when(f.value.value)
	}
	return !f.refuse || f.value.value != f.def
}

// CheckFlags returns the error of the first refused flag given (RefuseFlag),
// `--<name>=<value>: <why>`, else of the first refused Flux gate given
// (FluxGate), `--feature-gates=<name>=<value>: <why>`, nil if none. controllerkit.Main calls it right
// after parsing, before --version, so `<binary> --version <flags>` checks
// them too.
func (o *Options) CheckFlags() error {
	for _, f := range o.compat {
		if f.refuse && f.applies() {
			return fmt.Errorf("--%s=%s: %s", f.name, f.value.value, f.why)
		}
	}
	if flags, whys := o.gateFindings(true); len(flags) > 0 {
		return fmt.Errorf("--%s: %s", flags[0], whys[0])
	}
	return nil
}

// LogFlags logs, one line each, the ignored flags given (IgnoreFlag): the
// flag, its value and what Eddy does instead.
func (o *Options) LogFlags(log logr.Logger) {
	for _, f := range o.compat {
		if !f.refuse && f.applies() {
			log.Info("flag accepted for Flux compatibility, without Flux's effect", "flag", "--"+f.name, "value", f.value.value, "eddy", f.why)
		}
	}
	flags, whys := o.gateFindings(false)
	for i := range flags {
		log.Info("feature gate accepted for Flux compatibility, without Flux's effect", "flag", "--"+flags[i], "eddy", whys[i])
	}
}

// IgnoredFlags returns the names of the ignored flags given (IgnoreFlag),
// sorted as registered, then the ignored Flux gates given with their value
// on (FluxGate) as `feature-gates=<name>=<value>`: what LogFlags logs.
func (o *Options) IgnoredFlags() []string {
	var names []string
	for _, f := range o.compat {
		if !f.refuse && f.applies() {
			names = append(names, f.name)
		}
	}
	flags, _ := o.gateFindings(false)
	return append(names, flags...)
}

// NoWorkloadIdentity is why Flux's service-account flags for cloud
// workload identity (--default-service-account of source- and
// notification-controller, --default-kubeconfig-service-account, ...) are
// ignored.
const NoWorkloadIdentity = "Flux uses it for object-level workload identity, which Eddy does not implement (spec.serviceAccountName with a spec.provider is refused)"

// bindFluxOnlyFlags registers the shared Flux runtime flags (fluxcd/pkg
// runtime and cache, contract §9) that tune something Eddy does not do.
func (o *Options) bindFluxOnlyFlags(fs *flag.FlagSet) {
	const noTokens = "Eddy caches each provider's token until it expires (pkg/cloudauth); these flags do not tune that cache"
	o.IgnoreFlag(fs, IntFlag, "token-cache-max-size", "100", noTokens, nil)
	o.IgnoreFlag(fs, DurationFlag, "token-cache-max-duration", "1h0m0s", noTokens, nil)
	o.IgnoreFlag(fs, SelectorFlag, "watch-configs-label-selector", "reconcile.fluxcd.io/watch=Enabled",
		"Eddy watches no ConfigMaps or Secrets; those an object refers to are read again at each of its reconciles (the value must still be a label selector)",
		func(v string) bool { return v != "reconcile.fluxcd.io/watch=Enabled" })
}

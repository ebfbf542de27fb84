package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// ControllerFlags are the extra command-line flags of each controller, by
// controller name (one of Controllers): appended after the flags eddy dev
// gives it, so they override those that are not reserved. A sharded
// controller's shard processes get its flags too.
type ControllerFlags map[string][]string

// reservedFlags are the flags eddy dev sets itself and reads back (ports,
// state paths, the cluster, JSON logs, leader election, sharding): a
// controller given another value would be unreachable or unreadable.
var reservedFlags = []string{"kubeconfig", "health-addr", "metrics-addr", "events-addr", "receiverAddr",
	"storage-path", "storage-addr", "storage-adv-addr", "enable-leader-election", "watch-label-selector", "log-encoding"}

// controllerFlagsFile keeps the flags across `eddy dev down` and `up`.
func controllerFlagsFile(dir string) string { return filepath.Join(dir, "controller-flags.json") }

// ParseControllerFlags parses --controller-flags values, each
// NAME=FLAGS: a controller name and its flags, separated by spaces (one
// argument each, so `--flag=value`, not `--flag value`). A NAME given
// more than once gets all its FLAGS; NAME= alone gives it none, which
// clears flags kept from an earlier `eddy dev up`. The error is one line
// naming the value.
func ParseControllerFlags(values []string) (ControllerFlags, error) {
	out := ControllerFlags{}
	for _, v := range values {
		name, flags, ok := strings.Cut(v, "=")
		if !ok || !slices.Contains(Controllers, name) {
			return nil, fmt.Errorf("--controller-flags %q: want NAME=FLAGS, NAME one of %s", v, strings.Join(Controllers, ", "))
		}
		if _, seen := out[name]; !seen {
			out[name] = []string{}
		}
		for _, f := range strings.Fields(flags) {
			if !strings.HasPrefix(f, "-") {
				return nil, fmt.Errorf("--controller-flags %q: %q is not a flag: give each flag as --name=value", v, f)
			}
			key, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
			if slices.Contains(reservedFlags, key) {
				return nil, fmt.Errorf("--controller-flags %q: eddy dev sets --%s itself", v, key)
			}
			out[name] = append(out[name], f)
		}
	}
	return out, nil
}

// Merge returns saved with the controllers named in given replaced by
// given's flags (none: removed).
func (saved ControllerFlags) Merge(given ControllerFlags) ControllerFlags {
	out := ControllerFlags{}
	for name, flags := range saved {
		out[name] = flags
	}
	for name, flags := range given {
		if len(flags) == 0 {
			delete(out, name)
		} else {
			out[name] = flags
		}
	}
	return out
}

// Args returns the flags as --controller-flags values, NAME=FLAGS, one per
// controller of Controllers (NAME= for one without flags), so that parsing
// them replaces every controller's flags.
func (f ControllerFlags) Args() []string {
	out := make([]string, 0, len(Controllers))
	for _, name := range Controllers {
		out = append(out, name+"="+strings.Join(f[name], " "))
	}
	return out
}

// Equal reports whether f and g give each controller the same flags.
func (f ControllerFlags) Equal(g ControllerFlags) bool {
	for _, name := range Controllers {
		if !slices.Equal(f[name], g[name]) {
			return false
		}
	}
	return true
}

// Lines returns one "NAME FLAGS" line per controller with flags, sorted.
func (f ControllerFlags) Lines() []string {
	var out []string
	for name, flags := range f {
		if len(flags) > 0 {
			out = append(out, name+" "+strings.Join(flags, " "))
		}
	}
	sort.Strings(out)
	return out
}

// forProcess returns the flags of the controller process procName
// (<controller> or <controller>-shard<i>).
func (f ControllerFlags) forProcess(procName string) []string {
	for name, flags := range f {
		if procName == name || strings.HasPrefix(procName, name+"-shard") {
			return flags
		}
	}
	return nil
}

// LoadControllerFlags reads the flags kept in the state directory dir;
// none when there is no file.
func LoadControllerFlags(dir string) (ControllerFlags, error) {
	data, err := os.ReadFile(controllerFlagsFile(dir))
	if errors.Is(err, os.ErrNotExist) {
		return ControllerFlags{}, nil
	}
	if err != nil {
		return nil, err
	}
	f := ControllerFlags{}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w (remove it, or pass --controller-flags for each controller)", controllerFlagsFile(dir), err)
	}
	return f, nil
}

// saveControllerFlags keeps f in the state directory dir (mode 0600),
// for the next `eddy dev up`.
func saveControllerFlags(dir string, f ControllerFlags) error {
	if len(f.Lines()) == 0 {
		if err := os.Remove(controllerFlagsFile(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(controllerFlagsFile(dir), data)
}

// resolveControllerFlags returns the flags of `eddy dev up` with the
// --controller-flags values given: those kept in dir, with the named
// controllers' replaced.
func resolveControllerFlags(dir string, given []string) (ControllerFlags, error) {
	g, err := ParseControllerFlags(given)
	if err != nil {
		return nil, err
	}
	saved, err := LoadControllerFlags(dir)
	if err != nil {
		return nil, err
	}
	return saved.Merge(g), nil
}

// checkControllerFlags runs each controller binary of root's bin/ that has
// flags in f with them and --version, which parses the flags and exits
// without touching a cluster: a flag the controller does not take (or a
// bad value, such as an unknown feature gate) fails here, with the
// controller's own one-line message, before anything starts.
func checkControllerFlags(root string, f ControllerFlags) error {
	for _, name := range Controllers {
		if len(f[name]) == 0 {
			continue
		}
		out, err := exec.Command(filepath.Join(root, "bin", name), append(slices.Clone(f[name]), "--version")...).CombinedOutput()
		if err != nil {
			first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			return fmt.Errorf("--controller-flags %s=%s: %s refuses them: %s", name, strings.Join(f[name], " "), name, first)
		}
	}
	return nil
}

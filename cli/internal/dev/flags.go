package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// ControllerFlags are the extra command-line flags of each controller, by
// controller name (one of flagControllers): appended after the flags eddy
// dev gives it, so they override those that are not reserved. A sharded
// controller's shard processes get its flags too.
type ControllerFlags map[string][]string

// flagControllers are the controllers --controller-flags can name:
// Controllers, then OptionalControllers (their flags are kept, and given
// whenever a repository makes eddy dev run them).
func flagControllers() []string {
	return append(slices.Clone(Controllers), optionalNames()...)
}

// reservedFlags are the flags eddy dev sets itself and reads back (ports,
// state paths, the cluster, JSON logs, leader election, sharding): a
// controller given another value would be unreachable or unreadable.
var reservedFlags = []string{"kubeconfig", "health-addr", "metrics-addr", "events-addr", "receiverAddr", "receiver-addr",
	"storage-path", "storage-addr", "storage-adv-addr", "enable-leader-election", "watch-label-selector", "log-encoding"}

// stoppingFlags make a controller print something and exit instead of
// running.
var stoppingFlags = []string{"help", "h", "version"}

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
		if !ok || !slices.Contains(flagControllers(), name) {
			return nil, fmt.Errorf("--controller-flags %q: want NAME=FLAGS, NAME one of %s", v, strings.Join(flagControllers(), ", "))
		}
		if _, seen := out[name]; !seen {
			out[name] = []string{}
		}
		for _, f := range strings.Fields(flags) {
			key, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
			// "-" and "--" end a controller's flags: what follows would
			// be ignored.
			if !strings.HasPrefix(f, "-") || key == "" {
				return nil, fmt.Errorf("--controller-flags %q: %q is not a flag: give each flag as --name=value", v, f)
			}
			if slices.Contains(reservedFlags, key) {
				return nil, fmt.Errorf("--controller-flags %q: eddy dev sets --%s itself", v, key)
			}
			if slices.Contains(stoppingFlags, key) {
				return nil, fmt.Errorf("--controller-flags %q: --%s makes the controller exit instead of running", v, key)
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
// controller of flagControllers (NAME= for one without flags), so that
// parsing them replaces every controller's flags.
func (f ControllerFlags) Args() []string {
	names := flagControllers()
	out := make([]string, 0, len(names))
	for _, name := range names {
		out = append(out, name+"="+strings.Join(f[name], " "))
	}
	return out
}

// Equal reports whether f and g give each controller the same flags.
func (f ControllerFlags) Equal(g ControllerFlags) bool {
	for _, name := range flagControllers() {
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

// Kept returns the "NAME FLAGS" lines of f's controllers not named in the
// --controller-flags values given: flags an earlier `eddy dev up` kept.
func (f ControllerFlags) Kept(given []string) []string {
	named := map[string]bool{}
	for _, v := range given {
		name, _, _ := strings.Cut(v, "=")
		named[name] = true
	}
	var out []string
	for _, l := range f.Lines() {
		if name, _, _ := strings.Cut(l, " "); !named[name] {
			out = append(out, l)
		}
	}
	return out
}

// checkControllerFlags runs each controller binary of root's bin/ that has
// flags in f with --version and them, which parses the flags and exits
// without touching a cluster: a flag the controller does not take (or a
// bad value, such as an unknown feature gate) fails here, with the
// controller's own one-line message, before anything starts. --version
// comes first and the cluster settings of the environment are dropped, so
// that no flag can make the check run a controller against the user's
// cluster. Refused flags kept from an earlier `eddy dev up` (not in
// given) come with how to clear them. An optional controller that is not
// built is not checked: it does not run (OptionalFor says so).
func checkControllerFlags(root string, f ControllerFlags, given []string) error {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "KUBERNETES_")
	})
	for _, name := range flagControllers() {
		bin := filepath.Join(root, "bin", name)
		if len(f[name]) == 0 || !slices.Contains(Controllers, name) && !fileExists(bin) {
			continue
		}
		cmd := exec.Command(bin, append([]string{"--version"}, f[name]...)...)
		cmd.Env = append(env, "KUBECONFIG="+os.DevNull)
		out, err := cmd.CombinedOutput()
		if err != nil {
			first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			err := fmt.Errorf("--controller-flags %s=%s: %s refuses them: %s", name, strings.Join(f[name], " "), name, first)
			if g, _ := ParseControllerFlags(given); g[name] == nil {
				// Not typed this time: the user may not remember them.
				err = fmt.Errorf("%w (kept from an earlier `eddy dev up`: clear them with --controller-flags %s=)", err, name)
			}
			return err
		}
	}
	return nil
}

// checkUIListen fails when listen (host:port) cannot be bound, saying how
// to pick another port: the UI is never moved to another port silently.
// Port 0 always passes.
func checkUIListen(listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--ui-listen %q: want host:port", listen)
	}
	if port == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("--ui-listen %s: the port is taken (%v): free it, or pick another with --ui-listen (127.0.0.1:0 for any free port)", listen, err)
	}
	return ln.Close()
}

package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eddyops/eddy/pkg/process"
)

// Phases of a dev environment, as written in its state file.
const (
	PhaseStarting = "starting"
	PhaseRunning  = "running"
	PhaseStopping = "stopping"
)

// State is what `eddy dev` writes to <state dir>/state.json while an
// environment runs; status and down read it.
type State struct {
	// PID is the process that owns the environment (foreground `eddy dev up`
	// or the detached `eddy dev supervise`); SIGTERM to it tears it down.
	PID       int       `json:"pid"`
	Phase     string    `json:"phase"`
	StartedAt time.Time `json:"startedAt"`
	// Kubeconfig is the absolute path of the admin kubeconfig.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// GitServer is the base URL of the local Git server; EventsAddr the
	// event endpoint the controllers post to.
	GitServer  string `json:"gitServer,omitempty"`
	EventsAddr string `json:"eventsAddr,omitempty"`
	// NotificationAddr is notification-controller's event server, where the
	// recorder at EventsAddr forwards every event; ReceiverURL the base URL
	// of its webhook receivers (a Receiver's URL is ReceiverURL +
	// status.webhookPath); AlertsSink the alerts sink's URL, if started.
	NotificationAddr string `json:"notificationAddr,omitempty"`
	ReceiverURL      string `json:"receiverURL,omitempty"`
	AlertsSink       string `json:"alertsSink,omitempty"`
	// UI is the web UI's URL (http://host:port/) when started with --ui;
	// the owner process serves it, with the admin kubeconfig.
	UI string `json:"ui,omitempty"`
	// WorkTree is where commits are picked up from (the user's repository or
	// the snapshot of a plain directory). ReadState takes it from sync.json,
	// which SetSync writes whenever the sync is pointed at a repository.
	WorkTree string `json:"workTree,omitempty"`
	// Shards is the number of shard processes per sharded controller
	// (`eddy dev up --shards`).
	Shards int `json:"shards,omitempty"`
	// ControllerFlags are the controllers' extra flags (--controller-flags).
	ControllerFlags ControllerFlags `json:"controllerFlags,omitempty"`
	// OptionalComponents are the optional controllers (OptionalControllers)
	// whose CRDs the bundle has: those the repository asked for.
	OptionalComponents []string `json:"optionalComponents,omitempty"`
	// Node is NodeReal for `eddy dev up --node real` (else kwok's nodes):
	// the controllers run as pods, from the images Registry (host:port)
	// serves, Images (<name>:<tag>) with the controllers' ImageDigests.
	Node         string            `json:"node,omitempty"`
	Registry     string            `json:"registry,omitempty"`
	Images       []string          `json:"images,omitempty"`
	ImageDigests map[string]string `json:"imageDigests,omitempty"`
	// Ports are every loopback port the environment listens on.
	Ports []int `json:"ports,omitempty"`
	// Cluster are the local cluster's processes; Controllers the supervised ones.
	Cluster     []ClusterProc    `json:"cluster,omitempty"`
	Controllers []process.Status `json:"controllers,omitempty"`
}

// ClusterProc is one process of the local cluster.
type ClusterProc struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Log  string `json:"log"`
}

// DefaultStateDir is $XDG_STATE_HOME/eddy/dev, else ~/.local/state/eddy/dev.
func DefaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "eddy", "dev"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: set XDG_STATE_HOME (%v)", err)
	}
	return filepath.Join(home, ".local", "state", "eddy", "dev"), nil
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// syncPath is the file that records what the environment syncs. It is
// apart from state.json, which only the environment's owner writes (it
// rewrites it on each controller restart), so `eddy dev up` on a running
// environment can record a new repository without racing the owner.
func syncPath(dir string) string { return filepath.Join(dir, "sync.json") }

// syncFile is sync.json: the work tree, and what the sync objects were
// created with, so `eddy dev up` can re-create them (see repair).
type syncFile struct {
	WorkTree        string `json:"workTree"`
	URL             string `json:"url,omitempty"`
	Branch          string `json:"branch,omitempty"`
	Path            string `json:"path,omitempty"`
	TargetNamespace string `json:"targetNamespace,omitempty"`
}

// ReadState reads the state file of dir, with the work tree of sync.json;
// os.ErrNotExist when none.
func ReadState(dir string) (*State, error) {
	data, err := os.ReadFile(statePath(dir))
	if err != nil {
		return nil, err
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("state file %s: %w", statePath(dir), err)
	}
	if data, err := os.ReadFile(syncPath(dir)); err == nil {
		var sf syncFile
		if json.Unmarshal(data, &sf) == nil {
			s.WorkTree = sf.WorkTree
		}
	}
	return s, nil
}

// SetSync records what the environment of dir now syncs: src, its work
// tree "" for a remote repository.
func SetSync(dir string, src *Source) error {
	data, err := json.Marshal(syncFile{WorkTree: src.WorkTree, URL: src.URL, Branch: src.Branch, Path: src.Path, TargetNamespace: src.TargetNamespace})
	if err != nil {
		return err
	}
	return writeAtomic(syncPath(dir), data)
}

// readSync returns the source SetSync recorded in dir (its URL, branch,
// path and target namespace); nil when none is.
func readSync(dir string) *Source {
	data, err := os.ReadFile(syncPath(dir))
	if err != nil {
		return nil
	}
	var sf syncFile
	if json.Unmarshal(data, &sf) != nil || sf.URL == "" {
		return nil
	}
	return &Source{URL: sf.URL, Branch: sf.Branch, Path: sf.Path, TargetNamespace: sf.TargetNamespace, WorkTree: sf.WorkTree}
}

// writeState replaces the state file atomically.
func writeState(dir string, s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(statePath(dir), data)
}

func writeAtomic(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Alive reports whether pid is a running process (not a zombie).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs: trust kill(0)
	}
	// Field 3, after the parenthesised command name, is the state.
	if i := strings.LastIndexByte(string(data), ')'); i > 0 && len(data) > i+2 {
		return data[i+2] != 'Z'
	}
	return true
}

// cmdline returns the command line of pid with spaces between arguments;
// ok is false without procfs.
func cmdline(pid int) (string, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", false
	}
	return strings.ReplaceAll(string(data), "\x00", " "), true
}

// IsOwner reports whether pid is alive and is an `eddy dev` process, so a
// pid reused by another program after a crash or reboot is never signalled.
func IsOwner(pid int) bool {
	if !Alive(pid) {
		return false
	}
	cl, ok := cmdline(pid)
	return !ok || strings.Contains(cl, " dev ")
}

// Mentions reports whether pid is alive and its command line names dir
// (every process of an environment gets paths below its state directory).
func Mentions(pid int, dir string) bool {
	if !Alive(pid) {
		return false
	}
	cl, ok := cmdline(pid)
	return !ok || strings.Contains(cl, dir)
}

// Running returns the state of the environment in dir when its owner
// process is alive, else nil.
func Running(dir string) *State {
	s, err := ReadState(dir)
	if err != nil || !IsOwner(s.PID) {
		return nil
	}
	return s
}

// LockHolders returns the processes that have the lock file of dir open:
// the owner of its environment, even when the state file is unreadable. ok
// is false without procfs.
func LockHolders(dir string) (pids []int, ok bool) {
	lock := filepath.Join(dir, "lock")
	fds, err := filepath.Glob("/proc/[0-9]*/fd/*")
	if err != nil || len(fds) == 0 {
		return nil, false
	}
	seen := map[int]bool{}
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == lock {
			pid, err := strconv.Atoi(strings.Split(strings.TrimPrefix(fd, "/proc/"), "/")[0])
			if err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids, true
}

package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/eddyops/eddy/cli/internal/status"
)

// PrintStatus is `eddy dev status`: the environment, its processes with
// their health and restarts, and the sync objects. An error when none runs
// or a controller is not ready.
func PrintStatus(ctx context.Context, out io.Writer) error {
	dir, err := DefaultStateDir()
	if err != nil {
		return err
	}
	s, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && !IsOwner(s.PID)) {
		return errors.New("no eddy dev environment is running: start one with `eddy dev up`")
	}
	if err != nil {
		if holders, _ := LockHolders(dir); len(holders) > 0 {
			return fmt.Errorf("%v: the environment of pid %d cannot be shown: run `eddy dev down` to stop it and remove the file", err, holders[0])
		}
		return fmt.Errorf("%v: no environment holds %s: run `eddy dev down` to remove the file", err, filepath.Join(dir, "lock"))
	}
	fmt.Fprintf(out, "environment: %s (pid %d), up %s\n", s.Phase, s.PID, time.Since(s.StartedAt).Round(time.Second))
	fmt.Fprintf(out, "state:       %s\n", dir)
	if s.Kubeconfig != "" {
		fmt.Fprintf(out, "kubeconfig:  %s\n", s.Kubeconfig)
	}
	if s.WorkTree != "" {
		fmt.Fprintf(out, "repository:  %s (served at %s)\n", s.WorkTree, s.GitServer)
		if p, err := HookPath(s.WorkTree); err == nil && IsEddyHook(p) {
			fmt.Fprintf(out, "hook:        %s (commits are sent to Receiver %s/%s)\n", p, Namespace, HookReceiver)
		}
	}
	if s.NotificationAddr != "" {
		fmt.Fprintf(out, "events:      %s (recorded in %s, forwarded to notification-controller at %s)\n",
			s.EventsAddr, filepath.Join(dir, "logs", "events.log"), s.NotificationAddr)
		fmt.Fprintf(out, "receiver:    %s (webhook receivers; a Receiver's URL adds its status.webhookPath)\n", s.ReceiverURL)
	}
	if s.UI != "" {
		fmt.Fprintf(out, "ui:          %s (log %s)\n", s.UI, filepath.Join(dir, "logs", "ui.log"))
	}
	if s.AlertsSink != "" {
		fmt.Fprintf(out, "alerts sink: %s (Secret %s/%s; alerts in %s)\n", s.AlertsSink, Namespace, AlertsSinkSecret,
			filepath.Join(dir, "logs", "alerts.log"))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "PROCESS\tPID\tHEALTH\tRESTARTS\tLAST EXIT\tLOG")
	for _, p := range s.Cluster {
		health := "running"
		if !Alive(p.PID) {
			health = "exited"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t-\t\t%s\n", p.Name, p.PID, health, p.Log)
	}
	unhealthy := 0
	for _, p := range s.Controllers {
		health := "ready"
		switch {
		case !Alive(p.PID):
			health, unhealthy = "down", unhealthy+1
		case !Healthy(p.HealthURL):
			health, unhealthy = "not ready", unhealthy+1
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", p.Name, p.PID, health, p.Restarts, p.LastExit, p.LogPath)
	}
	_ = tw.Flush()
	if s.Kubeconfig != "" && s.Phase == PhaseRunning {
		if c, err := ClientFor(s.Kubeconfig); err == nil {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			fmt.Fprintln(out)
			status.PrintSyncTable(ctx, out, c)
		}
	}
	if unhealthy > 0 {
		return fmt.Errorf("%d controller(s) not ready", unhealthy)
	}
	return nil
}

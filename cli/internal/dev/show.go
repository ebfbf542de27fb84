package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eddyops/eddy/cli/internal/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PrintStatus is `eddy dev status`: the environment, its processes with
// their health (a controller's readiness probe and its leader-election
// lease), restarts, why each controller that is not ready is not (the last
// line of its log), and the sync objects. An error when none runs or a
// controller is not ready.
func PrintStatus(ctx context.Context, out io.Writer) error {
	dir, err := DefaultStateDir()
	if err != nil {
		return err
	}
	s, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return errors.New("no eddy dev environment is running: start one with `eddy dev up`")
	}
	if err == nil && !IsOwner(s.PID) {
		// Killed outright: what it started may still run (a real node's
		// containers, mounts and devices too).
		return fmt.Errorf("no eddy dev environment is running: its owner (pid %d) is gone; run `eddy dev down` to stop what it left, then `eddy dev up`", s.PID)
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
	if s.Registry != "" {
		fmt.Fprintf(out, "node:        real (controllers as pods; `eddy logs` reads their logs)\nregistry:    %s (%s)\n", s.Registry, strings.Join(s.Images, ", "))
	}
	if s.UI != "" {
		fmt.Fprintf(out, "ui:          %s (log %s)\n", s.UI, filepath.Join(dir, "logs", "ui.log"))
	}
	if s.AlertsSink != "" {
		fmt.Fprintf(out, "alerts sink: %s (Secret %s/%s; alerts in %s)\n", s.AlertsSink, Namespace, AlertsSinkSecret,
			filepath.Join(dir, "logs", "alerts.log"))
	}
	if flags := s.ControllerFlags.Lines(); len(flags) > 0 {
		fmt.Fprintf(out, "flags:       %s\n", strings.Join(flags, "\n             "))
	}
	fmt.Fprintln(out)
	var c client.Client
	if s.Kubeconfig != "" && s.Phase == PhaseRunning {
		c, _ = ClientFor(s.Kubeconfig)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "PROCESS\tPID\tHEALTH\tRESTARTS\tLEASE\tLAST EXIT\tLOG")
	for _, p := range s.Cluster {
		health := "running"
		if !Alive(p.PID) {
			health = "exited"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t-\t\t\t%s\n", p.Name, p.PID, health, p.Log)
	}
	var why []string
	leaseMissing := false
	now := time.Now()
	for _, p := range s.Controllers {
		health, lease := controllerHealth(ctx, c, p, s.Shards, now)
		if health != "ready" {
			why = append(why, fmt.Sprintf("  %s: %s", p.Name, LastLogLine(p.LogPath)))
			leaseMissing = leaseMissing || lease == LeaseMissing
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\n", p.Name, p.PID, health, p.Restarts, lease, p.LastExit, p.LogPath)
	}
	_ = tw.Flush()
	if s.Node == NodeReal && c != nil {
		why = append(why, printDeployments(ctx, out, c)...)
	}
	if len(why) > 0 {
		fmt.Fprintf(out, "\nnot ready, with the last line of each log:\n%s\n", strings.Join(why, "\n"))
		if leaseMissing && namespaceGone(ctx, c) {
			fmt.Fprintf(out, "namespace %s is gone or being deleted (a Kustomization that declared it pruned it?): the controllers cannot take "+
				"their leases and exit; run `eddy dev up` to re-create it and eddy dev's objects\n", Namespace)
		}
	}
	if c != nil {
		fmt.Fprintln(out)
		status.PrintSyncTable(ctx, out, c)
	}
	unhealthy := len(why)
	if unhealthy > 0 {
		return fmt.Errorf("%d controller(s) not ready", unhealthy)
	}
	return nil
}

// namespaceGone reports whether the namespace Namespace is gone or being
// deleted; false when c is nil or it cannot be read.
func namespaceGone(ctx context.Context, c client.Client) bool {
	if c == nil {
		return false
	}
	ns := &corev1.Namespace{}
	err := c.Get(ctx, client.ObjectKey{Name: Namespace}, ns)
	return apierrors.IsNotFound(err) || err == nil && ns.DeletionTimestamp != nil
}

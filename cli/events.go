package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newEventsCommand(g *globalFlags) *cobra.Command {
	var forObj string
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show the Kubernetes Events of Eddy's objects, oldest first",
		Long: "Show the Kubernetes Events of a namespace, or with --for those of one object;\n" +
			"for a Kustomization also those of its source, as flux does.",
		Args:    cobra.NoArgs,
		Example: "  eddy events\n  eddy events --for Kustomization/flux-system",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := g.ctx(cmd)
			defer cancel()
			type target struct{ kind, namespace, name string }
			var targets []target
			if forObj != "" {
				kind, name, ok := strings.Cut(forObj, "/")
				if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
					return fmt.Errorf("--for %q: want Kind/name, e.g. Kustomization/flux-system", forObj)
				}
				targets = append(targets, target{kind, g.namespace, name})
				if k, ok := kinds.ByKind(kind); ok && k.EventsAlso != nil {
					o := k.New()
					if err := c.Get(ctx, types.NamespacedName{Namespace: g.namespace, Name: name}, o); err == nil {
						if kind, ns, name, ok := k.EventsAlso(o); ok {
							targets = append(targets, target{kind, ns, name})
						}
					}
				}
			} else {
				ns := g.namespace
				if allNamespaces {
					ns = ""
				}
				targets = append(targets, target{namespace: ns})
			}
			var evs []corev1.Event
			for _, t := range targets {
				sel := fields.Set{}
				if t.kind != "" {
					sel["involvedObject.kind"], sel["involvedObject.name"] = t.kind, t.name
				}
				l := &corev1.EventList{}
				opts := []client.ListOption{client.MatchingFieldsSelector{Selector: fields.SelectorFromSet(sel)}}
				if t.namespace != "" {
					opts = append(opts, client.InNamespace(t.namespace))
				}
				if err := c.List(ctx, l, opts...); err != nil {
					return err
				}
				evs = append(evs, l.Items...)
			}
			sort.SliceStable(evs, func(i, j int) bool { return status.EventTime(evs[i]).Before(status.EventTime(evs[j])) })
			if len(evs) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no events found")
				return nil
			}
			tw := status.NewTable(cmd.OutOrStdout(), allNamespaces, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
			for _, e := range evs {
				age := duration.HumanDuration(time.Since(status.EventTime(e)))
				msg := strings.ReplaceAll(strings.TrimSpace(e.Message), "\n", "\n\t\t\t\t")
				tw.Row(e.Namespace, "%s\t%s\t%s\t%s/%s\t%s", age, e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, msg)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&forObj, "for", "", "show only the events of this object, as Kind/name")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "show the events of all namespaces")
	return cmd
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

// resumedLine is flux's last line after a resumed object of kind k is
// ready: a source's "fetched revision <artifact revision>", an applier's
// "applied revision <REVISION>", else "<Kind> reconciliation completed".
func resumedLine(k kinds.Kind, o kinds.Object) string {
	switch {
	case k.Source:
		return "fetched revision " + k.Revision(o) // the artifact's revision
	case k.Revision != nil:
		return "applied revision " + k.Revision(o)
	case k.Done != nil:
		return k.Done(o)
	}
	return k.Kind + " reconciliation completed"
}

// addKindCommands adds to parent one subcommand per kind (sources under a
// `source` subcommand, the image kinds under `image`), each running run
// with its kind.
func addKindCommands(parent *cobra.Command, short string, run func(kinds.Kind, *cobra.Command, []string) error) {
	src := &cobra.Command{Use: "source", Short: short + " sources"}
	img := &cobra.Command{Use: "image", Short: short + " image automation objects"}
	for _, k := range kinds.Flux {
		c := &cobra.Command{
			Use: k.Use + " [name]", Aliases: k.Aliases,
			Short: fmt.Sprintf("%s %s objects", short, k.Kind),
			RunE:  func(cmd *cobra.Command, args []string) error { return run(k, cmd, args) },
		}
		switch {
		case k.Source:
			src.AddCommand(c)
		case k.Image:
			img.AddCommand(c)
		default:
			parent.AddCommand(c)
		}
	}
	parent.AddCommand(src, img)
	unknownKind(parent)
	unknownKind(src)
	unknownKind(img)
}

// unknownKind makes cmd, a command of kind subcommands, fail on a kind it
// does not have (cobra would print the help and succeed).
func unknownKind(cmd *cobra.Command) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		var kinds []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				kinds = append(kinds, c.Name())
			}
		}
		return fmt.Errorf("unknown kind %q for %q: use one of %s", args[0], cmd.CommandPath(), strings.Join(kinds, ", "))
	}
}

// listNamed lists k's objects in ns: all of them when name is "", else the
// one named so (flux selects it with the field selector metadata.name).
func listNamed(ctx context.Context, c client.Client, k kinds.Kind, ns, name string) ([]client.Object, error) {
	l := k.NewList()
	opts := []client.ListOption{client.InNamespace(ns)}
	if name != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": name})
	}
	if err := c.List(ctx, l, opts...); err != nil {
		return nil, err
	}
	items, err := apimeta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(items))
	for _, it := range items {
		objs = append(objs, it.(client.Object))
	}
	return objs, nil
}

// patchSuspend sets (true) or removes (false, as flux's merge patch from
// true to the omitted false does) spec.suspend with a JSON merge patch.
func patchSuspend(ctx context.Context, c client.Client, obj client.Object, suspend bool) error {
	patch := []byte(`{"spec":{"suspend":null}}`)
	if suspend {
		patch = []byte(`{"spec":{"suspend":true}}`)
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// errNoObjects is flux's error for `--all` in a namespace without any.
var errNoObjects = errors.New("no objects found")

func newSuspendCommand(g *globalFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "suspend",
		Short: "Suspend the reconciliation of Flux objects",
		Long:  "Suspend sets spec.suspend on objects: their controller stops reconciling them until `eddy resume`.",
		Example: "  eddy suspend kustomization apps\n  eddy suspend source git flux-system\n" +
			"  eddy suspend hr --all -n apps",
	}
	cmd.PersistentFlags().BoolVar(&all, "all", false, "suspend all resources in that namespace")
	addKindCommands(cmd, "Suspend", func(k kinds.Kind, cmd *cobra.Command, args []string) error {
		if len(args) < 1 && !all {
			return fmt.Errorf("%s name is required", k.Human)
		}
		return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
			suspend := func(name string) error {
				objs, err := listNamed(ctx, c, k, g.namespace, name)
				if err != nil {
					return err
				}
				if len(objs) == 0 {
					return errNoObjects
				}
				for _, o := range objs {
					u.Action("suspending %s %s in %s namespace", k.Human, o.GetName(), g.namespace)
					if err := patchSuspend(ctx, c, o, true); err != nil {
						return err
					}
					u.Success("%s suspended", k.Human)
				}
				return nil
			}
			if len(args) == 0 {
				return suspend("")
			}
			// As flux: a name that fails is reported, the others still run,
			// and the command succeeds.
			seen := map[string]bool{}
			for _, name := range args {
				if seen[name] {
					continue
				}
				seen[name] = true
				if err := suspend(name); errors.Is(err, errNoObjects) {
					u.Failure("%s %s not found in %s namespace", k.Kind, name, g.namespace)
				} else if err != nil {
					u.Failure("failed suspending %s %s in %s namespace: %s", k.Kind, name, g.namespace, err)
				}
			}
			return nil
		})
	})
	return cmd
}

func newResumeCommand(g *globalFlags) *cobra.Command {
	var all, waitFlag bool
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "Resume the reconciliation of suspended Flux objects",
		Long: "Resume removes spec.suspend from objects and, with --wait (the default for one named object), " +
			"waits until each is ready at its current generation.",
		Example: "  eddy resume kustomization apps\n  eddy resume source git flux-system\n" +
			"  eddy resume hr --all -n apps --wait",
	}
	cmd.PersistentFlags().BoolVar(&all, "all", false, "resume all resources in that namespace")
	cmd.PersistentFlags().BoolVar(&waitFlag, "wait", false, "waits for one resource to reconcile before moving to the next one")
	addKindCommands(cmd, "Resume", func(k kinds.Kind, cmd *cobra.Command, args []string) error {
		if len(args) < 1 && !all {
			return fmt.Errorf("%s name is required", k.Human)
		}
		// As flux: one named object is waited for unless --wait is given.
		shouldWait := waitFlag || (!cmd.Flags().Changed("wait") && len(args) == 1)
		return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
			var resumed []client.Object
			names := args
			if len(names) == 0 {
				names = []string{""}
			}
			seen := map[string]bool{}
			for _, name := range names {
				if seen[name] {
					continue
				}
				seen[name] = true
				objs, err := listNamed(ctx, c, k, g.namespace, name)
				if err != nil {
					return err
				}
				if len(objs) == 0 {
					if name == "" {
						u.Failure("no %s objects found in %s namespace", k.Kind, g.namespace)
					} else {
						u.Failure("%s object '%s' not found in %s namespace", k.Kind, name, g.namespace)
					}
					continue
				}
				for _, o := range objs {
					u.Action("resuming %s %s in %s namespace", k.Human, o.GetName(), g.namespace)
					if err := patchSuspend(ctx, c, o, false); err != nil {
						return err
					}
					u.Success("%s resumed", k.Human)
					resumed = append(resumed, o)
				}
			}
			if !shouldWait || len(resumed) == 0 {
				return nil
			}
			stop := u.Spin(fmt.Sprintf("waiting for %s reconciliation", k.Kind))
			errs := make([]error, len(resumed))
			done := make(chan struct{})
			for i, o := range resumed {
				go func() {
					defer func() { done <- struct{}{} }()
					errs[i] = waitReady(ctx, c, k, o, k.Kind+" reconciliation")
				}()
			}
			for range resumed {
				<-done
			}
			stop()
			order := make([]int, len(resumed))
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(a, b int) bool { return resumed[order[a]].GetName() < resumed[order[b]].GetName() })
			failed := 0
			for _, i := range order {
				if errs[i] != nil {
					failed++
					u.Failure("%s %s reconciliation failed: %s", k.Kind, resumed[i].GetName(), errs[i])
					continue
				}
				u.Success("%s %s reconciliation completed", k.Kind, resumed[i].GetName())
				u.Success("%s", resumedLine(k, resumed[i].(kinds.Object)))
			}
			if failed > 0 {
				return fmt.Errorf("reconciliation failed for %d %s(s)", failed, k.Kind)
			}
			return nil
		})
	})
	return cmd
}

// waitReady polls obj, of kind k, every status.PollInterval until it is
// ready as flux judges it (kinds.Ready): an error when kstatus says it
// failed (Stalled), a read fails, or, when ctx ends, one naming what and
// the last Ready reason and message.
func waitReady(ctx context.Context, c client.Client, k kinds.Kind, obj client.Object, what string) error {
	key := client.ObjectKeyFromObject(obj)
	o := obj.(kinds.Object)
	var failed error
	err := wait.PollUntilContextCancel(ctx, status.PollInterval, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			failed = err
			return false, err
		}
		ok, err := kinds.Ready(k, o)
		failed = err
		return ok, err
	})
	if err == nil || failed != nil {
		return failed
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg := ""
		if r, _ := kinds.ReadyCondition(o); r != nil {
			msg = ": last status: " + r.Reason + ": " + ui.OneLine(r.Message)
		}
		return fmt.Errorf("timed out waiting for %s%s", what, msg)
	}
	return ctx.Err()
}

// exported is obj as flux exports it: apiVersion, kind, metadata (name,
// namespace, labels, annotations only) and spec; no status.
func exported(scheme *runtime.Scheme, obj client.Object) (map[string]any, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	md := map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()}
	if l := obj.GetLabels(); len(l) > 0 {
		md["labels"] = l
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		md["annotations"] = a
	}
	out := map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "metadata": md}
	if spec, ok := content["spec"]; ok {
		out["spec"] = spec
	}
	return out, nil
}

func newExportCommand(g *globalFlags) *cobra.Command {
	var all, withCredentials bool
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export Flux objects in YAML format",
		Long: "Export prints objects as YAML documents, each after a `---` line: apiVersion, kind, " +
			"metadata (name, namespace, labels, annotations) and spec, ready to apply elsewhere.",
		Example: "  eddy export source git flux-system\n  eddy export kustomization --all > kustomizations.yaml",
	}
	cmd.PersistentFlags().BoolVar(&all, "all", false, "select all resources")
	addKindCommands(cmd, "Export", func(k kinds.Kind, cmd *cobra.Command, args []string) error {
		if !all && len(args) < 1 {
			return errors.New("name is required")
		}
		return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
			var objs []client.Object
			if all {
				var err error
				if objs, err = listNamed(ctx, c, k, g.namespace, ""); err != nil {
					return err
				}
				if len(objs) == 0 {
					return fmt.Errorf("no objects found in %s namespace", g.namespace)
				}
			} else {
				o := k.New()
				key := types.NamespacedName{Namespace: g.namespace, Name: args[0]}
				if err := c.Get(ctx, key, o); err != nil {
					return status.NotFound(err, k.Kind, key)
				}
				objs = []client.Object{o}
			}
			for _, o := range objs {
				doc, err := exported(c.Scheme(), o)
				if err != nil {
					return err
				}
				if err := printExport(u.Out(), doc); err != nil {
					return err
				}
				// As flux: only with --with-credentials, and only the first
				// source's Secret of --all.
				if ref := credentialsOf(k, o); withCredentials && ref != "" {
					return printCredentials(ctx, c, u.Out(), types.NamespacedName{Namespace: o.GetNamespace(), Name: ref})
				}
			}
			return nil
		})
	})
	for _, sub := range cmd.Commands() {
		if sub.Name() == "source" {
			sub.PersistentFlags().BoolVar(&withCredentials, "with-credentials", false, "include credential secrets")
		}
	}
	return cmd
}

// credentialsOf is the credentials Secret o, of kind k, names (k's
// Credentials), "" for none.
func credentialsOf(k kinds.Kind, o client.Object) string {
	if k.Credentials == nil {
		return ""
	}
	return k.Credentials(o.(kinds.Object))
}

// printCredentials exports the Secret key as flux does: name, namespace,
// type and data.
func printCredentials(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName) error {
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		return fmt.Errorf("failed to retrieve secret %s, error: %w", key.Name, err)
	}
	doc := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": key.Name, "namespace": key.Namespace}}
	if s.Type != "" {
		doc["type"] = string(s.Type)
	}
	if len(s.Data) > 0 {
		doc["data"] = s.Data
	}
	return printExport(w, doc)
}

// printExport writes doc as YAML after a `---` line, as `flux export`.
func printExport(w io.Writer, doc any) error {
	data, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "---\n%s\n", bytes.TrimSpace(data))
	return err
}

func newDeleteCommand(g *globalFlags) *cobra.Command {
	var silent bool
	cmd := &cobra.Command{
		Use:     "delete",
		Short:   "Delete Flux objects",
		Long:    "Delete removes an object after asking for confirmation (not with --silent); its controller garbage-collects what it made.",
		Example: "  eddy delete kustomization apps\n  eddy delete source git podinfo --silent",
	}
	cmd.PersistentFlags().BoolVarP(&silent, "silent", "s", false, "delete resource without asking for confirmation")
	addKindCommands(cmd, "Delete", func(k kinds.Kind, cmd *cobra.Command, args []string) error {
		if len(args) < 1 {
			return fmt.Errorf("%s name is required", k.Human)
		}
		return g.reconcile(cmd, func(ctx context.Context, c client.Client, u *ui.UI) error {
			o := k.New()
			key := types.NamespacedName{Namespace: g.namespace, Name: args[0]}
			if err := c.Get(ctx, key, o); err != nil {
				return status.NotFound(err, k.Kind, key)
			}
			if !silent && !confirm(cmd, "Are you sure you want to delete this "+k.Human) {
				return errors.New("aborting")
			}
			u.Action("deleting %s %s in %s namespace", k.Human, key.Name, key.Namespace)
			if err := c.Delete(ctx, o); err != nil {
				return err
			}
			u.Success("%s deleted", k.Human)
			return nil
		})
	})
	return cmd
}

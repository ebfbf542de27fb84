package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// createFlags are the flags every `create` subcommand has (flux's).
type createFlags struct {
	interval     time.Duration
	export       bool
	labels       []string
	fetchTimeout time.Duration
}

// objectName is flux's rule for a created object's name (RFC 1123).
var objectName = regexp.MustCompile(`^[a-z0-9]([a-z0-9\-]){0,61}[a-z0-9]$`)

// meta is the name (args[0]), namespace and --label labels of a new object.
func (f *createFlags) meta(g *globalFlags, args []string) (metav1.ObjectMeta, error) {
	if len(args) < 1 {
		return metav1.ObjectMeta{}, errors.New("name is required")
	}
	name := args[0]
	if !objectName.MatchString(name) {
		return metav1.ObjectMeta{}, fmt.Errorf("name '%s' is invalid, it should adhere to standard defined in RFC 1123, the name can only contain alphanumeric characters or '-'", name)
	}
	var labels map[string]string
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.Contains(v, "=") {
			return metav1.ObjectMeta{}, fmt.Errorf("invalid label format '%s', must be key=value", l)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return metav1.ObjectMeta{}, fmt.Errorf("invalid label '%s': %v", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return metav1.ObjectMeta{}, fmt.Errorf("invalid label value '%s': %v", v, errs)
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: g.namespace, Labels: labels}, nil
}

// creation is what one `create` subcommand makes, with flux's wording.
type creation struct {
	obj     client.Object
	kind    string // in "generating …", "applying …", "waiting for … reconciliation"
	created string // in "… created", "… updated"
	// noGenerate leaves out the "generating …" line (flux's create source
	// oci has none).
	noGenerate bool
	completed  string // the line after the wait; "" for flux's "<Kind> <name> is ready"
	// done prints the lines after the wait, or fails.
	done func(u *ui.UI) error
	// prepare, when set, runs before the object is applied (not with
	// --export): e.g. `create source bucket` writes its credentials Secret.
	prepare func(ctx context.Context, cl client.Client, u *ui.UI) error
}

// create prints c.obj as `--export` YAML, or creates or updates it
// (labels and spec; other metadata kept) and waits until it is ready as
// flux judges it.
func (g *globalFlags) create(cmd *cobra.Command, f *createFlags, c creation) error {
	if f.export {
		doc, err := exported(scheme.New(), c.obj)
		if err != nil {
			return err
		}
		return printExport(cmd.OutOrStdout(), doc)
	}
	cl, err := g.client()
	if err != nil {
		return err
	}
	ctx, cancel := g.ctx(cmd)
	defer cancel()
	u := ui.New(cmd.OutOrStdout())
	if !c.noGenerate {
		u.Generate("generating %s", c.kind)
	}
	if c.prepare != nil {
		if err := c.prepare(ctx, cl, u); err != nil {
			return err
		}
	}
	u.Action("applying %s", c.kind)

	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.obj)
	if err != nil {
		return err
	}
	existing := &unstructured.Unstructured{}
	gvk, err := cl.GroupVersionKindFor(c.obj)
	if err != nil {
		return err
	}
	existing.SetGroupVersionKind(gvk)
	switch err := cl.Get(ctx, client.ObjectKeyFromObject(c.obj), existing); {
	case apierrors.IsNotFound(err):
		if err := cl.Create(ctx, c.obj); err != nil {
			return err
		}
		u.Success("%s created", c.created)
	case err != nil:
		return withCRDHint(err, gvk.Group)
	default:
		existing.SetLabels(c.obj.GetLabels())
		existing.Object["spec"] = want["spec"]
		if err := cl.Update(ctx, existing); err != nil {
			return err
		}
		u.Success("%s updated", c.created)
	}

	k, _ := kinds.Of(c.obj)
	stop := u.Spin(fmt.Sprintf("waiting for %s reconciliation", c.kind))
	err = waitReady(ctx, cl, k, c.obj, c.kind+" reconciliation")
	stop()
	if err != nil {
		return err
	}
	if c.completed != "" {
		u.Success("%s", c.completed)
	} else {
		u.Success("%s %s is ready", c.kind, c.obj.GetName())
	}
	if c.done != nil {
		return c.done(u)
	}
	return nil
}

// kindNameNamespace splits flux's `[<kind>/]<name>[.<namespace>]`.
func kindNameNamespace(s string) (kind, name, namespace string) {
	if k, n, ok := strings.Cut(s, "/"); ok {
		kind, name = k, n
	} else {
		name = s
	}
	if i := strings.LastIndex(name, "."); i >= 0 {
		name, namespace = name[:i], name[i+1:]
	}
	return kind, name, namespace
}

// oneOfFold returns the item of list equal to s under case folding.
func oneOfFold(list []string, s string) (string, bool) {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return l, true
		}
	}
	return "", false
}

func newCreateCommand(g *globalFlags) *cobra.Command {
	f := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create or update Flux objects",
		Long: "Create makes an object (or updates the labels and spec of an existing one) and waits until its " +
			"controller reports it ready; with --export it prints the object as YAML instead, without a cluster.",
	}
	fs := cmd.PersistentFlags()
	fs.DurationVar(&f.interval, "interval", time.Minute, "source sync interval")
	fs.BoolVar(&f.export, "export", false, "export in YAML format to stdout")
	fs.StringSliceVar(&f.labels, "label", nil, "set labels on the resource (can specify multiple labels with commas: label1=value1,label2=value2)")

	src := &cobra.Command{Use: "source", Short: "Create or update sources"}
	src.PersistentFlags().DurationVar(&f.fetchTimeout, "fetch-timeout", 0, "set a timeout for fetch operations performed by source-controller (e.g. 'git clone' or 'helm repo add')")
	src.AddCommand(newCreateSourceGitCommand(g, f), newCreateSourceHelmCommand(g, f), newCreateSourceOCICommand(g, f),
		newCreateSourceBucketCommand(g, f))
	cmd.AddCommand(src, newCreateKustomizationCommand(g, f), newCreateHelmReleaseCommand(g, f),
		newCreateAlertCommand(g, f), newCreateAlertProviderCommand(g, f), newCreateReceiverCommand(g, f),
		newCreateImageCommand(g, f))
	unknownKind(cmd)
	unknownKind(src)
	return cmd
}

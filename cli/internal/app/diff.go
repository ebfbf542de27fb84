package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/appdiff"
)

// PendingDiff is the Application's pending diff: the objects of its
// appdiff.Annotation; without it, for each OutOfSync object of
// status.resources, the object alone (no fields: the controller has not
// published them). An error when the annotation does not parse.
func PendingDiff(a *argov1.Application) ([]appdiff.Object, error) {
	if s, ok := a.Annotations[appdiff.Annotation]; ok && s != "" {
		return appdiff.Decode(s)
	}
	var objs []appdiff.Object
	for _, r := range a.Status.Resources {
		if r.Status == argov1.SyncStatusOutOfSync {
			objs = append(objs, appdiff.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
		}
	}
	return objs, nil
}

// PrintDiff writes objs as argocd app diff heads each object
// ("===== <group>/<Kind> <namespace>/<name> ======", after an empty line),
// then per field its JSON pointer ("(whole object)" for the pointer ""),
// with the field manager that last wrote
// it in parentheses, a "- " line with the live value and a "+ " line with
// the desired one (a side without the field has no line). Values are
// compact JSON. An object without fields says the controller published
// none.
func PrintDiff(w io.Writer, objs []appdiff.Object) {
	for _, o := range objs {
		fmt.Fprintf(w, "\n===== %s/%s %s/%s ======\n", o.Group, o.Kind, o.Namespace, o.Name)
		if len(o.Fields) == 0 {
			fmt.Fprintln(w, "(out of sync; no field differences published)")
		}
		for _, f := range o.Fields {
			line := f.Path
			if line == "" {
				line = "(whole object)" // pointer "": missing live, or to prune
			}
			if f.Manager != "" {
				line += " (changed by " + f.Manager + ")"
			}
			fmt.Fprintln(w, line)
			if f.Live != nil {
				fmt.Fprintln(w, "- "+compact(f.Live))
			}
			if f.Desired != nil {
				fmt.Fprintln(w, "+ "+compact(f.Desired))
			}
		}
	}
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}

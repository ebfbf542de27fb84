package build

import (
	"fmt"
	"strings"

	"github.com/drone/envsubst"
	"github.com/drone/envsubst/parse"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// SubstituteAnnotation set to "disabled" (label or annotation) keeps an
// object out of postBuild substitution. Flux compatible.
const SubstituteAnnotation = "kustomize.toolkit.fluxcd.io/substitute"

// defaultFuncs are the bash forms that carry a fallback, e.g. ${var:=x}, ${var:-x}.
var defaultFuncs = map[string]bool{"=": true, ":=": true, ":-": true, "-": true, "+": true, ":+": true, ":?": true}

// substitute replaces ${var} references in every object not opted out.
// Flux compatible: bash-like syntax (${var}, ${var:=default}, ${var:-default},
// substrings, replacements), `$${var}` for a literal ${var}, strict mode (a
// reference to an undefined variable without a default is an error naming
// it); with strategy WithVariables (the default) nothing is substituted when
// no variable is defined.
func substitute(objs []*unstructured.Unstructured, vars map[string]string, strategy string) error {
	if strategy != "Always" && len(vars) == 0 {
		return nil
	}
	mapping := func(name string) string { return vars[name] }
	for _, u := range objs {
		if strings.EqualFold(u.GetLabels()[SubstituteAnnotation], "disabled") ||
			strings.EqualFold(u.GetAnnotations()[SubstituteAnnotation], "disabled") {
			continue
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
		}
		id := objectID(u)
		tree, err := parse.Parse(string(data))
		if err != nil {
			return fmt.Errorf("postBuild substitution of %s failed: %v", id, err)
		}
		if name := firstUndefined(tree.Root, vars); name != "" {
			return fmt.Errorf("postBuild substitution of %s failed: variable not set (strict mode): %q", id, name)
		}
		out, err := envsubst.Eval(string(data), mapping)
		if err != nil {
			return fmt.Errorf("postBuild substitution of %s failed: %v", id, err)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(out), &obj); err != nil {
			return fmt.Errorf("postBuild substitution of %s produced invalid YAML: %v", id, err)
		}
		u.Object = obj
	}
	return nil
}

// firstUndefined returns the first variable referenced without a default
// that vars does not define.
func firstUndefined(n parse.Node, vars map[string]string) string {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if name := firstUndefined(c, vars); name != "" {
				return name
			}
		}
	case *parse.FuncNode:
		if _, ok := vars[n.Param]; !ok && !defaultFuncs[n.Name] {
			return n.Param
		}
		for _, a := range n.Args {
			if name := firstUndefined(a, vars); name != "" {
				return name
			}
		}
	}
	return ""
}

// objectID is Kind/namespace/name, or Kind/name for cluster-scoped objects.
func objectID(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

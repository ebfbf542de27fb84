package kustomize

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/drone/envsubst"
	"github.com/drone/envsubst/parse"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// SubstituteAnnotation set to "disabled" (label or annotation) keeps an
// object out of postBuild substitution. Flux compatible.
const SubstituteAnnotation = "kustomize.toolkit.fluxcd.io/substitute"

// defaultFuncs are the operators that handle an unset variable themselves,
// e.g. ${var:=x}, ${var:-x}. Flux compatible (fluxcd/pkg/envsubst
// isDefaultOp): strict mode does not fail on them, and like Flux (and
// drone/envsubst) each yields the variable's value, or the word when it is
// empty or unset, so ${var:+x} and ${var:?x} act as ${var:-x}.
var defaultFuncs = map[string]bool{"=": true, ":=": true, ":-": true, "-": true, "+": true, ":+": true, "?": true, ":?": true}

// varNamePattern is what a variable's name must match. Flux compatible
// (fluxcd/pkg/kustomize varsubRegex).
const varNamePattern = "^[_[:alpha:]][_[:alpha:][:digit:]]*$"

var varName = regexp.MustCompile(varNamePattern)

// substitute replaces ${var} references in every object not opted out.
// Flux compatible: bash-like syntax (${var}, ${var:=default}, ${var:-default},
// substrings, replacements), `$${var}` for a literal ${var}, strict mode (a
// reference to an undefined variable without a default is an error naming
// it: `postBuild substitution of <Kind/ns/name> failed: variable not set
// (strict mode): "<name>"`; without strict, such a reference becomes "");
// newlines are removed from values, so a value
// cannot add YAML lines; a name not matching varNamePattern fails the build
// (`postBuild substitution failed: '<name>' var name is invalid, must match
// '<pattern>'`) once there is an object to substitute. With strategy
// WithVariables (the default) nothing is substituted when no variable is
// defined. An object without a `$` is left as it is; one with is
// substituted in its YAML form and read back with integers kept as int64.
func substitute(objs []*unstructured.Unstructured, vars map[string]string, strategy string, strict bool) error {
	if strategy != "Always" && len(vars) == 0 {
		return nil
	}
	values := make(map[string]string, len(vars))
	for k, v := range vars {
		values[k] = strings.ReplaceAll(v, "\n", "")
	}
	mapping := func(name string) string { return values[name] }
	checked := false
	for _, u := range objs {
		if strings.EqualFold(u.GetLabels()[SubstituteAnnotation], "disabled") ||
			strings.EqualFold(u.GetAnnotations()[SubstituteAnnotation], "disabled") {
			continue
		}
		if !checked {
			if err := checkNames(values); err != nil {
				return err
			}
			checked = true
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte("$")) {
			continue
		}
		id := objectID(u)
		tree, err := parse.Parse(string(data))
		if err != nil {
			return fmt.Errorf("postBuild substitution of %s failed: %v", id, err)
		}
		if name := firstUndefined(tree.Root, values); strict && name != "" {
			return fmt.Errorf("postBuild substitution of %s failed: variable not set (strict mode): %q", id, name)
		}
		out, err := eval(string(data), mapping)
		if err != nil {
			return fmt.Errorf("postBuild substitution of %s failed: %v", id, err)
		}
		obj, err := decodeObject([]byte(out))
		if err != nil {
			return fmt.Errorf("postBuild substitution of %s produced invalid YAML: %v", id, err)
		}
		u.Object = obj
	}
	return nil
}

// eval is envsubst.Eval with Flux's substring rule: in ${var:offset:length}
// a negative length counts back from the end of the value, as in bash
// (kustomize-controller v1.9.5; drone/envsubst panics on it). Every other
// operator is drone/envsubst's own. A panic is returned as an error: a
// template from the repository must not crash the controller.
func eval(s string, mapping func(string) string) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid substitution: %v", r)
		}
	}()
	tree, err := parse.Parse(s)
	if err != nil {
		return s, err
	}
	var b strings.Builder
	if err := evalNode(&b, tree.Root, mapping); err != nil {
		return "", err
	}
	return b.String(), nil
}

func evalNode(b *strings.Builder, n parse.Node, mapping func(string) string) error {
	switch n := n.(type) {
	case *parse.TextNode:
		b.WriteString(n.Value)
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := evalNode(b, c, mapping); err != nil {
				return err
			}
		}
	case *parse.FuncNode:
		args := make([]string, len(n.Args))
		for i, a := range n.Args {
			var ab strings.Builder
			if err := evalNode(&ab, a, mapping); err != nil {
				return err
			}
			args[i] = ab.String()
		}
		out, err := evalFunc(n.Name, mapping(n.Param), args)
		if err != nil {
			return err
		}
		b.WriteString(out)
	}
	return nil
}

// evalFunc applies the operator name to value with its evaluated args.
func evalFunc(name, value string, args []string) (string, error) {
	if name == "" {
		return value, nil
	}
	if name == ":" && len(args) == 2 {
		pos, perr := strconv.Atoi(args[0])
		length, lerr := strconv.Atoi(args[1])
		if perr == nil && lerr == nil && length < 0 {
			if pos < 0 {
				pos = max(len(value)+pos, 0)
			}
			end := len(value) + length
			if end < pos {
				return "", nil // bash: "substring expression < 0"
			}
			return value[pos:end], nil
		}
	}
	// drone/envsubst's operator on value and args, as variables P and Ai of
	// a one-expression template.
	vars := map[string]string{"P": value}
	refs := make([]string, len(args))
	for i, a := range args {
		key := "A" + strconv.Itoa(i)
		vars[key], refs[i] = a, "${"+key+"}"
	}
	sep := ""
	switch name {
	case ":":
		sep = ":"
	case "/", "//", "/#", "/%":
		sep = "/"
	}
	tmpl := "${P" + name + strings.Join(refs, sep) + "}"
	if name == "#" && len(args) == 0 {
		tmpl = "${#P}"
	}
	return envsubst.Eval(tmpl, func(k string) string { return vars[k] })
}

// checkNames fails on the first (in sorted order, so the message is
// stable) variable name that does not match varNamePattern.
func checkNames(vars map[string]string) error {
	names := slices.Sorted(maps.Keys(vars))
	for _, n := range names {
		if !varName.MatchString(n) {
			return fmt.Errorf("postBuild substitution failed: '%s' var name is invalid, must match '%s'", n, varNamePattern)
		}
	}
	return nil
}

// decodeObject reads one YAML object the way the built objects were read
// (JSON into unstructured content): integers stay int64 rather than
// passing through float64.
func decodeObject(doc []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("not an object")
	}
	return obj, nil
}

// firstUndefined returns the first variable, in Flux's evaluation order,
// referenced without a default that vars does not define.
func firstUndefined(n parse.Node, vars map[string]string) string {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if name := firstUndefined(c, vars); name != "" {
				return name
			}
		}
	case *parse.FuncNode:
		// Flux evaluates the arguments before the variable itself.
		for _, a := range n.Args {
			if name := firstUndefined(a, vars); name != "" {
				return name
			}
		}
		if _, ok := vars[n.Param]; !ok && !defaultFuncs[n.Name] {
			return n.Param
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

// Package cel evaluates the CEL expressions of Flux's APIs with
// github.com/google/cel-go: the health of custom resources
// (spec.healthCheckExprs, see HealthChecks) and the readiness of a
// dependency (dependsOn[].readyExpr, see NewReadyExpr); and, through
// Compile, any type-checked expression over object variables (a
// Receiver's resourceFilter, a Provider's commitStatusExpr).
//
// Flux compatible (fluxcd/pkg runtime/cel): the same CEL environment
// (optional types, the strings, sets and encoders extensions, cross-type
// numeric comparisons, UTC as the default time zone), the same evaluation
// rules and the same error messages, so that an expression that works with
// Flux works here and fails with the same words.
package cel

import (
	"context"
	"fmt"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/runtime"
)

// Expression is a parsed CEL expression, ready to evaluate.
type Expression struct {
	src  string
	prog celgo.Program
}

// envOptions are the declarations and libraries every expression sees.
func envOptions() []celgo.EnvOption {
	return []celgo.EnvOption{
		celgo.HomogeneousAggregateLiterals(),
		celgo.EagerlyValidateDeclarations(true),
		celgo.DefaultUTCTimeZone(true),
		celgo.CrossTypeNumericComparisons(true),
		celgo.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	}
}

// The environments are built once: building one costs far more than
// parsing an expression, and a cel.Env is safe for concurrent use.
var (
	// plainEnv parses without declarations: the evaluation data's keys are
	// the variables (an object's apiVersion, kind, metadata, spec, status
	// and whatever else a custom resource has at its top level).
	plainEnv = sync.OnceValues(func() (*celgo.Env, error) { return celgo.NewEnv(envOptions()...) })
	// structEnvs are the type-checking environments by their variables'
	// names (joined with ","), each declared as an object.
	structEnvs sync.Map
)

// structEnv returns the environment that declares vars as objects
// (google.protobuf.Struct), as Flux's WithStructVariables does.
func structEnv(vars []string) (*celgo.Env, error) {
	key := strings.Join(vars, ",")
	if env, ok := structEnvs.Load(key); ok {
		return env.(*celgo.Env), nil
	}
	opts := envOptions()
	for _, v := range vars {
		opts = append(opts, celgo.Variable(v, celgo.ObjectType("google.protobuf.Struct")))
	}
	env, err := celgo.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	structEnvs.Store(key, env)
	return env, nil
}

// Parse parses expr without type checking, for evaluation over an object's
// fields (health checks). Flux compatible message:
// `failed to parse the CEL expression '<expr>': <cel-go's issues>`.
func Parse(expr string) (*Expression, error) {
	env, err := plainEnv()
	if err != nil {
		return nil, fmt.Errorf("failed to create CEL environment: %w", err)
	}
	ast, issues := env.Parse(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("failed to parse the CEL expression '%s': %s", expr, issues.String())
	}
	return program(env, expr, ast)
}

// Variables of a readyExpr: the Kustomization (or HelmRelease) that
// depends, and the dependency. Flux compatible.
const (
	SelfVar = "self"
	DepVar  = "dep"
)

// NewReadyExpr compiles a dependsOn readyExpr: type-checked, with the
// variables self and dep, and a bool result.
func NewReadyExpr(expr string) (*Expression, error) {
	return Compile(expr, celgo.BoolType, SelfVar, DepVar)
}

// Compile type-checks expr with vars declared as objects and requires
// the output type out (celgo.BoolType, celgo.StringType). Flux compatible
// messages: `failed to parse the CEL expression '<expr>': <issues>` (a
// syntax error or an undeclared variable) and `CEL expression output type
// mismatch: expected <out>, got <type>`.
func Compile(expr string, out *celgo.Type, vars ...string) (*Expression, error) {
	env, err := structEnv(vars)
	if err != nil {
		return nil, fmt.Errorf("failed to create CEL environment: %w", err)
	}
	ast, issues := env.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("failed to parse the CEL expression '%s': %s", expr, issues.String())
	}
	if got := ast.OutputType(); got != out {
		return nil, fmt.Errorf("CEL expression output type mismatch: expected %s, got %s", out, got)
	}
	return program(env, expr, ast)
}

func program(env *celgo.Env, expr string, ast *celgo.Ast) (*Expression, error) {
	prog, err := env.Program(ast,
		celgo.EvalOptions(celgo.OptOptimize),
		// Comprehensions look at the context every 100 iterations, as
		// Kubernetes' own CEL does.
		celgo.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("failed to create CEL program: %w", err)
	}
	return &Expression{src: expr, prog: prog}, nil
}

// String is the expression as written.
func (e *Expression) String() string { return e.src }

// Bool evaluates e over data (variable name ⇒ value; a Kubernetes object's
// unstructured content for a health check) and requires a bool. Flux
// compatible messages: `failed to evaluate the CEL expression '<expr>':
// <error>` (e.g. `no such key: status`) and `failed to evaluate CEL
// expression as boolean: '<expr>'`.
func (e *Expression) Bool(ctx context.Context, data map[string]any) (bool, error) {
	val, _, err := e.prog.ContextEval(ctx, data)
	if err != nil {
		return false, fmt.Errorf("failed to evaluate the CEL expression '%s': %w", e.src, err)
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, fmt.Errorf("failed to evaluate CEL expression as boolean: '%s'", e.src)
	}
	return bool(b), nil
}

// Str evaluates e over data and requires a string. Flux compatible
// messages: `failed to evaluate the CEL expression '<expr>': <error>` and
// `failed to evaluate CEL expression as string: '<expr>'`.
func (e *Expression) Str(ctx context.Context, data map[string]any) (string, error) {
	val, _, err := e.prog.ContextEval(ctx, data)
	if err != nil {
		return "", fmt.Errorf("failed to evaluate the CEL expression '%s': %w", e.src, err)
	}
	s, ok := val.(types.String)
	if !ok {
		return "", fmt.Errorf("failed to evaluate CEL expression as string: '%s'", e.src)
	}
	return string(s), nil
}

// DependencyReady evaluates the dependsOn readyExpr expr with self (the
// object that depends) and dep (the dependency) in their unstructured
// form. compileErr is set when expr does not compile (a configuration
// error: Flux stalls); err when the evaluation fails (Flux retries).
func DependencyReady(ctx context.Context, expr string, self, dep any) (ready bool, compileErr, err error) {
	e, compileErr := NewReadyExpr(expr)
	if compileErr != nil {
		return false, compileErr, nil
	}
	vars := map[string]any{}
	for name, obj := range map[string]any{SelfVar: self, DepVar: dep} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return false, nil, err
		}
		vars[name] = u
	}
	ready, err = e.Bool(ctx, vars)
	return ready, nil, err
}

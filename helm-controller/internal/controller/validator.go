package controller

import (
	"sync"

	"helm.sh/helm/v3/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/openapi"
	"k8s.io/kubectl/pkg/validation"
)

// fieldValidationSupport remembers, for the process, each API server
// identity and kind whose API takes the fieldValidation parameter. Helm's
// strict validation asks this of every object it builds and kubectl's
// factory answers it by fetching and parsing the OpenAPI v3 document of the
// kind's group version, once per factory, that is once per release action:
// most of helm-controller's CPU at scale. The answer is a property of the
// API server (every server since Kubernetes 1.27 says yes), so a yes is
// kept; a no or an error is asked again next time, as before.
var fieldValidationSupport sync.Map // key: fieldValidationKey

// fieldValidationAsking holds a *sync.Mutex per API server identity and
// group version: releases that start together wait for the first to ask
// instead of each fetching and parsing the same OpenAPI document at once
// (several MiB each, the controller's peak memory).
var fieldValidationAsking sync.Map // key: fieldValidationKey without kind

type fieldValidationKey struct {
	host, user string
	gvk        schema.GroupVersionKind
}

// validatingFactory is Helm's kube.Factory with kubectl's strict Validator
// rebuilt around fieldValidationSupport; the schema, the verifiers and so
// the outcome of each validation and its messages are kubectl's.
type validatingFactory struct {
	cmdutil.Factory
	cfg *rest.Config
}

// withFieldValidationCache makes kc's validator remember the kinds that
// support server-side field validation (fieldValidationSupport).
func withFieldValidationCache(kc *kube.Client, getter *restGetter) {
	if f, ok := kc.Factory.(cmdutil.Factory); ok {
		kc.Factory = &validatingFactory{Factory: f, cfg: getter.cfg}
	}
}

// Validator is kubectl's factoryImpl.Validator with the verifier behind
// fieldValidationSupport.
func (f *validatingFactory) Validator(directive string) (validation.Schema, error) {
	if directive == metav1.FieldValidationIgnore {
		return validation.NullSchema{}, nil
	}
	s := validation.ConjunctiveSchema{validation.NewSchemaValidation(f), validation.NoDoubleKeySchema{}}
	dyn, err := f.DynamicClient()
	if err != nil {
		return nil, err
	}
	disc, err := f.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	param := resource.QueryParamFieldValidation
	primary := resource.NewQueryParamVerifierV3(dyn, cached.NewClient(disc.OpenAPIV3()), param)
	secondary := resource.NewQueryParamVerifier(dyn, openapi.NewOpenAPIGetter(disc), param)
	v := &rememberingVerifier{host: f.cfg.Host, user: f.cfg.Impersonate.UserName,
		next: resource.NewFallbackQueryParamVerifier(primary, secondary)}
	return validation.NewParamVerifyingSchema(s, v, directive), nil
}

// rememberingVerifier answers from fieldValidationSupport, else asks next
// and remembers a yes.
type rememberingVerifier struct {
	host, user string
	next       resource.Verifier
}

func (v *rememberingVerifier) HasSupport(gvk schema.GroupVersionKind) error {
	key := fieldValidationKey{host: v.host, user: v.user, gvk: gvk}
	if _, ok := fieldValidationSupport.Load(key); ok {
		return nil
	}
	gv := fieldValidationKey{host: v.host, user: v.user, gvk: schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version}}
	mu, _ := fieldValidationAsking.LoadOrStore(gv, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if _, ok := fieldValidationSupport.Load(key); ok {
		return nil
	}
	err := v.next.HasSupport(gvk)
	if err == nil {
		fieldValidationSupport.Store(key, true)
	}
	return err
}

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// clusterIssuerCRD is a test CRD for cert-manager's ClusterIssuer:
// cluster-scoped, any fields, a status subresource (cert-manager's
// controller writes the Ready condition there; here the test does).
const clusterIssuerCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterissuers.cert-manager.io}
spec:
  group: cert-manager.io
  names: {kind: ClusterIssuer, listKind: ClusterIssuerList, plural: clusterissuers, singular: clusterissuer}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// installClusterIssuerCRD creates the ClusterIssuer CRD (once for the
// suite's cluster) and waits until it is served.
func installClusterIssuerCRD(t *testing.T) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(clusterIssuerCRD), crd); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Polled directly: testenv.WaitFor would also hold the CRD to the Flux
	// status protocol (a Ready condition) at the end of the test.
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		if env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd) != nil {
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("CRD %s not Established: %v", crd.Name, err)
	}
}

// homeOpsCertManager reads home-ops' cert-manager Kustomization
// (kubernetes/apps/cert-manager/cert-manager/ks.yaml) and its ClusterIssuer
// (app/clusterissuer.yaml) from the shared testdata, unmodified.
func homeOpsCertManager(t *testing.T) (ks *kustomizev1.Kustomization, issuer string) {
	t.Helper()
	dir := filepath.Join(testdataDir(t), "repos", "home-ops", "kubernetes", "apps", "cert-manager", "cert-manager")
	b, err := os.ReadFile(filepath.Join(dir, "ks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ks = &kustomizev1.Kustomization{}
	if err := yaml.Unmarshal(b, ks); err != nil {
		t.Fatal(err)
	}
	if len(ks.Spec.HealthCheckExprs) != 1 || ks.Spec.HealthCheckExprs[0].Kind != "ClusterIssuer" {
		t.Fatalf("ks.yaml's healthCheckExprs: %+v", ks.Spec.HealthCheckExprs)
	}
	i, err := os.ReadFile(filepath.Join(dir, "app", "clusterissuer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return ks, string(i)
}

// setIssuerReady writes the ClusterIssuer's Ready condition through the
// status subresource, as cert-manager does.
func setIssuerReady(t *testing.T, name string, ready metav1.ConditionStatus, reason, message string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("cert-manager.io/v1")
	u.SetKind("ClusterIssuer")
	u.SetName(name)
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q,"reason":%q,"message":%q,"lastTransitionTime":%q,"observedGeneration":1}]}}`,
		ready, reason, message, time.Now().UTC().Format(time.RFC3339))
	if err := env.Client.Status().Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func getIssuer(name string) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("cert-manager.io/v1")
	u.SetKind("ClusterIssuer")
	return env.Client.Get(context.Background(), client.ObjectKey{Name: name}, u)
}

// TestBinaryHealthCheckExprs runs the built kustomize-controller on home-ops'
// cert-manager Kustomization with its healthCheckExprs verbatim,
// reduced to what the local cluster runs: its ClusterIssuer (a test CRD) and
// the health check of that issuer (not of the cert-manager HelmRelease,
// which needs the chart):
//   - Ready only once the issuer's Ready condition is True;
//   - the `failed` expression fails the health check as soon as the issuer
//     is Ready=False, long before the timeout, with Flux's message (here
//     with spec.wait, which checks every applied object);
//   - a malformed expression stalls the Kustomization with
//     InvalidCELExpression, naming the expression, and applies nothing.
func TestBinaryHealthCheckExprs(t *testing.T) {
	installClusterIssuerCRD(t)
	ks, issuer := homeOpsCertManager(t)
	appNS := newNamespace(t)
	const homeOpsName = "letsencrypt-production"
	issuerName := func(c string) string { return homeOpsName + "-" + c + "-" + appNS }
	files := map[string]string{}
	for _, c := range []string{"ready", "failed", "malformed"} {
		files[c+"/clusterissuer.yaml"] = strings.Replace(issuer, "name: "+homeOpsName+"\n", "name: "+issuerName(c)+"\n", 1)
		files[c+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./clusterissuer.yaml\n"
	}
	r := newRepo(t, files)
	src := newSource(t, binaryNS, "cert-manager-"+appNS, r)
	rev := src.Status.Artifact.Revision
	// The Kustomization of ks.yaml, in the test's namespaces.
	newKS := func(c string, mutate func(k *kustomizev1.Kustomization)) *kustomizev1.Kustomization {
		return newKustomization(t, binaryNS, "cert-manager-"+c+"-"+appNS, src.Name, func(k *kustomizev1.Kustomization) {
			k.Spec.HealthCheckExprs = ks.Spec.HealthCheckExprs
			k.Spec.Interval, k.Spec.Prune = ks.Spec.Interval, ks.Spec.Prune
			k.Spec.TargetNamespace = appNS
			k.Spec.Path = "./" + c
			for _, hc := range ks.Spec.HealthChecks {
				if hc.Kind == "ClusterIssuer" {
					hc.Name = issuerName(c)
					k.Spec.HealthChecks = append(k.Spec.HealthChecks, hc)
				}
			}
			mutate(k)
		})
	}
	healthy := func(k *kustomizev1.Kustomization) *metav1.Condition {
		return apimeta.FindStatusCondition(k.Status.Conditions, kustomizev1.HealthyCondition)
	}

	t.Run("Ready once the issuer is", func(t *testing.T) {
		t.Parallel()
		k := newKS("ready", func(*kustomizev1.Kustomization) {})
		name := issuerName("ready")
		waitFor(t, k, "health checks running", func() bool {
			c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReconcilingCondition)
			return c != nil && strings.HasPrefix(c.Message, "Running health checks for revision "+rev) && getIssuer(name) == nil
		})
		if c := readyCond(k); c == nil || c.Status == metav1.ConditionTrue {
			t.Fatalf("Ready %+v before the issuer is Ready", c)
		}
		setIssuerReady(t, name, metav1.ConditionTrue, "ACMEAccountRegistered", "The ACME account was registered with the ACME server")
		waitApplied(t, k, rev)
		if h := healthy(k); h == nil || h.Status != metav1.ConditionTrue {
			t.Errorf("Healthy %+v", h)
		}
	})

	t.Run("failed fails fast", func(t *testing.T) {
		t.Parallel()
		name := issuerName("failed")
		k := newKS("failed", func(k *kustomizev1.Kustomization) {
			k.Spec.HealthChecks = nil
			k.Spec.Wait = true
			// Far beyond the test's own wait: only the failed expression
			// can end the health check in time.
			k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Minute}
		})
		waitFor(t, k, "issuer applied", func() bool {
			c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReconcilingCondition)
			return c != nil && strings.HasPrefix(c.Message, "Running health checks") && getIssuer(name) == nil
		})
		setIssuerReady(t, name, metav1.ConditionFalse, "ErrRegisterACMEAccount", "Failed to register ACME account")
		c := waitFailed(t, k, kustomizev1.HealthCheckFailedReason)
		want := regexp.MustCompile(`^health check failed after [0-9]+s: failed early due to stalled resources: \[ClusterIssuer/` +
			regexp.QuoteMeta(name) + ` status: 'Failed'\]$`)
		if !want.MatchString(c.Message) {
			t.Errorf("Ready message %q, want %s", c.Message, want)
		}
		if h := healthy(k); h == nil || h.Status != metav1.ConditionFalse || h.Message != c.Message {
			t.Errorf("Healthy %+v", h)
		}
	})

	t.Run("malformed expression stalls", func(t *testing.T) {
		t.Parallel()
		bad := "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True'"
		k := newKS("malformed", func(k *kustomizev1.Kustomization) {
			k.Spec.HealthCheckExprs = append([]kustomizev1.CustomHealthCheck(nil), ks.Spec.HealthCheckExprs...)
			k.Spec.HealthCheckExprs[0].Current = bad
		})
		waitFor(t, k, "Stalled", func() bool { return apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.StalledCondition) })
		prefix := "Reconciliation failed terminally due to configuration error: failed to create custom status evaluator for healthchecks[0]: " +
			"failed to parse the expression Current: failed to parse the CEL expression '" + bad + "': ERROR: <input>:1:"
		c := readyCond(k)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != meta.InvalidCELExpressionReason || !strings.HasPrefix(c.Message, prefix) {
			t.Errorf("Ready %+v, want False %s %q…", c, meta.InvalidCELExpressionReason, prefix)
		}
		if s := apimeta.FindStatusCondition(k.Status.Conditions, meta.StalledCondition); s.Reason != meta.InvalidCELExpressionReason || s.Message != c.Message {
			t.Errorf("Stalled %+v", s)
		}
		if err := getIssuer(issuerName("malformed")); !apierrors.IsNotFound(err) {
			t.Errorf("the issuer of a Kustomization with a malformed expression was applied (%v)", err)
		}
		if k.Status.Inventory != nil || k.Status.LastAttemptedRevision != "" {
			t.Errorf("inventory %v, last attempted revision %q: want nothing attempted", k.Status.Inventory, k.Status.LastAttemptedRevision)
		}
		// The event is recorded asynchronously: wait for it.
		var evs []string
		if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, testenv.WaitTimeout, true, func(context.Context) (bool, error) {
			evs = kubeEvents(t, binaryNS, k.Name, meta.InvalidCELExpressionReason)
			return len(evs) > 0, nil
		}); err != nil || !strings.HasPrefix(evs[0], prefix) {
			t.Errorf("events %q, want a Warning naming the expression", evs)
		}
	})
}

// TestBinaryDependsOnReadyExpr: a dependsOn readyExpr (CEL over self and
// dep) replaces the dependency's Ready check (Flux compatible, as Flux's own
// test: the dependency is suspended, so never Ready, and the expression
// compares an annotation of both); false waits with Flux's message; one that
// does not compile stalls with InvalidCELExpression, naming the dependency
// and the expression.
func TestBinaryDependsOnReadyExpr(t *testing.T) {
	appNS := newNamespace(t)
	r := newRepo(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: " + appNS + "}\ndata: {a: \"1\"}\n"})
	src := newSource(t, binaryNS, "ready-expr-"+appNS, r)
	rev := src.Status.Artifact.Revision
	version := func(v string) func(*kustomizev1.Kustomization) {
		return func(k *kustomizev1.Kustomization) { k.Annotations = map[string]string{"app/version": v} }
	}
	dep := "base-" + appNS
	newKustomization(t, binaryNS, dep, src.Name, func(k *kustomizev1.Kustomization) {
		version("v1")(k)
		k.Spec.Suspend = true
		k.Spec.Path = "./app"
	})
	const sameVersion = "self.metadata.annotations['app/version'] == dep.metadata.annotations['app/version']"
	dependent := func(name, v, expr string) *kustomizev1.Kustomization {
		return newKustomization(t, binaryNS, name+"-"+appNS, src.Name, func(k *kustomizev1.Kustomization) {
			version(v)(k)
			k.Spec.Path = "./app"
			k.Spec.Prune = false // the three apply the same ConfigMap
			k.Spec.DependsOn = []meta.DependencyReference{{Name: dep, ReadyExpr: expr}}
		})
	}

	t.Run("true", func(t *testing.T) {
		t.Parallel()
		waitApplied(t, dependent("same", "v1", sameVersion), rev)
	})
	t.Run("false", func(t *testing.T) {
		t.Parallel()
		k := dependent("other", "v2", sameVersion)
		c := waitFailed(t, k, meta.DependencyNotReadyReason)
		if want := fmt.Sprintf("dependency '%s/%s' is not ready according to readyExpr eval", binaryNS, dep); c.Message != want {
			t.Errorf("Ready message %q, want %q", c.Message, want)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		k := dependent("invalid", "v1", "self.generation == deps.generation")
		waitFor(t, k, "Stalled", func() bool { return apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.StalledCondition) })
		want := "Reconciliation failed terminally due to configuration error: failed to evaluate dependency " + dep +
			": failed to parse the CEL expression 'self.generation == deps.generation': ERROR: <input>:1:20: undeclared reference to 'deps'"
		if c := readyCond(k); c == nil || c.Reason != meta.InvalidCELExpressionReason || !strings.HasPrefix(c.Message, want) {
			t.Errorf("Ready %+v, want InvalidCELExpression %q…", c, want)
		}
	})
}

// TestAdditiveCELDependencyCheck: with the feature gate the dependency must
// be Ready as well as make the readyExpr true; without it the readyExpr
// alone decides. The dependency is on a shard no controller runs.
func TestAdditiveCELDependencyCheck(t *testing.T) {
	ns := newNamespace(t)
	dep := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: ns, Labels: map[string]string{shardKey: "nobody"}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour},
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "none"}},
	}
	if err := env.Client.Create(context.Background(), dep); err != nil {
		t.Fatal(err)
	}
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{DependsOn: []meta.DependencyReference{{Name: "base", ReadyExpr: "dep.metadata.name == 'base'"}}}}
	r := &KustomizationReconciler{APIReader: env.Client, RequeueDependency: time.Second}
	if f := r.checkDependencies(context.Background(), obj, "main@sha1:x"); f != nil {
		t.Errorf("without the gate: %v, want the readyExpr alone to decide", f)
	}
	r.AdditiveCELDependencyCheck = true
	f := r.checkDependencies(context.Background(), obj, "main@sha1:x")
	if want := "dependency '" + ns + "/base' is not ready"; f == nil || f.Reason != meta.DependencyNotReadyReason || f.Message != want {
		t.Errorf("with the gate: %+v, want DependencyNotReady %q", f, want)
	}
	obj.Spec.DependsOn[0].ReadyExpr = "dep.metadata.name == 'other'"
	f = r.checkDependencies(context.Background(), obj, "main@sha1:x")
	if want := "dependency '" + ns + "/base' is not ready according to readyExpr eval"; f == nil || f.Message != want {
		t.Errorf("a false readyExpr with the gate: %+v, want %q", f, want)
	}
	// An expression on a field the dependency lacks is retried, not stalled.
	obj.Spec.DependsOn[0].ReadyExpr = "dep.status.lastAppliedRevision == 'x'"
	f = r.checkDependencies(context.Background(), obj, "main@sha1:x")
	if f == nil || f.Stalled || f.Reason != meta.DependencyNotReadyReason ||
		!strings.HasPrefix(f.Message, "failed to evaluate the CEL expression 'dep.status.lastAppliedRevision == 'x'': no such key") {
		t.Errorf("evaluation error: %+v", f)
	}
}

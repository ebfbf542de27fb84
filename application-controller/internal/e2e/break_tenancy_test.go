package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestObjectInANamespaceOutsideTheProjectIsNotApplied: an Application
// of a project whose only destination namespace is its own renders a
// ConfigMap whose metadata.namespace is another team's namespace, where
// another Application keeps a ConfigMap of that name. Argo CD checks
// every object's namespace against the project's destinations
// (controller/sync.go validateSyncPermissions: "namespace <ns> is not
// permitted in project '<project>'"), so nothing is written there: the
// other team's ConfigMap keeps its data and its tracking, and a later
// commit that drops the object cannot prune it.
func TestObjectInANamespaceOutsideTheProjectIsNotApplied(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	victimNS, tenantNS := uniqueName("victim"), uniqueName("tenant")
	victimRepo := gitSrv.NewRepo(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: payments\ndata:\n  owner: victim\n"})
	victim := exampleApp(uniqueName("victim"), victimRepo.URL(), "app", victimNS, nil)
	victim.Spec.SyncPolicy.Automated.SelfHeal = nil
	create(t, victim)
	waitApp(t, victim, "Synced and Healthy", syncedHealthy(victim))

	proj := &argov1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("team-a"), Namespace: argocd}, Spec: argov1.AppProjectSpec{
		SourceRepos:              []string{"*"},
		Destinations:             []argov1.ApplicationDestination{{Server: "*", Namespace: tenantNS}},
		ClusterResourceWhitelist: []argov1.ClusterResourceRestrictionItem{{Group: "", Kind: "Namespace"}},
	}}
	create(t, proj)
	tenantRepo := gitSrv.NewRepo(t, map[string]string{
		"app/own.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\ndata:\n  k: v\n",
		"app/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: payments\n  namespace: " + victimNS + "\ndata:\n  owner: tenant\n",
	})
	tenant := exampleApp(uniqueName("tenant"), tenantRepo.URL(), "app", tenantNS, nil)
	tenant.Spec.Project = proj.Name
	create(t, tenant)
	want := "namespace " + victimNS + " is not permitted in project '" + proj.Name + "'"
	waitApp(t, tenant, "refused or synced", func() bool {
		st := tenant.Status.OperationState
		return hasCondition(tenant, argov1.ConditionInvalidSpecError, want) || hasCondition(tenant, argov1.ConditionSyncError, want) ||
			(st != nil && completed(st.Phase))
	})
	// Give an auto-sync that got through the time to write.
	time.Sleep(3 * time.Second)
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: victimNS, Name: "payments"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["owner"] != "victim" || !strings.HasPrefix(cm.Annotations[argov1.AnnotationTrackingID], victim.Name+":") {
		t.Errorf("the other team's ConfigMap was written by an Application of project %s: data %v, tracking %q", proj.Name, cm.Data, cm.Annotations[argov1.AnnotationTrackingID])
	}
	msgs := ""
	for _, c := range tenant.Status.Conditions {
		msgs += c.Type + ": " + c.Message + "; "
	}
	if st := tenant.Status.OperationState; st != nil {
		msgs += "operation " + st.Phase + ": " + st.Message
	}
	if !strings.Contains(msgs, want) {
		t.Errorf("no %q in the tenant's conditions or operation: %s", want, msgs)
	}

	// Dropping the object from the tenant's repository must not delete
	// the other team's ConfigMap.
	tenantRepo.MustCommit(t, map[string]string{"app/other.yaml": ""}, "drop other")
	refresh(t, tenant)
	_ = wait.PollUntilContextTimeout(t.Context(), time.Second, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) != nil, nil
	})
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Errorf("the other team's ConfigMap %s/payments was pruned by an Application of project %s: %v", victimNS, proj.Name, err)
	}
}

func completed(phase string) bool {
	return phase == argov1.OperationSucceeded || phase == argov1.OperationFailed || phase == argov1.OperationError
}

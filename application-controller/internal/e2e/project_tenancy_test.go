package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/gitserver"
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

// TestProjectScopedRepositoryCredentialsServeOnlyTheirProject: a
// repository Secret with `project: team-a` gives its credentials to
// team-a's Applications only (Argo CD's db.GetRepository(repoURL,
// project) returns project-scoped credentials to that project alone). An
// Application of another project on the same private repository gets no
// credentials: its fetch fails with a ComparisonError and nothing of the
// repository is applied for it, while team-a's Application stays synced.
func TestProjectScopedRepositoryCredentialsServeOnlyTheirProject(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, twoConfigMaps)
	srv, err := gitserver.Start(gitserver.Options{Root: gitSrv.Root, Username: "git", Password: "team-a-pass"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	url := srv.URL + "/" + repo.Name
	proj := &argov1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("team-a"), Namespace: argocd}, Spec: argov1.AppProjectSpec{
		SourceRepos:              []string{"*"},
		Destinations:             []argov1.ApplicationDestination{{Server: "*", Namespace: "*"}},
		ClusterResourceWhitelist: []argov1.ClusterResourceRestrictionItem{{Group: "*", Kind: "*"}},
	}}
	create(t, proj)
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("repo"), Namespace: argocd, Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"url": url, "username": "git", "password": "team-a-pass", "project": proj.Name},
	})
	nsA := uniqueName("team-a")
	appA := exampleApp(uniqueName("team-a"), url, "app", nsA, nil)
	appA.Spec.Project = proj.Name
	create(t, appA)
	waitApp(t, appA, "Synced and Healthy", syncedHealthy(appA))

	nsB := uniqueName("team-b")
	appB := exampleApp(uniqueName("team-b"), url, "app", nsB, nil)
	create(t, appB)
	// For 10 s, team-b's Application never shows the repository's
	// objects (status.resources is what it rendered) nor applies them.
	var read []argov1.ResourceStatus
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		waitApp(t, appB, "read", func() bool { return true })
		if len(appB.Status.Resources) > 0 || exists(t, &corev1.ConfigMap{}, nsB, "a") {
			read = appB.Status.Resources
			break
		}
	}
	if read != nil {
		t.Errorf("an Application of project default rendered a repository whose only credentials are scoped to project %s: sync %s, resources %d, conditions %+v",
			proj.Name, appB.Status.Sync.Status, len(read), appB.Status.Conditions)
	}
	// team-a keeps fetching with its credentials.
	rev := repo.MustCommit(t, map[string]string{"app/b.yaml": ""}, "drop b")
	refresh(t, appA)
	waitApp(t, appA, "team-a synced at the new commit", func() bool {
		return appA.Status.Sync.Revision == rev && appA.Status.Sync.Status == argov1.SyncStatusSynced
	})
	// team-b's Application does not take the credentials off the
	// GitRepository they share: team-a sees no ComparisonError.
	for range 15 {
		time.Sleep(time.Second)
		waitApp(t, appA, "read", func() bool { return true })
		if hasCondition(appA, argov1.ConditionComparisonError, "") {
			t.Errorf("team-a's Application lost its credentials to team-b's: %+v", appA.Status.Conditions)
			break
		}
	}
}

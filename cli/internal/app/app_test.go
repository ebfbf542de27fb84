package app

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/appdiff"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func boolp(b bool) *bool { return &b }

// seed is the payment-api Application, compared and synced once.
func seed() *argov1.Application {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &argov1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "payment-api", Namespace: "argocd", ResourceVersion: "42"},
		Spec: argov1.ApplicationSpec{
			Project:     "default",
			Source:      &argov1.ApplicationSource{RepoURL: "https://github.com/acme/infra-k8s.git", TargetRevision: "main", Path: "apps/payment-api"},
			Destination: argov1.ApplicationDestination{Server: argov1.InClusterServer, Namespace: "production"},
			SyncPolicy: &argov1.SyncPolicy{Automated: &argov1.SyncPolicyAutomated{Prune: boolp(true), SelfHeal: boolp(true)},
				SyncOptions: []string{"CreateNamespace=true", "PruneLast=true"}},
		},
		Status: argov1.ApplicationStatus{
			Sync:   argov1.SyncStatus{Status: argov1.SyncStatusSynced, Revision: sha},
			Health: argov1.AppHealthStatus{Status: argov1.HealthHealthy},
			Resources: []argov1.ResourceStatus{
				{Version: "v1", Kind: "Service", Namespace: "production", Name: "payment-api", Status: "Synced", Health: &argov1.HealthStatus{Status: "Healthy"}},
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "production", Name: "payment-api", Status: "Synced", Health: &argov1.HealthStatus{Status: "Healthy"}},
				{Version: "v1", Kind: "ConfigMap", Namespace: "production", Name: "payment-config", Status: "OutOfSync"},
			},
			History: []argov1.RevisionHistory{
				{ID: 0, Revision: "1111111aaaa", DeployedAt: at, Source: argov1.ApplicationSource{RepoURL: "https://github.com/acme/infra-k8s.git", TargetRevision: "main"}},
				{ID: 1, Revision: sha, DeployedAt: metav1.NewTime(at.Add(time.Hour)), Source: argov1.ApplicationSource{RepoURL: "https://github.com/acme/infra-k8s.git", TargetRevision: "main"}},
			},
		},
	}
}

func TestPrintListIsArgocdAppList(t *testing.T) {
	a, b := seed(), seed()
	b.Name, b.Namespace = "web", "team-a"
	b.Spec.SyncPolicy = nil
	b.Spec.Project = ""
	b.Status.Sync.Status, b.Status.Health.Status = "OutOfSync", "Missing"
	b.Status.Conditions = []argov1.ApplicationCondition{{Type: "SyncError", Message: "x"}, {Type: "SharedResourceWarning", Message: "y"}, {Type: "SyncError", Message: "z"}}
	var out bytes.Buffer
	if err := PrintList(&out, []argov1.Application{*a, *b}, true); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"NAME", "CLUSTER", "NAMESPACE", "PROJECT", "STATUS", "HEALTH", "SYNCPOLICY", "CONDITIONS", "REPO", "PATH", "TARGET"},
		{"payment-api", "https://kubernetes.default.svc", "production", "default", "Synced", "Healthy", "Auto-Prune", "<none>", "https://github.com/acme/infra-k8s.git", "apps/payment-api", "main"},
		{"team-a/web", "https://kubernetes.default.svc", "production", "default", "OutOfSync", "Missing", "Manual", "SharedResourceWarning,SyncError(2)", "https://github.com/acme/infra-k8s.git", "apps/payment-api", "main"},
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, l := range lines {
		if got := strings.Fields(l); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("line %d = %q, want %q", i, got, want[i])
		}
	}
}

func TestSyncPolicyColumn(t *testing.T) {
	for _, c := range []struct {
		policy *argov1.SyncPolicy
		want   string
	}{
		{nil, "Manual"},
		{&argov1.SyncPolicy{}, "Manual"},
		{&argov1.SyncPolicy{Automated: &argov1.SyncPolicyAutomated{}}, "Auto"},
		{&argov1.SyncPolicy{Automated: &argov1.SyncPolicyAutomated{Prune: boolp(true)}}, "Auto-Prune"},
		{&argov1.SyncPolicy{Automated: &argov1.SyncPolicyAutomated{Prune: boolp(true), Enabled: boolp(false)}}, "Manual"},
	} {
		a := seed()
		a.Spec.SyncPolicy = c.policy
		if got := SyncPolicy(a); got != c.want {
			t.Errorf("SyncPolicy(%+v) = %q, want %q", c.policy, got, c.want)
		}
	}
}

func TestSyncStatusLine(t *testing.T) {
	for _, c := range []struct {
		target, status, rev, want string
	}{
		{"main", "Synced", sha, "Synced to main (0123456)"},
		{"", "OutOfSync", sha, "OutOfSync from HEAD (0123456)"},
		{sha[:7], "Synced", sha, "Synced to 0123456"},
		{"main", "Unknown", "", "Unknown"},
	} {
		a := seed()
		a.Spec.Source.TargetRevision, a.Status.Sync.Status, a.Status.Sync.Revision = c.target, c.status, c.rev
		if got := SyncStatus(a); got != c.want {
			t.Errorf("SyncStatus(target %q, %s, %q) = %q, want %q", c.target, c.status, c.rev, got, c.want)
		}
	}
}

func TestPrintAppShowsSummaryAndResources(t *testing.T) {
	a := seed()
	start := metav1.NewTime(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(7 * time.Second))
	a.Status.OperationState = &argov1.OperationState{Phase: "Succeeded", Message: "successfully synced (all tasks run)", StartedAt: start, FinishedAt: &end,
		SyncResult: &argov1.SyncOperationResult{Revision: sha, Resources: []*argov1.ResourceResult{
			{Group: "apps", Kind: "Deployment", Namespace: "production", Name: "payment-api", Status: "Synced", Message: "deployment.apps/payment-api configured"},
			{Group: "batch", Kind: "Job", Namespace: "production", Name: "migrate", Status: "Synced", HookType: "PreSync", HookPhase: "Succeeded", Message: "job completed"},
		}}}
	var out bytes.Buffer
	if err := PrintApp(&out, a, true, end.Time); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Name:               payment-api\n",
		"Project:            default\n",
		"Server:             https://kubernetes.default.svc\n",
		"Namespace:          production\n",
		"Source:\n- Repo:             https://github.com/acme/infra-k8s.git\n  Target:           main\n  Path:             apps/payment-api\n",
		"Sync Policy:        Automated (Prune)\n",
		"Sync Status:        Synced to main (0123456)\n",
		"Health Status:      Healthy\n",
		"Operation:          Sync\nSync Revision:      " + sha + "\nPhase:              Succeeded\n",
		"Duration:           7s\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("app get output lacks %q:\n%s", want, out.String())
		}
	}
	var rows [][]string
	inTable := false
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "GROUP ") {
			inTable = true
		}
		if inTable && l != "" {
			rows = append(rows, strings.Fields(l))
		}
	}
	want := [][]string{
		{"GROUP", "KIND", "NAMESPACE", "NAME", "STATUS", "HEALTH", "HOOK", "MESSAGE"},
		{"apps", "Deployment", "production", "payment-api", "Synced", "Healthy", "deployment.apps/payment-api", "configured"},
		{"batch", "Job", "production", "migrate", "Succeeded", "Synced", "PreSync", "job", "completed"},
		{"ConfigMap", "production", "payment-config", "OutOfSync"},
		{"Service", "production", "payment-api", "Synced", "Healthy"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("resources table = %q\nwant %q", rows, want)
	}
}

func TestPrintHistory(t *testing.T) {
	var out bytes.Buffer
	if err := PrintHistory(&out, seed().Status.History); err != nil {
		t.Fatal(err)
	}
	want := "SOURCE  https://github.com/acme/infra-k8s.git\n" +
		"ID      DATE                  REVISION\n" +
		"0       2026-01-02T03:04:05Z  main (1111111)\n" +
		"1       2026-01-02T04:04:05Z  main (0123456)\n"
	if out.String() != want {
		t.Errorf("history:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestFindHistory(t *testing.T) {
	a := seed()
	if h, err := FindHistory(a, -1); err != nil || h.ID != 0 {
		t.Errorf("FindHistory(-1) = %v, %v; want the previous entry, 0", h, err)
	}
	if h, err := FindHistory(a, 1); err != nil || h.ID != 1 {
		t.Errorf("FindHistory(1) = %v, %v", h, err)
	}
	if _, err := FindHistory(a, 7); err == nil || err.Error() != "application 'payment-api' does not have deployment id '7' in history" {
		t.Errorf("FindHistory(7) error = %v", err)
	}
	a.Status.History = a.Status.History[:1]
	if _, err := FindHistory(a, -1); err == nil || !strings.Contains(err.Error(), "at least two successful deployments") {
		t.Errorf("FindHistory(-1) with one entry: error = %v", err)
	}
}

func TestPrintDiff(t *testing.T) {
	objs := []appdiff.Object{
		{Kind: "ConfigMap", Namespace: "production", Name: "payment-config", Fields: []appdiff.Field{
			{Path: "/data/LOG_LEVEL", Live: json.RawMessage(`"debug"`), Desired: json.RawMessage(`"info"`), Manager: "kubectl-edit"},
			{Path: "/data/NEW", Desired: json.RawMessage(` "x" `)},
		}},
		{Group: "apps", Kind: "Deployment", Namespace: "production", Name: "payment-api"},
		{Kind: "Service", Namespace: "production", Name: "payment-api", Fields: []appdiff.Field{{Path: "", Desired: json.RawMessage(`{"kind":"Service"}`)}}},
	}
	var out bytes.Buffer
	PrintDiff(&out, objs)
	want := "\n===== /ConfigMap production/payment-config ======\n" +
		"/data/LOG_LEVEL (changed by kubectl-edit)\n- \"debug\"\n+ \"info\"\n" +
		"/data/NEW\n+ \"x\"\n" +
		"\n===== apps/Deployment production/payment-api ======\n(out of sync; no field differences published)\n" +
		"\n===== /Service production/payment-api ======\n(whole object)\n+ {\"kind\":\"Service\"}\n"
	if out.String() != want {
		t.Errorf("diff:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestPendingDiffFallsBackToOutOfSyncResources(t *testing.T) {
	a := seed()
	objs, err := PendingDiff(a)
	if err != nil || len(objs) != 1 || objs[0].Name != "payment-config" || objs[0].Fields != nil {
		t.Errorf("PendingDiff without the annotation = %+v, %v; want the OutOfSync ConfigMap alone", objs, err)
	}
	a.Annotations = map[string]string{appdiff.Annotation: `[{"kind":"ConfigMap","name":"c","fields":[{"path":"/data/a","live":"1"}]}]`}
	if objs, err = PendingDiff(a); err != nil || len(objs) != 1 || len(objs[0].Fields) != 1 {
		t.Errorf("PendingDiff with the annotation = %+v, %v", objs, err)
	}
	a.Annotations[appdiff.Annotation] = "{"
	if _, err = PendingDiff(a); err == nil {
		t.Error("PendingDiff of a broken annotation: no error")
	}
}

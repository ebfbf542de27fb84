package e2e

import (
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretApp is an automated Application of a ConfigMap and the Secret
// card written as secretYAML; it waits until the first operation ended.
func secretApp(t *testing.T, secretYAML string) (*argov1.Application, string) {
	t.Helper()
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n",
		"app/secret.yaml": secretYAML,
	})
	ns := uniqueName("secret-type")
	app := exampleApp(uniqueName("secret-type"), repo.URL(), "app", ns, nil)
	app.Spec.SyncPolicy.Retry = &argov1.RetryStrategy{Limit: 0} // fail at once
	create(t, app)
	waitApp(t, app, "the first sync ended", func() bool {
		st := app.Status.OperationState
		return st != nil && completed(st.Phase)
	})
	return app, ns
}

// TestSecretStringDataNumberIsNotDroppedSilently: a Secret whose
// stringData value YAML reads as a number (an all-digit PIN written
// unquoted, the usual slip) is either applied with that key or refused
// with a message naming the field. The API server refuses it (a
// stringData value is a string), and so does Argo CD's kubectl apply;
// applying the Secret without the key and reporting Synced hides that
// the application lacks it.
func TestSecretStringDataNumberIsNotDroppedSilently(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	app, ns := secretApp(t, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: card\nstringData:\n  pin: 73190552\n  name: main\n")
	s := &corev1.Secret{}
	applied := exists(t, s, ns, "card")
	if st := app.Status.OperationState; st.Phase == argov1.OperationSucceeded && applied && len(s.Data["pin"]) == 0 {
		t.Errorf("the Secret was applied without its key pin and the sync Succeeded (keys %v, sync %s)", dataKeys(s.Data), app.Status.Sync.Status)
	}
}

// TestSecretValueOfTheWrongTypeStaysOutOfMessages: a Secret whose data
// value is a number cannot be applied; the failure names the Secret and
// the field but not the value, in the operation's message, its result,
// the conditions and the events. (Argo CD applies with kubectl, whose
// decoding error, "cannot unmarshal number into Go struct field
// Secret.data of type []uint8", holds no value; the issue asks for
// secret-free messages.)
func TestSecretValueOfTheWrongTypeStaysOutOfMessages(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	const pin = "73190552"
	app, _ := secretApp(t, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: card\ndata:\n  pin: "+pin+"\n")
	waitApp(t, app, "the sync failed", func() bool {
		st := app.Status.OperationState
		return st != nil && st.Phase == argov1.OperationFailed
	})
	var where []string
	if st := app.Status.OperationState; strings.Contains(st.Message, pin) {
		where = append(where, "operation message: "+st.Message)
	}
	if r := resultOf(app, "Secret", "card"); r != nil && strings.Contains(r.Message, pin) {
		where = append(where, "result: "+r.Message)
	}
	for _, c := range app.Status.Conditions {
		if strings.Contains(c.Message, pin) {
			where = append(where, "condition "+c.Type+": "+c.Message)
		}
	}
	var events corev1.EventList
	if err := env.Client.List(t.Context(), &events, client.InNamespace(argocd)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == app.Name && strings.Contains(e.Message, pin) {
			where = append(where, "event "+e.Reason+": "+e.Message)
		}
	}
	for _, w := range where {
		t.Errorf("the Secret's value is in the %s", w)
	}
}

func dataKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestApplicationEventsReachAnAlert routes an Application's events, as
// any Flux kind's, through an Alert on kind Application to a generic
// Provider: the sync's OperationCompleted event arrives with the
// Application as involved object.
func TestApplicationEventsReachAnAlert(t *testing.T) {
	logsOnFailure(t)
	var mu sync.Mutex
	var got []map[string]any
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev map[string]any
		if json.Unmarshal(b, &ev) == nil {
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
		}
	}))
	t.Cleanup(sink.Close)
	provider := &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: "sink", Namespace: argocd},
		Spec: notificationv1.ProviderSpec{Type: "generic", Address: sink.URL}}
	create(t, provider)
	alert := &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: argocd},
		Spec: notificationv1.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: "sink"},
			EventSources: []notificationv1.CrossNamespaceObjectReference{{Kind: "Application", Name: "*"}}}}
	create(t, alert)

	repo := gitSrv.NewRepo(t, paymentAPI)
	sha := repo.MustGit(t, "rev-parse", "HEAD")
	app := seedApplication(t, uniqueName("alerted"), repo.URL(), uniqueName("alerted"), true)
	create(t, app)
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))
	want := "Sync operation to " + sha + " succeeded"
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, appTimeout, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range got {
			obj, _ := ev["involvedObject"].(map[string]any)
			if obj["kind"] == "Application" && obj["name"] == app.Name && strings.Contains(ev["message"].(string), want) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no event %q of %s reached the Provider; got %v", want, app.Name, got)
	}
	// One rollout: each transition and each operation event once (a
	// reconcile from a stale copy used to record them twice).
	var events corev1.EventList
	if err := env.Client.List(t.Context(), &events, client.InNamespace(argocd)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.InvolvedObject.Name == app.Name && ev.Count > 1 {
			t.Errorf("event %s %q recorded %d times", ev.Reason, ev.Message, ev.Count)
		}
	}
}

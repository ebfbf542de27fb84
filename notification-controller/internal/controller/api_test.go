package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTestdataNotificationObjects creates the Alerts, Providers and
// Receivers of the real repositories in shared/testdata with strict field
// validation and reads them back: nothing is lost and Flux's defaults
// (eventSeverity info, interval 10m, observedGeneration -1) are filled in.
// Eddy's schema rejects what Flux's rejects: an eventSources kind outside
// the enum (home-ops' FluxInstance, a Flux Operator kind).
func TestTestdataNotificationObjects(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	files, _ := filepath.Glob(filepath.Join(testenv.TestdataDir(t), "repos", "home-ops", "kubernetes", "components", "alerts", "*", "*.yaml"))
	files = append(files, filepath.Join(testenv.TestdataDir(t), "repos", "home-ops", "kubernetes", "apps", "flux-system", "flux-instance", "app", "receiver.yaml"))
	kinds := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := d.Decode(&u.Object); err != nil {
				break
			}
			if u.GetAPIVersion() == "" || !strings.HasPrefix(u.GetAPIVersion(), "notification.toolkit.fluxcd.io/") {
				continue
			}
			u.SetNamespace(ns)
			err := env.Client.Create(ctx, u, client.FieldValidation("Strict"))
			if u.GetName() == "alertmanager" && u.GetKind() == "Alert" {
				if err == nil || !strings.Contains(err.Error(), "eventSources") || !strings.Contains(err.Error(), "FluxInstance") {
					t.Errorf("Alert with kind FluxInstance: %v, want a rejection naming eventSources", err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s (%s) rejected: %v", u.GetKind(), u.GetName(), f, err)
				continue
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(u.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			switch u.GetKind() {
			case "Alert":
				if s, _, _ := unstructured.NestedString(got.Object, "spec", "eventSeverity"); s != "info" {
					t.Errorf("Alert %s eventSeverity %q, want default info", u.GetName(), s)
				}
			case "Receiver":
				if s, _, _ := unstructured.NestedString(got.Object, "spec", "interval"); s != "10m" {
					t.Errorf("Receiver interval %q, want default 10m", s)
				}
				if og, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration"); og != -1 && og != got.GetGeneration() {
					t.Errorf("Receiver observedGeneration %d", og)
				}
			}
			if !equalSpec(u.Object["spec"], got.Object["spec"]) {
				t.Errorf("%s %s: read back spec %v differs from the file's %v", u.GetKind(), u.GetName(), got.Object["spec"], u.Object["spec"])
			}
			kinds[u.GetKind()]++
		}
	}
	if kinds["Alert"] != 1 || kinds["Provider"] != 2 || kinds["Receiver"] != 1 {
		t.Errorf("accepted %v, want 1 Alert, 2 Providers, 1 Receiver", kinds)
	}
}

// equalSpec reports whether every field of want is in got with the same value.
func equalSpec(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !equalSpec(v, g[k]) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !equalSpec(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return want == got
}

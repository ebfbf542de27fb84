package render

import (
	"context"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// TestRenderOfJsonnetThatDoesNotEndStopsWithItsContext: jsonnet that
// evaluates for minutes (here 4·10⁸ comprehension steps, no recursion,
// little memory) ends when Render's context does. Argo CD evaluates
// jsonnet in the repo-server, whose manifest call the controller bounds
// (--repo-server-timeout-seconds, 60 s by default): the Application gets
// a ComparisonError and the controller goes on. A Render that ignores its
// context holds a reconcile worker and a CPU for as long as the jsonnet
// runs.
func TestRenderOfJsonnetThatDoesNotEndStopsWithItsContext(t *testing.T) {
	root := repo(t, map[string]string{
		"app/slow.jsonnet": "local n = 20000;\n[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'x' + std.length([1 for x in std.range(1, n) for y in std.range(1, n) if x < 0])}}]\n",
	})
	renderStopsWithContext(t, root)
}

// TestRenderOfAChartThatDoesNotEndStopsWithItsContext: the same for a
// Helm template that loops for minutes (4·10⁸ steps of nested ranges).
func TestRenderOfAChartThatDoesNotEndStopsWithItsContext(t *testing.T) {
	root := repo(t, map[string]string{
		"app/Chart.yaml":       "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"app/templates/x.yaml": "{{- range until 20000 }}{{ range until 20000 }}{{ end }}{{ end }}\n" + cm("x"),
	})
	renderStopsWithContext(t, root)
}

// renderStopsWithContext renders path app of root with a 1 s context and
// fails unless Render returns an error within 15 s.
func renderStopsWithContext(t *testing.T, root string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := Render(ctx, Input{Root: root, Source: argov1.ApplicationSource{Path: "app"}, AppName: "app", Project: "default", Namespace: "dest",
			Revision: "0123456789abcdef0123456789abcdef01234567"})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("Render succeeded after %s", time.Since(start))
		}
		t.Logf("Render returned after %s: %v", time.Since(start), err)
	case <-time.After(15 * time.Second):
		t.Fatalf("Render still evaluating 15s after its 1s context ended")
	}
}

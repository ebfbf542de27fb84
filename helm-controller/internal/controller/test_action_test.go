package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hookedChart writes a chart whose test hook is a Pod that kwok leaves
// alone (kwok.x-k8s.io/status: custom), named per revision, so the test
// decides its outcome by writing its phase.
func hookedChart(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "hooked")
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: hooked\nversion: 0.1.0\nappVersion: \"1.0\"\n",
		"values.yaml": "value: one\n",
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  value: {{ .Values.value | quote }}
`,
		"templates/test.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test-{{ .Release.Revision }}
  annotations:
    helm.sh/hook: test
    kwok.x-k8s.io/status: custom
spec:
  restartPolicy: Never
  containers:
  - name: test
    image: busybox
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// finishTestPod waits for the test Pod of a release revision and sets its
// phase, as a kubelet would when the test container exits.
func finishTestPod(t *testing.T, ns, name string, phase corev1.PodPhase) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, testenv.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod) == nil, nil
	})
	if err != nil {
		t.Fatalf("test pod %s/%s not created", ns, name)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.Phase = phase
		return env.Client.Status().Update(ctx, pod)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReleaseTests enables Helm tests: after the install the release is
// Untested (TestSuccess=Unknown AwaitingTests), the test runs and Ready
// takes TestSuccess's reason and message; a failing test after an upgrade
// makes the release Failed and, without retries, stalls it.
func TestReleaseTests(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	srv := helmtest.NewChartServer(t)
	tgz := helmtest.PackageChart(t, hookedChart(t))
	srv.Add(tgz)
	a := artifactOf(t, srv, tgz)
	newHelmChart(t, ns, "hooked")
	serveChart(t, ns, "hooked", a)
	hr := newRelease(t, ns, "hooked", "hooked", func(hr *helmv2.HelmRelease) {
		hr.Labels = map[string]string{shardKey: "tests"}
		hr.Spec.Test = &helmv2.Test{Enable: true}
		hr.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
	})
	testenv.RunBinary(t, env, exe, append(binaryFlags, "--watch-label-selector="+shardKey+"=tests")...)

	finishTestPod(t, ns, "hooked-test-1", corev1.PodSucceeded)
	waitReady(t, hr, helmv2.TestSucceededReason,
		fmt.Sprintf("Helm test succeeded for release %s/hooked.v1 with chart hooked@0.1.0: 1 test hook completed successfully", ns))
	hooks := hr.Status.History[0].TestHooks
	if hooks == nil || (*hooks)["hooked-test-1"] == nil || (*hooks)["hooked-test-1"].Phase != "Succeeded" {
		t.Errorf("testHooks %+v", hooks)
	}
	if c := cond(hr, helmv2.ReleasedCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Released %+v", c)
	}

	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"value":"two"}`) })
	finishTestPod(t, ns, "hooked-test-2", corev1.PodFailed)
	waitFor(t, hr, "Stalled after a failed test", func() bool {
		c := cond(hr, meta.StalledCondition)
		return c != nil && c.Reason == helmv2.RetriesExceededReason && hr.Status.ObservedGeneration == hr.Generation
	})
	testenv.CheckStatus(t, hr)
	ready := cond(hr, meta.ReadyCondition)
	prefix := fmt.Sprintf("Helm test failed for release %s/hooked.v2 with chart hooked@0.1.0: ", ns)
	if ready.Status != metav1.ConditionFalse || ready.Reason != helmv2.TestFailedReason || !strings.HasPrefix(ready.Message, prefix) {
		t.Errorf("Ready %+v, want TestFailed %q...", ready, prefix)
	}
	if hr.Status.UpgradeFailures != 1 || hr.Status.History[0].Status != "deployed" {
		t.Errorf("status %+v", hr.Status)
	}
}

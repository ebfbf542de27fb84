package plan

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// describe renders tasks as "Phase/wave Kind/name", with " prune" or
// " hook" after prunes and hooks.
func describe(tasks []*Task) []string {
	var out []string
	for _, t := range tasks {
		s := fmt.Sprintf("%s/%d %s/%s", t.Phase, t.Wave, t.Obj.GetKind(), t.Obj.GetName())
		if t.Prune {
			s += " prune"
		}
		if t.Hook {
			s += " hook"
		}
		out = append(out, s)
	}
	return out
}

func apply(u *unstructured.Unstructured) *Task {
	return &Task{Obj: u, Phase: PhaseSync, Wave: Wave(u)}
}

func hookTask(u *unstructured.Unstructured, phase string) *Task {
	return &Task{Obj: u, Phase: phase, Wave: Wave(u), Hook: true}
}

func pruneTask(u *unstructured.Unstructured, last bool) *Task {
	return &Task{Obj: u, Live: u, Phase: PhaseSync, Wave: Wave(u), Prune: true, PruneLast: last}
}

func cm(name string, kv ...string) *unstructured.Unstructured {
	return object("v1", "ConfigMap", "ns", name, kv...)
}

func wave(n int) []string { return []string{"argocd.argoproj.io/sync-wave", fmt.Sprint(n)} }

func TestSortOrdersTasks(t *testing.T) {
	crd := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", wave(3)...)
	crd.Object["spec"] = map[string]any{"group": "example.com", "names": map[string]any{"kind": "Widget"}}
	cases := []struct {
		name  string
		tasks []*Task
		want  []string
	}{
		{"kind rank in a wave, custom kinds last, then name",
			[]*Task{
				apply(object("example.com/v1", "Widget", "ns", "w")),
				apply(object("apps/v1", "Deployment", "ns", "d")),
				apply(object("networking.k8s.io/v1", "Ingress", "ns", "i")),
				apply(object("v1", "Service", "ns", "s")),
				apply(cm("b")), apply(cm("a")),
				apply(object("other.io/v1", "Service", "ns", "a")),
			},
			[]string{"Sync/0 ConfigMap/a", "Sync/0 ConfigMap/b", "Sync/0 Service/a", "Sync/0 Service/s",
				"Sync/0 Deployment/d", "Sync/0 Ingress/i", "Sync/0 Widget/w"}},
		{"phase before wave",
			[]*Task{
				hookTask(job("fail"), PhaseSyncFail),
				hookTask(job("post", wave(-5)...), PhasePostSync),
				apply(cm("late", wave(3)...)),
				hookTask(job("pre", wave(10)...), PhasePreSync),
				apply(cm("early", wave(-1)...)),
			},
			[]string{"PreSync/10 Job/pre hook", "Sync/-1 ConfigMap/early", "Sync/3 ConfigMap/late",
				"PostSync/-5 Job/post hook", "SyncFail/0 Job/fail hook"}},
		{"namespace moves before the first object in it and takes its step",
			[]*Task{
				apply(object("v1", "Namespace", "", "app", wave(5)...)),
				apply(object("v1", "ConfigMap", "app", "c", wave(1)...)),
				hookTask(object("batch/v1", "Job", "app", "j"), PhasePreSync),
				apply(object("v1", "Namespace", "", "lonely", wave(2)...)),
			},
			[]string{"PreSync/0 Namespace/app", "PreSync/0 Job/j hook", "Sync/1 ConfigMap/c", "Sync/2 Namespace/lonely"}},
		{"CRD moves before the first of its custom resources",
			[]*Task{
				apply(crd),
				apply(object("example.com/v1", "Widget", "ns", "w", wave(1)...)),
				apply(object("example.com/v1", "Gadget", "ns", "g")),
			},
			[]string{"Sync/0 Gadget/g", "Sync/1 CustomResourceDefinition/widgets.example.com", "Sync/1 Widget/w"}},
		{"prune waves mirrored",
			[]*Task{
				apply(cm("a")), apply(cm("b", wave(2)...)),
				pruneTask(cm("p0"), false), pruneTask(cm("p1", wave(1)...), false), pruneTask(cm("p5", wave(5)...), false),
			},
			[]string{"Sync/0 ConfigMap/a", "Sync/0 ConfigMap/p5 prune", "Sync/1 ConfigMap/p1 prune",
				"Sync/2 ConfigMap/b", "Sync/5 ConfigMap/p0 prune"}},
		{"PruneLast goes after the last Sync wave",
			[]*Task{
				apply(cm("a")), apply(cm("b", wave(3)...)), hookTask(job("post", wave(9)...), PhasePostSync),
				pruneTask(cm("last"), true), pruneTask(cm("now"), false),
			},
			[]string{"Sync/0 ConfigMap/a", "Sync/0 ConfigMap/now prune", "Sync/3 ConfigMap/b",
				"Sync/4 ConfigMap/last prune", "PostSync/9 Job/post hook"}},
		{"PruneLast is never below wave 1",
			[]*Task{apply(cm("a", wave(-3)...)), pruneTask(cm("last", wave(-2)...), true)},
			[]string{"Sync/-3 ConfigMap/a", "Sync/1 ConfigMap/last prune"}},
		{"prunes never move before a namespace's objects",
			[]*Task{pruneTask(object("v1", "Namespace", "", "gone", wave(4)...), false), apply(object("v1", "ConfigMap", "gone", "c"))},
			[]string{"Sync/0 ConfigMap/c", "Sync/4 Namespace/gone prune"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			Sort(c.tasks)
			if got := describe(c.tasks); !slices.Equal(got, c.want) {
				t.Fatalf("Sort =\n%q\nwant\n%q", got, c.want)
			}
			slices.Reverse(c.tasks)
			Sort(c.tasks)
			if got := describe(c.tasks); !slices.Equal(got, c.want) {
				t.Errorf("second Sort =\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestTasksExpandsHooksAndDropsUnappliedObjects(t *testing.T) {
	start := time.Unix(1700000000, 0)
	rev := "0123456789abcdef"
	gen := job("")
	gen.SetGenerateName("migrate-")
	gen.SetAnnotations(map[string]string{"argocd.argoproj.io/hook": "PreSync,PostSync",
		"argocd.argoproj.io/hook-delete-policy": "HookSucceeded"})
	named := job("smoke", "helm.sh/hook", "post-install")
	desired := map[string]*unstructured.Unstructured{
		"gen":   gen,
		"named": named,
		"skip":  cm("skip", "argocd.argoproj.io/hook", "Skip"),
		"test":  job("test", "helm.sh/hook", "test"),
		"pre":   job("cleanup", "argocd.argoproj.io/hook", "PreDelete"),
		"cm":    cm("settings"),
		"crd":   cm("crd-install", "helm.sh/hook", "crd-install"),
	}
	liveCM := cm("settings")
	liveHook := job("migrate-0123456-presync-1700000000")
	live := map[string]*unstructured.Unstructured{
		ObjKey(liveCM): liveCM, ObjKey(liveHook): liveHook,
	}
	prune := []*unstructured.Unstructured{
		cm("old", "argocd.argoproj.io/sync-options", "PruneLast=true"),
		cm("older"),
		job("old-hook", "argocd.argoproj.io/hook", "PreSync"),
	}

	tasks := Tasks(desired, live, prune, rev, start, nil, true)
	want := []string{
		"PreSync/0 Job/migrate-0123456-presync-1700000000 hook",
		"Sync/0 ConfigMap/crd-install", "Sync/0 ConfigMap/older prune", "Sync/0 ConfigMap/settings",
		"Sync/1 ConfigMap/old prune",
		"PostSync/0 Job/migrate-0123456-postsync-1700000000 hook", "PostSync/0 Job/smoke hook",
	}
	if got := describe(tasks); !slices.Equal(got, want) {
		t.Fatalf("Tasks =\n%q\nwant\n%q", got, want)
	}
	if tasks[0].Live != liveHook || tasks[3].Live != liveCM || tasks[5].Live != nil {
		t.Errorf("live objects not matched by final name")
	}
	if !slices.Equal(tasks[0].Policies, []string{PolicyHookSucceeded}) ||
		!slices.Equal(tasks[6].Policies, []string{PolicyBeforeHookCreation}) {
		t.Errorf("policies = %v, %v", tasks[0].Policies, tasks[6].Policies)
	}
	if gen.GetName() != "" {
		t.Errorf("desired hook renamed in place: %q", gen.GetName())
	}

	noHooks := Tasks(desired, live, prune, rev, start, []string{"PruneLast=true"}, false)
	want = []string{"Sync/0 ConfigMap/crd-install", "Sync/0 ConfigMap/settings",
		"Sync/1 ConfigMap/old prune", "Sync/1 ConfigMap/older prune"}
	if got := describe(noHooks); !slices.Equal(got, want) {
		t.Errorf("Tasks without hooks =\n%q\nwant\n%q", got, want)
	}
}

func TestStepsGroupByPhaseAndWave(t *testing.T) {
	single := []*Task{apply(object("v1", "Service", "ns", "s")), apply(object("apps/v1", "Deployment", "ns", "d"))}
	Sort(single)
	multi := []*Task{apply(cm("a")), apply(cm("b", wave(1)...)), apply(cm("c", wave(1)...)), hookTask(job("p"), PhasePostSync)}
	Sort(multi)
	hookOnly := []*Task{apply(cm("a")), hookTask(job("h"), PhaseSync)}
	Sort(hookOnly)
	cases := []struct {
		name  string
		tasks []*Task
		steps []string
		multi bool
	}{
		{"no tasks", nil, nil, false},
		{"one wave", single, []string{"Sync/0:2"}, false},
		{"waves and phases", multi, []string{"Sync/0:1", "Sync/1:2", "PostSync/0:1"}, true},
		{"a Sync hook in the same wave is one step", hookOnly, []string{"Sync/0:2"}, false},
	}
	for _, c := range cases {
		steps := Steps(c.tasks)
		var got []string
		for _, s := range steps {
			got = append(got, fmt.Sprintf("%s/%d:%d", s.Phase, s.Wave, len(s.Tasks)))
		}
		if !slices.Equal(got, c.steps) || MultiStep(steps) != c.multi {
			t.Errorf("%s: Steps = %v multi %v; want %v multi %v", c.name, got, MultiStep(steps), c.steps, c.multi)
		}
	}
}

func TestKeyJoinsGroupKindNamespaceName(t *testing.T) {
	if got := Key("apps", "Deployment", "ns", "d"); got != "apps/Deployment/ns/d" {
		t.Errorf("Key = %q", got)
	}
	if got := ObjKey(object("v1", "Namespace", "", "app")); got != "/Namespace//app" {
		t.Errorf("ObjKey = %q", got)
	}
}

func TestNamespaceTaskForCreateNamespace(t *testing.T) {
	ns := object("v1", "Namespace", "", "prod")
	meta := &argov1.ManagedNamespaceMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}}
	cases := []struct {
		name    string
		ns      string
		meta    *argov1.ManagedNamespaceMetadata
		desired map[string]*unstructured.Unstructured
		live    *unstructured.Unstructured
		want    bool
	}{
		{"missing namespace", "prod", nil, nil, nil, true},
		{"existing namespace", "prod", nil, nil, ns, false},
		{"existing namespace with managed metadata", "prod", meta, nil, ns, true},
		{"namespace in the render wins", "prod", meta, map[string]*unstructured.Unstructured{ObjKey(ns): ns}, nil, false},
		{"no destination namespace", "", nil, nil, nil, false},
	}
	for _, c := range cases {
		task := NamespaceTask(c.ns, c.meta, c.desired, c.live)
		if (task != nil) != c.want {
			t.Errorf("%s: NamespaceTask = %v, want a task %v", c.name, task, c.want)
			continue
		}
		if task == nil {
			continue
		}
		if got := describe([]*Task{task}); got[0] != "PreSync/0 Namespace/prod" || task.Live != c.live {
			t.Errorf("%s: task %v live %v", c.name, got, task.Live)
		}
		if c.meta != nil {
			ann := task.Obj.GetAnnotations()
			if task.Obj.GetLabels()["team"] != "a" || ann["note"] != "x" || ann["argocd.argoproj.io/sync-options"] != "ServerSideApply=true" {
				t.Errorf("%s: metadata %v %v", c.name, task.Obj.GetLabels(), ann)
			}
		}
	}
	tasks := []*Task{apply(object("v1", "ConfigMap", "prod", "c", wave(2)...)), NamespaceTask("prod", nil, nil, nil)}
	Sort(tasks)
	if got := describe(tasks); !slices.Equal(got, []string{"PreSync/0 Namespace/prod", "Sync/2 ConfigMap/c"}) {
		t.Errorf("sorted = %q", got)
	}
}

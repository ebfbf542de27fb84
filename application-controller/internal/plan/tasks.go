package plan

import (
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Task is one step of a sync: apply an object (run it, for a hook) or
// prune a live one.
type Task struct {
	// Obj is the desired object (a hook's with its final name); for a
	// prune, the live object.
	Obj *unstructured.Unstructured
	// Live is the live object, nil when it does not exist.
	Live  *unstructured.Unstructured
	Phase string
	Wave  int
	Hook  bool
	Prune bool
	// Policies are a hook's delete policies (see DeletePolicies).
	Policies []string
	// PruneLast marks a prune with PruneLast=true in force: Sort moves it
	// to a wave after the last Sync wave (argocd-contract §1.9).
	PruneLast bool

	// base is the phase and wave Sort first saw, so that sorting again
	// starts from them and gives the same order.
	base *step
}

type step struct {
	phase string
	wave  int
}

// Key is the key of an object in the maps Tasks reads:
// "<group>/<kind>/<namespace>/<name>", group empty for core kinds and
// namespace empty for cluster-scoped objects.
func Key(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// ObjKey is Key of u's group, kind, namespace and name.
func ObjKey(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	return Key(gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName())
}

// Tasks builds a sync's tasks, sorted by Sort (argocd-contract §4.1, §4.3).
// desired holds the rendered objects and live the live ones, both keyed by
// Key (a hook with only generateName may be keyed by anything unique); a
// desired object becomes one Sync task, except hooks, which become one task
// per sync phase, named by HookName when they have only generateName, and
// matched to the live object of that name; hooks whose phases are all
// deletion phases, Skip objects and phase-less hooks (Helm test and
// rollback hooks) get no task. With hooks false (selective syncs,
// syncStrategy apply) no hook gets a task. prune holds the live objects to
// prune; hooks among them are left out, as Argo CD never prunes hooks.
// revision and startedAt are the operation's, for HookName; opts are the
// operation's sync options (for PruneLast).
func Tasks(desired, live map[string]*unstructured.Unstructured, prune []*unstructured.Unstructured,
	revision string, startedAt time.Time, opts []string, hooks bool) []*Task {
	keys := make([]string, 0, len(desired))
	for k := range desired {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var tasks []*Task
	for _, k := range keys {
		obj := desired[k]
		if obj == nil || Skip(obj) {
			continue
		}
		phases, isHook := Hook(obj)
		if !isHook {
			tasks = append(tasks, &Task{Obj: obj, Live: live[ObjKey(obj)], Phase: PhaseSync, Wave: Wave(obj)})
			continue
		}
		if hooks {
			tasks = append(tasks, hookTasks(obj, phases, live, revision, startedAt)...)
		}
	}
	for _, obj := range prune {
		if obj == nil {
			continue
		}
		if _, isHook := Hook(obj); isHook {
			continue
		}
		tasks = append(tasks, &Task{Obj: obj, Live: obj, Phase: PhaseSync, Wave: Wave(obj), Prune: true,
			PruneLast: ParseOptions(opts, obj).PruneLast})
	}
	Sort(tasks)
	return tasks
}

// hookTasks returns one task per sync phase of the hook obj.
func hookTasks(obj *unstructured.Unstructured, phases []string, live map[string]*unstructured.Unstructured,
	revision string, startedAt time.Time) []*Task {
	var tasks []*Task
	for _, phase := range phases {
		if phase == PhasePreDelete || phase == PhasePostDelete {
			continue
		}
		target := obj
		if obj.GetName() == "" {
			target = obj.DeepCopy()
			target.SetName(HookName(obj.GetGenerateName(), revision, phase, startedAt))
		}
		tasks = append(tasks, &Task{Obj: target, Live: live[ObjKey(target)], Phase: phase, Wave: Wave(obj),
			Hook: true, Policies: DeletePolicies(obj)})
	}
	return tasks
}

// kindOrder is Argo CD's kind rank (argocd-contract §4.1), earliest first;
// kinds not listed (custom resources) come after all of these.
var kindOrder = []string{
	"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap",
	"StorageClass", "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition",
	"ClusterRole", "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList",
	"Role", "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
	"ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler",
	"StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
}

// kindRank is the index of kind in kindOrder, len(kindOrder) when absent.
func kindRank(kind string) int {
	if i := slices.Index(kindOrder, kind); i >= 0 {
		return i
	}
	return len(kindOrder)
}

// phaseRank is the index of phase in phaseOrder, after all when unknown.
func phaseRank(phase string) int {
	if i := slices.Index(phaseOrder, phase); i >= 0 {
		return i
	}
	return len(phaseOrder)
}

// Sort orders tasks as Argo CD runs them (argocd-contract §4.1). First the
// prune tasks' waves are mirrored (the highest creation wave is pruned
// first: the sorted distinct prune waves w0<…<wn map wi to wn-i), and
// PruneLast prunes go to the last Sync-phase wave + 1 (counting from 0, so
// never below 1). Then tasks are ordered by phase, wave, kind rank (Kind
// only, group ignored; unlisted kinds last), name, and, to be total,
// namespace, group and applies before prunes. Last, a Namespace task is
// moved just before the first task in that namespace, and a CRD just
// before the first object of its group and kind, each taking that task's
// phase and wave (prunes are never moved nor waited for). Sort remembers
// each task's phase and wave the first time it sees the task, so sorting
// the same tasks again gives the same result.
func Sort(tasks []*Task) {
	for _, t := range tasks {
		if t.base == nil {
			t.base = &step{phase: t.Phase, wave: t.Wave}
		}
		t.Phase, t.Wave = t.base.phase, t.base.wave
	}
	mirrorPruneWaves(tasks)
	last := 0
	for _, t := range tasks {
		if t.Phase == PhaseSync && t.Wave > last {
			last = t.Wave
		}
	}
	for _, t := range tasks {
		if t.Prune && t.PruneLast {
			t.Wave = last + 1
		}
	}
	sort.SliceStable(tasks, func(i, j int) bool { return less(tasks[i], tasks[j]) })
	bubble(tasks, namespaceDep, namespaceRef)
	bubble(tasks, crdDep, crdRef)
}

// mirrorPruneWaves reverses the prune tasks' waves among themselves.
func mirrorPruneWaves(tasks []*Task) {
	var waves []int
	for _, t := range tasks {
		if t.Prune && !slices.Contains(waves, t.Wave) {
			waves = append(waves, t.Wave)
		}
	}
	slices.Sort(waves)
	for _, t := range tasks {
		if t.Prune {
			t.Wave = waves[len(waves)-1-slices.Index(waves, t.Wave)]
		}
	}
}

func less(a, b *Task) bool {
	if d := phaseRank(a.Phase) - phaseRank(b.Phase); d != 0 {
		return d < 0
	}
	if a.Wave != b.Wave {
		return a.Wave < b.Wave
	}
	if d := kindRank(a.Obj.GetKind()) - kindRank(b.Obj.GetKind()); d != 0 {
		return d < 0
	}
	if a.Obj.GetName() != b.Obj.GetName() {
		return a.Obj.GetName() < b.Obj.GetName()
	}
	if a.Obj.GetNamespace() != b.Obj.GetNamespace() {
		return a.Obj.GetNamespace() < b.Obj.GetNamespace()
	}
	if ga, gb := a.Obj.GroupVersionKind().Group, b.Obj.GroupVersionKind().Group; ga != gb {
		return ga < gb
	}
	return !a.Prune && b.Prune
}

// bubble moves each dependency task (dep gives its key) to just before the
// first earlier task that references that key (ref gives the key a task
// needs), giving it that task's phase and wave. Prune tasks take no part.
func bubble(tasks []*Task, dep, ref func(*Task) (string, bool)) {
	first := map[string]int{}
	for i, t := range tasks {
		if t.Prune {
			continue
		}
		if key, ok := dep(t); ok {
			j, seen := first[key]
			if !seen {
				continue
			}
			t.Phase, t.Wave = tasks[j].Phase, tasks[j].Wave
			copy(tasks[j+1:i+1], tasks[j:i])
			tasks[j] = t
			for k, idx := range first {
				if idx >= j {
					first[k] = idx + 1
				}
			}
			continue
		}
		if key, ok := ref(t); ok {
			if _, seen := first[key]; !seen {
				first[key] = i
			}
		}
	}
}

func namespaceDep(t *Task) (string, bool) {
	gvk := t.Obj.GroupVersionKind()
	return t.Obj.GetName(), gvk.Group == "" && gvk.Kind == "Namespace"
}

func namespaceRef(t *Task) (string, bool) {
	return t.Obj.GetNamespace(), t.Obj.GetNamespace() != ""
}

// crdDep keys a CRD by the group and kind it defines.
func crdDep(t *Task) (string, bool) {
	gvk := t.Obj.GroupVersionKind()
	if gvk.Group != "apiextensions.k8s.io" || gvk.Kind != "CustomResourceDefinition" {
		return "", false
	}
	group, _, _ := unstructured.NestedString(t.Obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(t.Obj.Object, "spec", "names", "kind")
	if group == "" || kind == "" {
		return "", false
	}
	return group + "/" + kind, true
}

func crdRef(t *Task) (string, bool) {
	gvk := t.Obj.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind, true
}

// Step is one (phase, wave) group of sorted tasks; a sync runs one step at
// a time, in order (argocd-contract §4.2).
type Step struct {
	Phase string
	Wave  int
	Tasks []*Task
}

// Steps splits sorted tasks into consecutive (phase, wave) groups, in
// order; nil for no tasks.
func Steps(tasks []*Task) []Step {
	var steps []Step
	for _, t := range tasks {
		n := len(steps)
		if n > 0 && steps[n-1].Phase == t.Phase && steps[n-1].Wave == t.Wave {
			steps[n-1].Tasks = append(steps[n-1].Tasks, t)
			continue
		}
		steps = append(steps, Step{Phase: t.Phase, Wave: t.Wave, Tasks: []*Task{t}})
	}
	return steps
}

// MultiStep is true when the tasks span more than one (phase, wave): only
// then must non-hook objects become Healthy before the next step starts
// (argocd-contract §4.2.3).
func MultiStep(steps []Step) bool {
	return len(steps) > 1
}

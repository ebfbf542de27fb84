package plan

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// exampleObjects reads every object of the YAML files of
// argocd-example-apps/<dir> in the shared test data ($EDDY_SHARED_DIR,
// /work/shared by default), keyed by ObjKey (generateName for a hook
// without a name).
func exampleObjects(t *testing.T, dir string) map[string]*unstructured.Unstructured {
	t.Helper()
	shared := os.Getenv("EDDY_SHARED_DIR")
	if shared == "" {
		shared = "/work/shared"
	}
	files, err := filepath.Glob(filepath.Join(shared, "testdata/repos/argocd-example-apps", dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Skipf("no argocd-example-apps/%s in %s (set EDDY_SHARED_DIR)", dir, shared)
	}
	separator := regexp.MustCompile(`(?m)^---\s*$`)
	objs := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range separator.Split(string(data), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("%s: %v", filepath.Base(f), err)
			}
			if u.GetNamespace() == "" {
				u.SetNamespace(dir)
			}
			key := ObjKey(u)
			if u.GetName() == "" {
				key += u.GetGenerateName()
			}
			objs[key] = u
		}
	}
	return objs
}

func TestTasksOrderArgoCDExampleApps(t *testing.T) {
	rev := "0d521c6e2f4b1d1c5a3e8c9b7f6a5d4c3b2a1f0e"
	start := time.Unix(1764000000, 0)
	cases := []struct {
		dir   string
		steps [][]string
	}{
		// argocd-contract §9: helm-hooks; the Service takes wave 2 from
		// helm.sh/hook-weight although it is no hook.
		{"helm-hooks", [][]string{
			{"PreSync/-2 Job/upgrade-sql-schema0d521c6-presync-1764000000 hook"},
			{"PreSync/-1 Job/maint-page-up hook"},
			{"Sync/0 ReplicaSet/frontend"},
			{"Sync/2 Service/frontend"},
			{"PostSync/0 Job/maint-page-down hook"},
		}},
		// argocd-contract §9: sync-waves, strictly in this order.
		{"sync-waves", [][]string{
			{"PreSync/0 Job/upgrade-sql-schema0d521c6-presync-1764000000 hook"},
			{"Sync/0 Service/backend", "Sync/0 ReplicaSet/backend"},
			{"Sync/1 Job/maint-page-up hook"},
			{"Sync/2 Service/frontend", "Sync/2 ReplicaSet/frontend"},
			{"Sync/3 Job/maint-page-down hook"},
		}},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			tasks := Tasks(exampleObjects(t, c.dir), nil, nil, rev, start, []string{"CreateNamespace=true"}, true)
			steps := Steps(tasks)
			var got [][]string
			for _, s := range steps {
				got = append(got, describe(s.Tasks))
			}
			if !slices.EqualFunc(got, c.steps, slices.Equal) {
				t.Fatalf("steps =\n%q\nwant\n%q", got, c.steps)
			}
			if !MultiStep(steps) {
				t.Errorf("%s is not multi-step", c.dir)
			}
			for _, task := range tasks {
				if task.Hook && !slices.Equal(task.Policies, []string{PolicyBeforeHookCreation}) {
					t.Errorf("%s policies = %v", task.Obj.GetName(), task.Policies)
				}
			}
		})
	}
}

package faults

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
)

// workload is the Git side of the suite: one repository with a directory
// per Kustomization (k<i>/), each holding ConfigMaps k<i>-c<n> and a
// kustomization.yaml listing them, and a directory broken/ whose object
// the API server refuses (an error an Alert must deliver). Commits add and
// remove objects; desired is what HEAD declares.
type workload struct {
	repo   *testenv.Repo
	rng    *rand.Rand
	mu     sync.Mutex
	next   int                         // serial of the next object name
	dirs   []map[string]bool           // per Kustomization: object names at HEAD
	head   string                      // HEAD's commit hash
	counts struct{ adds, removes int } // objects added and removed by commits
}

// newWorkload commits the initial tree: n Kustomizations of objects each.
func newWorkload(t testing.TB, rng *rand.Rand, n, objects int) *workload {
	w := &workload{rng: rng, dirs: make([]map[string]bool, n)}
	files := map[string]string{"broken/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: [not, a, map]\n"}
	for i := range n {
		w.dirs[i] = map[string]bool{}
		for range objects {
			name := w.newName(i)
			w.dirs[i][name] = true
			files[fmt.Sprintf("k%d/%s.yaml", i, name)] = configMap(name)
		}
		files[fmt.Sprintf("k%d/kustomization.yaml", i)] = w.kustomization(i)
	}
	w.repo = gitSrv.NewRepo(t, files)
	w.head = w.repo.MustGit(t, "rev-parse", "HEAD")
	return w
}

func (w *workload) newName(i int) string {
	w.next++
	return fmt.Sprintf("k%d-c%d", i, w.next)
}

// kustomization is k<i>/kustomization.yaml for the objects of dirs[i].
func (w *workload) kustomization(i int) string {
	var res []string
	for name := range w.dirs[i] {
		res = append(res, name+".yaml")
	}
	sort.Strings(res)
	return "resources: [" + strings.Join(res, ", ") + "]\n"
}

// commit adds an object to a random Kustomization's directory, or removes
// one (never its last), and pushes.
func (w *workload) commit() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := w.rng.IntN(len(w.dirs))
	files := map[string]string{}
	var msg string
	if len(w.dirs[i]) > 1 && w.rng.IntN(2) == 0 {
		names := w.sorted(i)
		name := names[w.rng.IntN(len(names))]
		delete(w.dirs[i], name)
		files[fmt.Sprintf("k%d/%s.yaml", i, name)] = ""
		msg = "remove " + name
		w.counts.removes++
	} else {
		name := w.newName(i)
		w.dirs[i][name] = true
		files[fmt.Sprintf("k%d/%s.yaml", i, name)] = configMap(name)
		msg = "add " + name
		w.counts.adds++
	}
	files[fmt.Sprintf("k%d/kustomization.yaml", i)] = w.kustomization(i)
	hash, err := w.repo.Commit(files, msg)
	if err != nil {
		return err
	}
	w.head = hash
	return nil
}

func (w *workload) sorted(i int) []string {
	names := make([]string, 0, len(w.dirs[i]))
	for n := range w.dirs[i] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// desired returns HEAD's revision ("main@sha1:<hash>") and the object
// names of each Kustomization at HEAD.
func (w *workload) desired() (string, [][]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([][]string, len(w.dirs))
	for i := range w.dirs {
		out[i] = w.sorted(i)
	}
	return "main@sha1:" + w.head, out
}

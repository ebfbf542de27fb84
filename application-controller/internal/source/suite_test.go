package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/eddyops/eddy/pkg/testenv"
)

var env *testenv.Environment

// TestMain runs the tests against a real API server with the source CRDs;
// source-controller does not run: the tests write the source objects'
// status as it would, and serve artifacts from artifactServer.
func TestMain(m *testing.M) { testenv.Main(m, &env) }

// artifactServer serves tar.gz artifacts by path and counts downloads.
type artifactServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
}

func newArtifactServer(t *testing.T) *artifactServer {
	s := &artifactServer{files: map[string][]byte{}, hits: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.files[r.URL.Path]
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// add serves data at path and returns the artifact describing it.
func (s *artifactServer) add(path, revision string, data []byte) *sourcev1.Artifact {
	s.mu.Lock()
	s.files[path] = data
	s.mu.Unlock()
	sum := sha256.Sum256(data)
	size := int64(len(data))
	return &sourcev1.Artifact{Path: strings.TrimPrefix(path, "/"), URL: s.srv.URL + path, Revision: revision,
		Digest: "sha256:" + hex.EncodeToString(sum[:]), LastUpdateTime: metav1.Now(), Size: &size}
}

func (s *artifactServer) hitsOf(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// newManager returns a Manager on a new namespace; the objects it made are
// collected when the test ends.
func newManager(t *testing.T) *Manager {
	ns := testenv.NewNamespace(t, env.Client, "src-")
	m := &Manager{Client: env.Client, Namespace: ns, CacheDir: t.TempDir(),
		Fetcher: &artifact.Fetcher{Retries: 0, RetryWait: 10 * time.Millisecond, Keys: artifacttest.Keyring()}}
	t.Cleanup(func() {
		if err := m.GC(context.Background(), nil); err != nil {
			t.Errorf("GC: %v", err)
		}
	})
	return m
}

func app(name string, src argov1.ApplicationSource) *argov1.Application {
	return &argov1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name},
		Spec: argov1.ApplicationSpec{Source: &src}}
}

// asNotReady fails t unless err is a *NotReady, which it returns.
func asNotReady(t *testing.T, err error) *NotReady {
	t.Helper()
	var nr *NotReady
	if !errors.As(err, &nr) {
		t.Fatalf("want NotReady, got %v", err)
	}
	return nr
}

// setStatus writes a source object's status as source-controller would:
// conditions for its generation and, when art is set, the artifact signed
// for the object (artifacttest.Sign).
func setStatus(t *testing.T, obj client.Object, art *sourcev1.Artifact, ready bool, reason, message string, stalled bool) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	gen := obj.GetGeneration()
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	conds := []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: message,
		ObservedGeneration: gen, LastTransitionTime: metav1.Now()}}
	if stalled {
		conds = append(conds, metav1.Condition{Type: meta.StalledCondition, Status: metav1.ConditionTrue, Reason: reason,
			Message: message, ObservedGeneration: gen, LastTransitionTime: metav1.Now()})
	}
	if art != nil {
		gvk, err := apiutil.GVKForObject(obj, env.Client.Scheme())
		if err != nil {
			t.Fatal(err)
		}
		art = artifacttest.Sign(artifact.Owner{Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}, art)
	}
	switch o := obj.(type) {
	case *sourcev1.GitRepository:
		o.Status.Artifact, o.Status.Conditions, o.Status.ObservedGeneration = art, conds, gen
	case *sourcev1.HelmChart:
		o.Status.Artifact, o.Status.Conditions, o.Status.ObservedGeneration = art, conds, gen
	case *sourcev1.HelmRepository:
		o.Status.Artifact, o.Status.Conditions, o.Status.ObservedGeneration = art, conds, gen
	case *sourcev1.OCIRepository:
		o.Status.Artifact, o.Status.Conditions, o.Status.ObservedGeneration = art, conds, gen
	default:
		t.Fatalf("unexpected %T", obj)
	}
	if err := env.Client.Status().Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, m *Manager, obj client.Object, name string) {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: m.Namespace, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
}

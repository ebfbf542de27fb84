package controller

import (
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingVerifier says yes to every kind after release is closed, counting
// the questions.
type countingVerifier struct {
	asked   atomic.Int32
	release chan struct{}
}

func (v *countingVerifier) HasSupport(schema.GroupVersionKind) error {
	v.asked.Add(1)
	<-v.release
	return nil
}

func TestFieldValidationSupportIsAskedOnceByReleasesStartingTogether(t *testing.T) {
	next := &countingVerifier{release: make(chan struct{})}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	host := "https://" + t.Name() // a server of its own: the support is remembered per process
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			v := &rememberingVerifier{host: host, next: next}
			if err := v.HasSupport(gvk); err != nil {
				t.Error(err)
			}
		})
	}
	close(next.release)
	wg.Wait()
	if n := next.asked.Load(); n != 1 {
		t.Errorf("the API server was asked %d times, want once", n)
	}
}

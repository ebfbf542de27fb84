package dev

import (
	"bytes"
	"context"
	"errors"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddyops/eddy/cli/internal/ui"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A List that fails is tried again after the poll interval (500ms), not at
// once: within a 1s wait there are at most three tries (at 0, 0.5 and 1s;
// fewer on a slow machine), where a loop without the pause makes thousands.
func TestWaitSyncedPausesAfterAFailedList(t *testing.T) {
	var lists atomic.Int32
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
			if _, waiting := ctx.Deadline(); waiting { // not the final table's List
				lists.Add(1)
			}
			return errors.New("the API server is unavailable")
		},
	}).Build()
	var out bytes.Buffer
	err := waitSynced(t.Context(), c, ui.New(&out), time.Second)
	if err == nil || !strings.Contains(err.Error(), "not all Kustomizations settled within 1s") {
		t.Errorf("waitSynced: %v; want it to time out", err)
	}
	if n := lists.Load(); n < 1 || n > 3 {
		t.Errorf("%d Lists within the 1s wait; want 1 to 3, one each 500ms", n)
	}
}

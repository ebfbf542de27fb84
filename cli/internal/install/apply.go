package install

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/eddyops/eddy/pkg/health"
	"github.com/eddyops/eddy/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the server-side apply field manager of `eddy install`.
const FieldManager = "eddy"

// Reachable asks the API server for its version, to fail early with one
// line when the cluster cannot be reached: "cannot reach the cluster at
// <host>: <reason>".
func Reachable(cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = 15 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err == nil {
		_, err = dc.ServerVersion()
	}
	if err != nil {
		return fmt.Errorf("cannot reach the cluster at %s: %s", cfg.Host, reason(err))
	}
	return nil
}

// reason is the innermost useful part of a connection error, e.g. "dial tcp
// 127.0.0.1:1: connect: connection refused", without the request URL.
func reason(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// Apply server-side applies objs as FieldManager with force, in Flux's
// stages (CRDs, Namespaces and ClusterRoles first, then it waits for the CRDs
// to be Established, then the rest), writing only objects that differ from
// the live ones. It returns the change set in apply order.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]ssa.Change, error) {
	m := &ssa.Manager{Client: c, Owner: FieldManager, StageTimeout: time.Minute, Poll: 500 * time.Millisecond}
	return m.ApplyAll(ctx, objs, ssa.ApplyOptions{})
}

// WaitDeployments waits until every Deployment of objs is Current by kstatus
// (rolled out and Available), polling every interval. ready is called once
// per Deployment, by name, as it becomes Current. On ctx's end the error
// names the Deployments not ready and kstatus's message for each.
func WaitDeployments(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, interval time.Duration, ready func(name string)) error {
	var pending []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			pending = append(pending, u)
		}
	}
	last := map[string]string{}
	for {
		var still []*unstructured.Unstructured
		for _, want := range pending {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(want.GroupVersionKind())
			msg := "not found"
			err := c.Get(ctx, client.ObjectKeyFromObject(want), live)
			switch prev, seen := last[want.GetName()]; {
			case err == nil:
			case ctx.Err() != nil && seen:
				msg = prev // the wait ended during the request: keep the last answer
			case !apierrors.IsNotFound(err):
				msg = err.Error()
			}
			if err == nil {
				res, err := health.Compute(live)
				if err == nil && res.Status == status.CurrentStatus {
					ready(want.GetName())
					continue
				}
				if err != nil {
					msg = err.Error()
				} else {
					msg = fmt.Sprintf("%s: %s", res.Status, res.Message)
				}
			}
			last[want.GetName()] = msg
			still = append(still, want)
		}
		pending = still
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			var names []string
			for _, u := range pending {
				names = append(names, fmt.Sprintf("%s (%s)", u.GetName(), last[u.GetName()]))
			}
			slices.Sort(names)
			return fmt.Errorf("timeout waiting for deployments: %v", names)
		case <-time.After(interval):
		}
	}
}

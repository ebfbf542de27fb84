package controllerkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// inClusterNamespace is where a pod finds its own namespace.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaseNamespace is the namespace of the leader-election lease:
// $RUNTIME_NAMESPACE (Flux's variable), else the pod's own namespace.
func leaseNamespace() (string, error) {
	if ns := os.Getenv("RUNTIME_NAMESPACE"); ns != "" {
		return ns, nil
	}
	data, err := os.ReadFile(inClusterNamespace)
	if err != nil {
		return "", fmt.Errorf("set RUNTIME_NAMESPACE to the namespace of the lease (outside a pod there is no own namespace: %w)", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// leaseLock is the leader-election lock of controller-runtime (a Lease,
// holder `<hostname>_<uuid>`), which also reports on gone when the lease
// cannot be created because its namespace does not exist or is being
// deleted. Without this, a controller whose lease namespace was deleted
// retries the lease forever, reconciling nothing while its probes say it
// is ready; with it, the controller exits non-zero (see leaseWatch) and
// whatever supervises it restarts it, visibly.
type leaseLock struct {
	resourcelock.Interface
	gone chan error // buffered: the first report is kept
}

// newLeaseLock builds the Lease lock name in the lease namespace on cfg
// as controller-runtime does (client timeout half the renew deadline, at
// least 1s), its events recorded by events.
func (o *Options) newLeaseLock(cfg *rest.Config, name string, events record.EventBroadcaster, scheme *runtime.Scheme) (*leaseLock, error) {
	ns, err := leaseNamespace()
	if err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	id := host + "_" + string(uuid.NewUUID())
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election") // AddUserAgent changes its argument
	cfg.Timeout = max(o.RenewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coord, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, name, core, coord, resourcelock.ResourceLockConfig{
		Identity:      id,
		EventRecorder: events.NewRecorder(scheme, corev1.EventSource{Component: id}),
	})
	if err != nil {
		return nil, err
	}
	return &leaseLock{Interface: lock, gone: make(chan error, 1)}, nil
}

// Create creates the lease; an error saying its namespace is missing or
// terminating is also reported on gone.
func (l *leaseLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if namespaceGone(err) {
		select {
		case l.gone <- fmt.Errorf("leader election: cannot create the lease %s: its namespace is gone (%v); "+
			"exiting, as this controller reconciles nothing without its lease", l.Describe(), err):
		default:
		}
	}
	return err
}

// namespaceGone reports whether err is the API server refusing an object
// because its namespace does not exist or is being deleted.
func namespaceGone(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return true
	}
	if !apierrors.IsNotFound(err) {
		return false
	}
	var s apierrors.APIStatus
	return errors.As(err, &s) && s.Status().Details != nil && s.Status().Details.Kind == "namespaces"
}

// leaseWatch is a runnable that needs no leadership: it ends the manager
// with the lock's report that the lease namespace is gone.
type leaseWatch struct{ lock *leaseLock }

// Start returns the lock's report, or nil when ctx ends first.
func (w leaseWatch) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-w.lock.gone:
		return err
	}
}

// NeedLeaderElection is false: it watches the election itself.
func (leaseWatch) NeedLeaderElection() bool { return false }

var _ manager.LeaderElectionRunnable = leaseWatch{}

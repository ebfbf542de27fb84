package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/eddyops/eddy/pkg/remotecluster"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeConfigOptions are the controller-wide switches for the kubeconfigs of
// spec.kubeConfig.secretRef (remotecluster.KubeConfigOptions).
type KubeConfigOptions = remotecluster.KubeConfigOptions

// errKubeConfig marks a kubeconfig Secret that cannot be used as it is:
// missing, without the key, or not self-contained.
var errKubeConfig = remotecluster.ErrKubeConfig

func refuse(format string, args ...any) error { return remotecluster.Refuse(format, args...) }

// remoteClient is the client of one remote cluster as one account: the
// kubeconfig's user, or a service account impersonated with it. Its REST
// mapper discovers the remote cluster's kinds, never the hub's.
type remoteClient struct {
	hash   string // of the kubeconfig and what else shaped the client
	client client.Client
	http   *http.Client
	// host is the server, for messages; insecureIgnored is true when the
	// kubeconfig asked for insecure-skip-tls-verify and it was ignored.
	host            string
	insecureIgnored bool
}

// remoteClients caches one remoteClient per kubeconfig Secret and
// impersonated account; an entry is rebuilt when the Secret's kubeconfig
// (its content hash) changes, so a rotated credential or moved server is
// picked up on the next reconcile.
type remoteClients struct {
	mu sync.Mutex
	m  map[string]*remoteClient
}

// kubeConfigData reads the kubeconfig of ref from the Secret in namespace
// ns: key ref.Key, else 'value', else 'value.yaml'. Flux compatible messages.
func kubeConfigData(ctx context.Context, r client.Reader, ns string, ref *meta.KubeConfigReference) ([]byte, error) {
	name := types.NamespacedName{Namespace: ns, Name: ref.SecretRef.Name}
	var secret corev1.Secret
	if err := r.Get(ctx, name, &secret); err != nil {
		return nil, fmt.Errorf("unable to read KubeConfig secret '%s' error: %w", name, err)
	}
	switch key := ref.SecretRef.Key; {
	case key != "":
		if data := secret.Data[key]; data != nil {
			return data, nil
		}
		return nil, refuse("KubeConfig secret '%s' does not contain a '%s' key with a kubeconfig", name, key)
	case secret.Data["value"] != nil:
		return secret.Data["value"], nil
	case secret.Data["value.yaml"] != nil:
		return secret.Data["value.yaml"], nil
	}
	return nil, refuse("KubeConfig secret '%s' does not contain a 'value' key with a kubeconfig", name)
}

// restConfigFromKubeConfig is remotecluster.RESTConfig with the
// controller's user agent.
func restConfigFromKubeConfig(data []byte, secretName string, opts KubeConfigOptions) (cfg *rest.Config, insecureIgnored bool, err error) {
	return remotecluster.RESTConfig(data, secretName, opts, ControllerName)
}

// get returns the cached client of the kubeconfig in the Secret ns/name's
// data as account impersonate ("" for the kubeconfig's own user), building
// it when missing or when data changed.
func (rc *remoteClients) get(r *KustomizationReconciler, ns string, ref *meta.KubeConfigReference, data []byte, impersonate string) (*remoteClient, error) {
	secretName := ns + "/" + ref.SecretRef.Name
	sum := sha256.New()
	sum.Write(data)
	fmt.Fprintf(sum, "\x00%t\x00%t", r.KubeConfig.InsecureTLS, r.KubeConfig.InsecureExec)
	hash := hex.EncodeToString(sum.Sum(nil))
	key := secretName + "\x00" + impersonate

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.m == nil {
		rc.m = map[string]*remoteClient{}
	}
	if c := rc.m[key]; c != nil && c.hash == hash {
		return c, nil
	}
	cfg, insecureIgnored, err := restConfigFromKubeConfig(data, secretName, r.KubeConfig)
	if err != nil {
		return nil, err
	}
	if impersonate != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: impersonate}
	}
	rcl, err := remotecluster.New(cfg, r.Scheme())
	if err != nil {
		return nil, refuse("KubeConfig secret '%s' holds no usable kubeconfig: %s", secretName, err)
	}
	entry := &remoteClient{hash: hash, client: rcl.Client, http: rcl.HTTP, host: cfg.Host, insecureIgnored: insecureIgnored}
	// The replaced client's connections would otherwise stay open to the
	// old server or with the old credentials.
	if old := rc.m[key]; old != nil {
		old.http.CloseIdleConnections()
	}
	rc.m[key] = entry
	return entry, nil
}

// probe checks that the remote cluster answers (GET /version) within the
// request timeout, so that an unreachable cluster fails the reconcile with
// one clear message instead of an error per object.
func (rc *remoteClient) probe(ctx context.Context, secretName string) error {
	ctx, cancel := context.WithTimeout(ctx, remotecluster.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.host+"/version", nil)
	if err == nil {
		var resp *http.Response
		if resp, err = rc.http.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				err = fmt.Errorf("%s", resp.Status)
			}
		}
	}
	if err != nil {
		// The server URL may carry credentials (user:password@, a token in
		// the query): neither the URL of the request error nor the host
		// shown hold them.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		msg := fmt.Sprintf("remote cluster '%s' of KubeConfig secret '%s' is unreachable: %s", remotecluster.DisplayHost(rc.host), secretName, err)
		if rc.insecureIgnored {
			msg += " (insecure-skip-tls-verify is ignored without the controller flag --insecure-kubeconfig-tls)"
		}
		return errors.New(msg)
	}
	return nil
}

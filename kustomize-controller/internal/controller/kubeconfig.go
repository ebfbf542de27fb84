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
	"time"

	"github.com/eddyops/eddy/pkg/remotecluster"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeConfigOptions are the controller-wide switches for the kubeconfigs of
// spec.kubeConfig.secretRef. Flux compatible: --insecure-kubeconfig-tls and
// --insecure-kubeconfig-exec, both off by default.
type KubeConfigOptions struct {
	// InsecureTLS honours insecure-skip-tls-verify; without it the field
	// is ignored (TLS is verified).
	InsecureTLS bool
	// InsecureExec allows user.exec credential plugins; without it a
	// kubeconfig with one is refused.
	InsecureExec bool
}

// remoteTimeout bounds each request to a remote cluster. Flux compatible
// (fluxcd/pkg/runtime/client: 30s).
const remoteTimeout = 30 * time.Second

// errKubeConfig marks a kubeconfig Secret that cannot be used as it is:
// missing, without the key, or not self-contained.
var errKubeConfig = errors.New("invalid kubeconfig")

// kubeConfigError is a refusal of a kubeconfig Secret with a stable message
// (no file paths, no secret values).
type kubeConfigError struct{ msg string }

func (e *kubeConfigError) Error() string        { return e.msg }
func (e *kubeConfigError) Is(target error) bool { return target == errKubeConfig }

func refuse(format string, args ...any) error {
	return &kubeConfigError{msg: fmt.Sprintf(format, args...)}
}

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

// restConfigFromKubeConfig turns a kubeconfig into the rest.Config of its
// current context, refusing what is not self-contained: file references
// (certificate-authority, client-certificate, client-key, tokenFile) and
// auth-provider plugins always, exec plugins unless opts.InsecureExec.
// Only the server, TLS data, proxy and credentials are kept (no
// impersonation from the kubeconfig); insecure-skip-tls-verify only with
// opts.InsecureTLS. Flux compatible (fluxcd/pkg/runtime/client KubeConfig and the
// kustomize-controller v1.9.5 self-contained rule); secretName names the
// Secret in messages, which never hold a path or a credential.
func restConfigFromKubeConfig(data []byte, secretName string, opts KubeConfigOptions) (cfg *rest.Config, insecureIgnored bool, err error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, false, refuse("KubeConfig secret '%s' holds no valid kubeconfig: %s", secretName, err)
	}
	ctxName := kc.CurrentContext
	kctx := kc.Contexts[ctxName]
	if kctx == nil {
		return nil, false, refuse("KubeConfig secret '%s': the kubeconfig's current-context '%s' is not defined", secretName, ctxName)
	}
	cluster := kc.Clusters[kctx.Cluster]
	if cluster == nil {
		return nil, false, refuse("KubeConfig secret '%s': cluster '%s' of context '%s' is not defined", secretName, kctx.Cluster, ctxName)
	}
	user := kc.AuthInfos[kctx.AuthInfo]
	if user == nil {
		user = clientcmdapi.NewAuthInfo()
	}
	notSelfContained := func(what, field, instead string) error {
		return refuse("KubeConfig secret '%s' is not self-contained: %s sets %s, a file path, which is not allowed; embed the content with %s instead",
			secretName, what, field, instead)
	}
	clusterWhat, userWhat := fmt.Sprintf("cluster '%s'", kctx.Cluster), fmt.Sprintf("user '%s'", kctx.AuthInfo)
	switch {
	case cluster.CertificateAuthority != "":
		return nil, false, notSelfContained(clusterWhat, "certificate-authority", "certificate-authority-data")
	case user.ClientCertificate != "":
		return nil, false, notSelfContained(userWhat, "client-certificate", "client-certificate-data")
	case user.ClientKey != "":
		return nil, false, notSelfContained(userWhat, "client-key", "client-key-data")
	case user.TokenFile != "":
		return nil, false, notSelfContained(userWhat, "tokenFile", "token")
	case user.AuthProvider != nil:
		return nil, false, refuse("KubeConfig secret '%s': %s uses the auth-provider plugin '%s', which is not allowed; use a token or a client certificate",
			secretName, userWhat, user.AuthProvider.Name)
	case user.Exec != nil && !opts.InsecureExec:
		return nil, false, refuse("KubeConfig secret '%s': %s uses an exec credential plugin, which is not allowed without the controller flag --insecure-kubeconfig-exec",
			secretName, userWhat)
	}
	insecure := cluster.InsecureSkipTLSVerify
	if insecure && !opts.InsecureTLS {
		// Ignored, not refused, as Flux: with no CA data the server's
		// certificate is verified against the system roots.
		cluster.InsecureSkipTLSVerify = false
		insecureIgnored = true
	}
	in, err := clientcmd.NewNonInteractiveClientConfig(*kc, ctxName, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, false, refuse("KubeConfig secret '%s' holds no usable kubeconfig: %s", secretName, err)
	}
	out := &rest.Config{
		Host:               in.Host,
		APIPath:            in.APIPath,
		DisableCompression: in.DisableCompression,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: in.TLSClientConfig.ServerName,
			CAData:     in.TLSClientConfig.CAData,
			CertData:   in.TLSClientConfig.CertData,
			KeyData:    in.TLSClientConfig.KeyData,
			Insecure:   opts.InsecureTLS && in.TLSClientConfig.Insecure,
		},
		Proxy:       in.Proxy,
		Username:    in.Username,
		Password:    in.Password,
		BearerToken: in.BearerToken,
		Timeout:     remoteTimeout,
		UserAgent:   ControllerName,
		QPS:         50,
		Burst:       300,
	}
	if opts.InsecureExec {
		out.ExecProvider = in.ExecProvider
	}
	return out, insecureIgnored, nil
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
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
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

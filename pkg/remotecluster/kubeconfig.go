package remotecluster

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

// Timeout bounds each request to a remote cluster. Flux compatible
// (fluxcd/pkg/runtime/client: 30s).
const Timeout = 30 * time.Second

// ErrKubeConfig marks a kubeconfig Secret that cannot be used as it is:
// missing, without the key, or not self-contained.
var ErrKubeConfig = errors.New("invalid kubeconfig")

// kubeConfigError is a refusal of a kubeconfig Secret with a stable message
// (no file paths, no secret values).
type kubeConfigError struct{ msg string }

func (e *kubeConfigError) Error() string        { return e.msg }
func (e *kubeConfigError) Is(target error) bool { return target == ErrKubeConfig }

// Refuse is an ErrKubeConfig with the message format, args.
func Refuse(format string, args ...any) error {
	return &kubeConfigError{msg: fmt.Sprintf(format, args...)}
}

// RESTConfig turns a kubeconfig into the rest.Config of its
// current context, refusing what is not self-contained: file references
// (certificate-authority, client-certificate, client-key, tokenFile) and
// auth-provider plugins always, exec plugins unless opts.InsecureExec.
// Only the server, TLS data, proxy and credentials are kept (no
// impersonation from the kubeconfig); insecure-skip-tls-verify only with
// opts.InsecureTLS. Flux compatible (fluxcd/pkg/runtime/client KubeConfig and the
// kustomize-controller v1.9.5 self-contained rule); secretName names the
// Secret in messages, which never hold a path or a credential; userAgent is
// the controller's name.
func RESTConfig(data []byte, secretName string, opts KubeConfigOptions, userAgent string) (cfg *rest.Config, insecureIgnored bool, err error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, false, Refuse("KubeConfig secret '%s' holds no valid kubeconfig: %s", secretName, err)
	}
	ctxName := kc.CurrentContext
	kctx := kc.Contexts[ctxName]
	if kctx == nil {
		return nil, false, Refuse("KubeConfig secret '%s': the kubeconfig's current-context '%s' is not defined", secretName, ctxName)
	}
	cluster := kc.Clusters[kctx.Cluster]
	if cluster == nil {
		return nil, false, Refuse("KubeConfig secret '%s': cluster '%s' of context '%s' is not defined", secretName, kctx.Cluster, ctxName)
	}
	user := kc.AuthInfos[kctx.AuthInfo]
	if user == nil {
		user = clientcmdapi.NewAuthInfo()
	}
	notSelfContained := func(what, field, instead string) error {
		return Refuse("KubeConfig secret '%s' is not self-contained: %s sets %s, a file path, which is not allowed; embed the content with %s instead",
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
		return nil, false, Refuse("KubeConfig secret '%s': %s uses the auth-provider plugin '%s', which is not allowed; use a token or a client certificate",
			secretName, userWhat, user.AuthProvider.Name)
	case user.Exec != nil && !opts.InsecureExec:
		return nil, false, Refuse("KubeConfig secret '%s': %s uses an exec credential plugin, which is not allowed without the controller flag --insecure-kubeconfig-exec",
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
		return nil, false, Refuse("KubeConfig secret '%s' holds no usable kubeconfig: %s", secretName, err)
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
		Timeout:     Timeout,
		UserAgent:   userAgent,
		QPS:         50,
		Burst:       300,
	}
	if opts.InsecureExec {
		out.ExecProvider = in.ExecProvider
	}
	return out, insecureIgnored, nil
}

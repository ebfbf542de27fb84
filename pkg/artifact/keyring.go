package artifact

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeySecretName is the Secret, in source-controller's namespace, holding
// the artifact signing key under KeySecretField: 32 random bytes made by
// the first source-controller to start (shards share it).
const (
	KeySecretName  = "source-controller-artifact-key"
	KeySecretField = "key"
)

// keyTTL is how long a read key is used before it is read again, so a
// replaced key reaches every process; freshGap bounds the rereads asked for
// after a mismatch, so forged artifacts cannot turn into API requests.
const (
	keyTTL   = 5 * time.Minute
	freshGap = 10 * time.Second
)

// podNamespaceFile is where a pod finds its own namespace.
const podNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// KeyNamespace returns the namespace of the signing key Secret: the
// controllers' runtime namespace, $RUNTIME_NAMESPACE (Flux's variable, set
// from the pod's namespace in Flux's and Eddy's Deployments), else the
// pod's own namespace, else "default" (a process outside a pod, as kubectl
// without a namespace). source-controller and its consumers run in one
// namespace in Flux's layout, so they find the same Secret.
func KeyNamespace() string {
	if ns := os.Getenv("RUNTIME_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(podNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

// SecretKeyring is the Keyring of the Secret KeySecretName in Namespace,
// read with Reader (an uncached reader: no Secret informer) and kept for
// keyTTL. With Writer set (source-controller) a missing Secret is created
// with a new random key; without (the consumers) it is an error.
type SecretKeyring struct {
	Reader    client.Reader
	Writer    client.Writer
	Namespace string

	mu   sync.Mutex
	key  []byte
	read time.Time
}

// Key returns the key, read again when older than keyTTL (the old one
// kept if that read fails) or when fresh and older than freshGap. Errors
// name the Secret, never its data.
func (k *SecretKeyring) Key(ctx context.Context, fresh bool) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	age := time.Since(k.read)
	if k.key != nil && age < keyTTL && (!fresh || age < freshGap) {
		return k.key, nil
	}
	key, err := k.load(ctx)
	if err != nil {
		if k.key != nil && !fresh {
			return k.key, nil // an API hiccup does not stop fetches
		}
		return nil, err
	}
	k.key, k.read = key, time.Now()
	return key, nil
}

func (k *SecretKeyring) load(ctx context.Context) ([]byte, error) {
	name := client.ObjectKey{Namespace: k.Namespace, Name: KeySecretName}
	var s corev1.Secret
	err := k.Reader.Get(ctx, name, &s)
	if apierrors.IsNotFound(err) && k.Writer != nil {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: KeySecretName,
				Labels: map[string]string{"app.kubernetes.io/component": "source-controller"}},
			Data: map[string][]byte{KeySecretField: key},
		}
		err = k.Writer.Create(ctx, &s)
		if apierrors.IsAlreadyExists(err) { // another shard was first
			err = k.Reader.Get(ctx, name, &s)
		}
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("artifact signing key Secret %s not found: source-controller creates it in its namespace at start", name)
		}
		return nil, fmt.Errorf("reading the artifact signing key Secret %s: %w", name, err)
	}
	key := s.Data[KeySecretField]
	if len(key) < 16 {
		return nil, fmt.Errorf("artifact signing key Secret %s has no %q of at least 16 bytes", name, KeySecretField)
	}
	return key, nil
}

// NewSecretKeyring returns the SecretKeyring of KeyNamespace with reader
// (an uncached one, e.g. a manager's APIReader) and writer, as every
// controller builds it: source-controller and the consumers may each create
// the missing Secret, since Flux's RBAC lets the appliers (cluster-admin)
// write Secrets and not source-controller.
func NewSecretKeyring(reader client.Reader, writer client.Writer) *SecretKeyring {
	return &SecretKeyring{Reader: reader, Writer: writer, Namespace: KeyNamespace()}
}

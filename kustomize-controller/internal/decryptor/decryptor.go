// Package decryptor decrypts the SOPS-encrypted inputs of a Kustomization's
// build (spec.decryption with provider sops), in memory, through the SOPS
// helper eddy-sops (package sopswire): the controller finds what is
// encrypted and where the plaintext goes; the helper, started for the
// build and handed the decryption Secret's keys, decrypts with the
// getsops/sops library. It implements kustomize.Decryptor.
//
// Flux compatible (kustomize-controller internal/decryptor, contract §4.2):
//   - keys: every `*.agekey` entry of the Secret is an age identity file,
//     every `*.asc` entry an armored OpenPGP private key;
//   - before the build, the files secretGenerator and configMapGenerator
//     entries read (files and envs: dotenv, JSON, YAML, INI, binary) and the
//     files of patches are decrypted in the format of their name;
//   - after the build, an object with a top-level `sops` is decrypted whole,
//     and a Secret's data and stringData values that hold a SOPS document are
//     decrypted in the format of their key;
//   - the annotation `kustomize.toolkit.fluxcd.io/decrypt: disabled` leaves
//     an object as it is;
//   - errors read `decryption failed for '<Kind/namespace/name>': …`.
//
// Unlike Flux, a resource file is decrypted as kustomize reads it, before
// the build rather than after, so the SOPS MAC is checked against the file
// as sops wrote it (Flux skips the check as kustomize changes the object)
// and comment-regex files keep their comments. Nothing decrypted is written
// to disk: the build's filesystem is in memory, and the helper gets the
// documents and keys on a pipe.
package decryptor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Flux compatible names.
const (
	// ProviderSOPS is the only decryption provider.
	ProviderSOPS = "sops"
	// DisabledAnnotation set to "disabled" leaves an object undecrypted.
	DisabledAnnotation = "kustomize.toolkit.fluxcd.io/decrypt"
	// MaxFileSize is the largest encrypted file decrypted (Flux: 5 MiB).
	MaxFileSize = 5 << 20
)

// FindHelper is the SOPS helper's path: eddy-sops beside the running
// executable, else in PATH. An empty result (and the error) says it is
// not installed; only a Kustomization with spec.decryption needs it.
func FindHelper() (string, error) {
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			p := filepath.Join(filepath.Dir(exe), sopswire.Helper)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	p, err := exec.LookPath(sopswire.Helper)
	if err != nil {
		return "", errHelperMissing
	}
	return p, nil
}

// errHelperMissing has no path in it: messages stay the same on every
// machine.
var errHelperMissing = errors.New("SOPS decryption needs the helper " + sopswire.Helper + " beside the kustomize-controller binary or in PATH, and it is not there")

// Decryptor decrypts for one Kustomization's build. It is safe for the
// build's concurrent use. Close stops its helper.
type Decryptor struct {
	obj *kustomizev1.Kustomization
	h   *helper

	mu     sync.Mutex
	values map[string]struct{}
}

// New reads the keys of obj's spec.decryption.secretRef (a Secret in obj's
// namespace) and starts the helper at helperPath (FindHelper's) with them;
// the helper stops when ctx is done or at Close. Flux compatible messages:
// "failed to import '<key>' data from sops decryption Secret '<ns>/<name>':
// …"; the Secret's NotFound error as it is.
func New(ctx context.Context, c client.Reader, obj *kustomizev1.Kustomization, helperPath string) (*Decryptor, error) {
	dec := obj.Spec.Decryption
	if dec != nil && dec.Provider != "" && dec.Provider != ProviderSOPS {
		return nil, fmt.Errorf("decryption provider '%s' is not supported", dec.Provider)
	}
	hello := sopswire.Hello{Version: sopswire.Version}
	var secretKey types.NamespacedName
	if dec != nil && dec.SecretRef != nil {
		secretKey = types.NamespacedName{Namespace: obj.Namespace, Name: dec.SecretRef.Name}
		var secret corev1.Secret
		if err := c.Get(ctx, secretKey, &secret); err != nil {
			return nil, err
		}
		names := make([]string, 0, len(secret.Data))
		for name := range secret.Data {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			switch {
			case path.Ext(name) == sopswire.AgeExt, path.Ext(name) == sopswire.PGPExt, sopswire.Credentials[name] != "":
				hello.Keys = append(hello.Keys, sopswire.Key{Name: name, Data: secret.Data[name]})
			}
		}
	}
	if helperPath == "" {
		return nil, errHelperMissing
	}
	h, resp, err := startHelper(ctx, helperPath, hello)
	if err != nil {
		return nil, err
	}
	if resp.Version != sopswire.Version {
		h.close()
		return nil, fmt.Errorf("the SOPS helper %s speaks protocol version %d, this kustomize-controller %d: install the %s of the controller's release beside it", sopswire.Helper, resp.Version, sopswire.Version, sopswire.Helper)
	}
	if resp.Error != "" {
		h.close()
		return nil, fmt.Errorf("failed to import '%s' data from %s decryption Secret '%s': %s", resp.Key, ProviderSOPS, secretKey, resp.Error)
	}
	return &Decryptor{obj: obj, h: h, values: map[string]struct{}{}}, nil
}

// Close stops the helper; the Decryptor is not used after it.
func (d *Decryptor) Close() {
	d.h.close()
}

// helper is a running eddy-sops: one request at a time on its pipes.
type helper struct {
	mu     sync.Mutex
	ctx    context.Context // the build's
	cmd    *exec.Cmd
	in     io.WriteCloser
	enc    *json.Encoder
	out    *answerReader
	dec    *json.Decoder
	stop   func() bool // stops the watch of the build's context
	closed bool
	end    error // how the process ended, once closed
}

// helperStopTimeout bounds the wait for the helper to exit at the end of
// its input before it is killed.
const helperStopTimeout = 10 * time.Second

// answerTimeout bounds the wait for each answer of the helper. A helper
// that does not answer is killed and the build fails: the build reads its
// resource files under kustomize's process-wide lock, so waiting for the
// build's timeout (interval - 30s by default) stopped every build of the
// controller as long. A 5 MiB document takes seconds.
var answerTimeout = 2 * time.Minute

// answerBase and answerFactor bound the size of the helper's answer to a
// request of n bytes: answerBase + answerFactor*n (the plaintext and its
// values, base64 encoded, are a few times the document at most). A helper
// writing without end fails the build instead of filling the controller's
// memory until the build's timeout.
var answerBase, answerFactor int64 = 1 << 20, 16

// answerReader reads the helper's output, failing once an answer goes
// past its bound (left, set before each request).
type answerReader struct {
	r     io.Reader
	left  int64
	limit int64
}

var errAnswerTooLarge = errors.New("answer too large")

func (a *answerReader) Read(p []byte) (int, error) {
	if a.left <= 0 {
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > a.left {
		p = p[:a.left]
	}
	n, err := a.r.Read(p)
	a.left -= int64(n)
	return n, err
}

func startHelper(ctx context.Context, exe string, hello sopswire.Hello) (*helper, sopswire.Response, error) {
	// Keys come on the input only; the environment holds just what the
	// cloud SDKs read for the controller's own credentials.
	cmd := exec.Command(exe)
	cmd.Env = helperEnv(os.Environ())
	cmd.Stderr = io.Discard // it writes only protocol failures; they show as its exit
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, sopswire.Response{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, sopswire.Response{}, err
	}
	if err := cmd.Start(); err != nil {
		// The cause without the path: messages are the same on every machine.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, sopswire.Response{}, fmt.Errorf("starting the SOPS helper %s: %w", sopswire.Helper, err)
	}
	ar := &answerReader{r: out}
	h := &helper{ctx: ctx, cmd: cmd, in: in, enc: json.NewEncoder(in), out: ar, dec: json.NewDecoder(ar)}
	// When the build's context ends the helper is killed and reaped, even
	// if the build never gets to Close it (a panic recovered by the
	// controller): no process, zombie or pipe is left behind. The lock
	// keeps the watch from closing h before h.stop is set.
	h.mu.Lock()
	h.stop = context.AfterFunc(ctx, func() {
		_ = cmd.Process.Kill()
		h.close()
	})
	h.mu.Unlock()
	var resp sopswire.Response
	if err := h.exchange(hello, 0, &resp); err != nil {
		h.close()
		return nil, sopswire.Response{}, err
	}
	return h, resp, nil
}

// exchange sends req, whose document is of size bytes, and reads the
// answer into resp. A broken pipe or an unreadable answer stops the helper
// and is reported with its exit; an answer that is not JSON or too large,
// with the helper killed rather than waited for.
func (h *helper) exchange(req any, size int, resp *sopswire.Response) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return h.ended()
	}
	h.out.limit = answerBase + answerFactor*int64(size)
	h.out.left = h.out.limit
	var late atomic.Bool
	t := time.AfterFunc(answerTimeout, func() {
		late.Store(true)
		_ = h.cmd.Process.Kill()
	})
	bad := false // an answer outside the protocol, rather than an exit
	err := h.enc.Encode(req)
	if err == nil {
		err = h.dec.Decode(resp)
		bad = err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF)
	}
	t.Stop()
	if err != nil {
		if bad {
			_ = h.cmd.Process.Kill()
		}
		h.closeLocked()
		switch {
		case h.ctx.Err() != nil:
			return h.ended()
		case late.Load():
			return fmt.Errorf("the SOPS helper %s gave no answer within %s", sopswire.Helper, answerTimeout)
		case !bad:
			return h.ended()
		case errors.Is(err, errAnswerTooLarge):
			return fmt.Errorf("the SOPS helper %s answered more than %d bytes", sopswire.Helper, h.out.limit)
		default:
			return fmt.Errorf("the SOPS helper %s answered outside its protocol", sopswire.Helper)
		}
	}
	return nil
}

// ended says how the closed helper ended: stopped with the build's
// context (its error: the build's timeout), by its exit, or without
// answering.
func (h *helper) ended() error {
	if err := h.ctx.Err(); err != nil {
		return fmt.Errorf("the SOPS helper %s stopped: %w", sopswire.Helper, err)
	}
	if h.end != nil {
		return fmt.Errorf("the SOPS helper %s stopped: %w", sopswire.Helper, h.end)
	}
	return fmt.Errorf("the SOPS helper %s gave no answer", sopswire.Helper)
}

func (h *helper) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked()
}

// closeLocked ends the helper's input, so that it exits, and waits for it
// (killing it after helperStopTimeout).
func (h *helper) closeLocked() {
	if h.closed {
		return
	}
	h.closed = true
	_ = h.in.Close()
	t := time.AfterFunc(helperStopTimeout, func() { _ = h.cmd.Process.Kill() })
	h.end = h.cmd.Wait()
	t.Stop()
	h.stop()
}

// Values returns the plaintext values decrypted so far (and the base64
// decoding of those that are base64), for masking in messages. Values
// shorter than four characters are left out: masking them would garble a
// message more than it hides.
func (d *Decryptor) Values() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.values))
	for v := range d.values {
		out = append(out, v)
	}
	// Longest first, so a value containing another is masked whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func (d *Decryptor) remember(v string) {
	v = strings.TrimSpace(v)
	if len(v) < 4 {
		return
	}
	d.mu.Lock()
	d.values[v] = struct{}{}
	d.mu.Unlock()
	if b, err := base64.StdEncoding.DecodeString(v); err == nil && len(b) >= 4 {
		d.mu.Lock()
		d.values[string(b)] = struct{}{}
		d.mu.Unlock()
	}
}

// sopsFormats are sops' formats of the SOPS documents kustomize.SOPSDocument
// tells apart; a JSON marker also stands for the binary format.
var sopsFormats = map[kustomize.SOPSFormat]formats.Format{
	kustomize.SOPSINI:    formats.Ini,
	kustomize.SOPSDotenv: formats.Dotenv,
	kustomize.SOPSYAML:   formats.Yaml,
	kustomize.SOPSJSON:   formats.Json,
}

const unknownFormat = formats.Format(-1)

// detectFormat is the format of the SOPS document data holds, or
// unknownFormat.
func detectFormat(data []byte) formats.Format {
	if f, ok := sopsFormats[kustomize.SOPSDocument(data)]; ok {
		return f
	}
	return unknownFormat
}

// hasMarker tells whether data holds the SOPS marker of format f.
func hasMarker(data []byte, f formats.Format) bool {
	if f == formats.Binary {
		f = formats.Json
	}
	for sf, ff := range sopsFormats {
		if ff == f {
			return kustomize.HasSOPSMarker(data, sf)
		}
	}
	return false
}

// formatForPath is sops' format for a file name; Flux compatible: a
// .dockerconfigjson key is JSON.
func formatForPath(p string) formats.Format {
	if strings.HasSuffix(p, corev1.DockerConfigJsonKey) {
		return formats.Json
	}
	return formats.FormatForPath(p)
}

// decrypt has the helper decrypt a SOPS document of format in and emit it
// as out; with checkMAC the document's MAC must match its decrypted
// content. The values that were encrypted are remembered for masking.
func (d *Decryptor) decrypt(data []byte, in, out formats.Format, checkMAC bool) ([]byte, error) {
	var resp sopswire.Response
	if err := d.h.exchange(sopswire.Request{Data: data, In: in, Out: out, CheckMAC: checkMAC}, len(data), &resp); err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	for _, v := range resp.Values {
		d.remember(string(v))
	}
	return resp.Plain, nil
}

func disabled(annotations map[string]string) bool {
	return strings.EqualFold(annotations[DisabledAnnotation], kustomizev1.DisabledValue)
}

// objectName is Kind/namespace/name, the namespace defaulting to the
// Kustomization's targetNamespace.
func (d *Decryptor) objectName(kind, namespace, name string) string {
	if namespace == "" {
		namespace = d.obj.Spec.TargetNamespace
	}
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// DecryptFile decrypts a YAML or JSON resource file holding a document
// with a top-level `sops` (with a MAC), checking its MAC; other files are
// left (nil). Every document of the file names the same sops metadata, as
// sops writes it.
func (d *Decryptor) DecryptFile(p string, data []byte) ([]byte, error) {
	var f formats.Format
	switch path.Ext(p) {
	case ".yaml", ".yml":
		f = formats.Yaml
	case ".json":
		f = formats.Json
	default:
		return nil, nil
	}
	if !hasMarker(data, f) {
		return nil, nil
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var id string
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				break
			}
			return nil, nil // not Kubernetes YAML: kustomize says so
		}
		if !kustomize.SOPSEncrypted(doc) {
			continue
		}
		u := unstructured.Unstructured{Object: doc}
		if disabled(u.GetAnnotations()) {
			return nil, nil
		}
		if id == "" {
			id = d.objectName(u.GetKind(), u.GetNamespace(), u.GetName())
		}
	}
	if id == "" {
		return nil, nil
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("decryption failed for '%s': cannot decrypt file with size (%d bytes) exceeding limit (%d)", id, len(data), MaxFileSize)
	}
	out, err := d.decrypt(data, f, f, true)
	if err != nil {
		return nil, fmt.Errorf("decryption failed for '%s': %w", id, err)
	}
	return out, nil
}

// DecryptObject decrypts a built object: whole when it has a top-level
// sops (the MAC is not checked: kustomize changed the object, as in Flux),
// else a Secret's data and stringData values that hold SOPS documents.
func (d *Decryptor) DecryptObject(u *unstructured.Unstructured) error {
	if disabled(u.GetAnnotations()) {
		return nil
	}
	id := d.objectName(u.GetKind(), u.GetNamespace(), u.GetName())
	if kustomize.SOPSEncrypted(u.Object) {
		js, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		out, err := d.decrypt(js, formats.Json, formats.Json, false)
		if err != nil {
			return fmt.Errorf("decryption failed for '%s': failed to decrypt and format '%s/%s' %s data: %w", id, u.GetNamespace(), u.GetName(), u.GetKind(), err)
		}
		if err := u.UnmarshalJSON(out); err != nil {
			return fmt.Errorf("decryption failed for '%s': failed to unmarshal decrypted '%s/%s' %s to JSON: %w", id, u.GetNamespace(), u.GetName(), u.GetKind(), err)
		}
		return nil
	}
	if u.GetKind() != "Secret" || u.GetAPIVersion() != "v1" {
		return nil
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := u.Object[field].(map[string]any)
		if !ok {
			continue
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := m[k].(string)
			if !ok {
				continue
			}
			data := []byte(s)
			if field == "data" {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					continue // Flux compatible: the apply reports it
				}
				data = b
			}
			in := detectFormat(data)
			if in == unknownFormat {
				continue
			}
			out, err := d.decrypt(data, in, formatForPath(k), false)
			if err != nil {
				return fmt.Errorf("decryption failed for '%s': failed to decrypt and format '%s/%s' Secret field '%s': %w", id, u.GetNamespace(), u.GetName(), k, err)
			}
			d.remember(string(out))
			if field == "data" {
				m[k] = base64.StdEncoding.EncodeToString(out)
			} else {
				m[k] = string(out)
			}
		}
	}
	return nil
}

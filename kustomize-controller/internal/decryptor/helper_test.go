package decryptor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor/sopstest"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func decryptingKustomization() (*kustomizev1.Kustomization, client.Client) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: "flux-system"}}
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system"}}
	obj.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "sops-keys"}}
	return obj, fake.NewClientBuilder().WithObjects(s).Build()
}

// Without the helper a decrypting build fails with a message that names
// no path (the same on every machine).
func TestHelperMissing(t *testing.T) {
	obj, c := decryptingKustomization()
	_, err := New(context.Background(), c, obj, "")
	want := "SOPS decryption needs the helper eddy-sops beside the kustomize-controller binary or in PATH, and it is not there"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v", err)
	}
	_, err = New(context.Background(), c, obj, filepath.Join(t.TempDir(), "eddy-sops"))
	if err == nil || err.Error() != "starting the SOPS helper eddy-sops: no such file or directory" {
		t.Fatalf("err = %v", err)
	}
}

// A helper that ends without answering is reported with its exit.
func TestHelperStops(t *testing.T) {
	obj, c := decryptingKustomization()
	stub := writeStub(t, "#!/bin/sh\nexit 3\n")
	_, err := New(context.Background(), c, obj, stub)
	if err == nil || err.Error() != "the SOPS helper eddy-sops stopped: exit status 3" {
		t.Fatalf("err = %v", err)
	}
}

// The helper ends with the build's context, and a Decryptor whose helper
// ended says so, with the context's error (the build's timeout), rather
// than hanging.
func TestHelperEndsWithContext(t *testing.T) {
	obj, c := decryptingKustomization()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := New(ctx, c, obj, helperPath)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pid := d.h.cmd.Process.Pid
	cancel()
	k := newKeys(t)
	enc := encrypt(t, secretYAML, formats.Yaml, sopstest.Options{Age: []sopstest.AgeKey{k.age}, EncryptedRegex: "^(data|stringData)$"})
	_, err = d.DecryptFile("/apps/db.yaml", enc)
	if err == nil || err.Error() != "decryption failed for 'Secret/apps/db': the SOPS helper eddy-sops stopped: context canceled" {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Fatalf("helper %d still running", pid)
	}
}

// Close ends the helper: no process is left per build.
func TestHelperClosed(t *testing.T) {
	d := newDecryptor(t, map[string]string{})
	pid := d.h.cmd.Process.Pid
	d.Close()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Fatalf("helper %d still running", pid)
	}
	d.Close() // twice is fine
}

// The build decrypts from several goroutines (kustomize's reads); one
// helper answers them in turn.
func TestHelperConcurrentUse(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.age.Identity})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plain := fmt.Sprintf("K=concurrent-secret-%d\n", i)
			out, err := d.decrypt(encrypt(t, plain, formats.Dotenv, sopstest.Options{Age: []sopstest.AgeKey{k.age}}), formats.Dotenv, formats.Dotenv, true)
			if err == nil && string(out) != plain {
				err = fmt.Errorf("got %q, want %q", out, plain)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(d.Values()); n != 16 {
		t.Errorf("%d values to mask, want 16", n)
	}
}

// A build whose context ends without closing its Decryptor (a panic in the
// build, recovered by the controller) leaves no helper behind: it is killed
// and reaped, not left a zombie of the controller.
func TestHelperReapedWithContext(t *testing.T) {
	obj, c := decryptingKustomization()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := New(ctx, c, obj, helperPath)
	if err != nil {
		t.Fatal(err)
	}
	pid := d.h.cmd.Process.Pid
	cancel() // and no Close
	deadline := time.Now().Add(30 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return // reaped
		}
		if time.Now().After(deadline) {
			t.Fatalf("helper %d not reaped after its context ended: %s", pid, stat)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A decrypted value that is not UTF-8 is remembered for masking as it is:
// the helper's answer carries bytes, not JSON strings (which would replace
// each invalid byte by U+FFFD, and the masking would miss the value).
func TestHelperValuesNotUTF8(t *testing.T) {
	k := newKeys(t)
	d := newDecryptor(t, map[string]string{"age.agekey": k.age.Identity})
	const plain = "binary\x00\xff\xfe secret payload"
	enc := encrypt(t, plain, formats.Binary, sopstest.Options{Age: []sopstest.AgeKey{k.age}})
	out, err := d.decrypt(enc, formats.Binary, formats.Binary, true)
	if err != nil || string(out) != plain {
		t.Fatalf("decrypt: %q, %v", out, err)
	}
	if v := d.Values(); len(v) != 1 || v[0] != plain {
		t.Errorf("values to mask %q, want %q", v, plain)
	}
}

// A helper of another release (a stale eddy-sops beside a new controller:
// one that answers Hello without this protocol's version) is refused with
// a message naming both versions, rather than misread.
func TestHelperOtherVersion(t *testing.T) {
	obj, c := decryptingKustomization()
	stub := writeStub(t, "#!/bin/sh\nread -r hello\necho '{}'\nexec cat >/dev/null\n")
	_, err := New(context.Background(), c, obj, stub)
	want := fmt.Sprintf("the SOPS helper eddy-sops speaks protocol version 0, this kustomize-controller %d: install the eddy-sops of the controller's release beside it", sopswire.Version)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// A helper that writes without end fails the build with a bounded answer
// rather than filling the controller's memory until the build's timeout.
func TestHelperAnswerTooLarge(t *testing.T) {
	defer func(b, f int64) { answerBase, answerFactor = b, f }(answerBase, answerFactor)
	answerBase, answerFactor = 64<<10, 16
	obj, c := decryptingKustomization()
	stub := writeStub(t, fmt.Sprintf("#!/bin/sh\nread -r hello\necho '{\"version\":%d}'\nread -r req\nprintf '{\"error\":\"'\nexec tr '\\0' a </dev/zero\n", sopswire.Version))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, err := New(ctx, c, obj, stub)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pid := d.h.cmd.Process.Pid
	_, err = d.decrypt([]byte("0123456789"), formats.Yaml, formats.Yaml, false)
	if want := fmt.Sprintf("the SOPS helper eddy-sops answered more than %d bytes", 64<<10+160); err == nil || err.Error() != want {
		t.Fatalf("err = %.200v, want %s", err, want)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Fatalf("helper %d still running", pid)
	}
}

// A helper answering what is not the protocol's JSON is stopped and the
// build fails saying so.
func TestHelperGarbage(t *testing.T) {
	obj, c := decryptingKustomization()
	stub := writeStub(t, fmt.Sprintf("#!/bin/sh\nread -r hello\necho '{\"version\":%d}'\nread -r req\necho 'hello world'\nexec sleep 600\n", sopswire.Version))
	d, err := New(context.Background(), c, obj, stub)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.decrypt([]byte("x"), formats.Yaml, formats.Yaml, false)
	if want := "the SOPS helper eddy-sops answered outside its protocol"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// A helper that does not answer is killed after answerTimeout: the build
// does not wait for its own timeout while holding kustomize's lock.
func TestHelperNoAnswer(t *testing.T) {
	defer func(d time.Duration) { answerTimeout = d }(answerTimeout)
	answerTimeout = time.Second
	obj, c := decryptingKustomization()
	stub := writeStub(t, fmt.Sprintf("#!/bin/sh\nread -r hello\necho '{\"version\":%d}'\nexec sleep 600\n", sopswire.Version))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := New(ctx, c, obj, stub)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pid := d.h.cmd.Process.Pid
	_, err = d.decrypt([]byte("x"), formats.Yaml, formats.Yaml, false)
	if want := "the SOPS helper eddy-sops gave no answer within 1s"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Fatalf("helper %d still running", pid)
	}
}

// writeStub writes script as an executable eddy-sops in a new directory
// and returns its path: a helper that misbehaves in the way under test.
func writeStub(t *testing.T, script string) string {
	t.Helper()
	stub := filepath.Join(t.TempDir(), "eddy-sops")
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return stub
}

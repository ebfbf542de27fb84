package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

const component = "notification-controller"

// TestImages builds notification-controller's image twice from the static
// binary make build leaves in bin/ (or, without it, one the test builds as
// make images does) for the host's architecture, the other platform getting
// a stand-in ELF (a second cross build of a controller would multiply the
// test's time), and checks what the acceptance asks of make images:
// the same digests both times, valid OCI (the library's validate), an
// image whose layers, extracted with tar, run the controller's --version,
// and a push to and a pull from an in-process registry that keep the digest.
// It runs the built command, as make images does: outside the race
// detector, compressing a controller takes seconds, not minutes.
func TestImages(t *testing.T) {
	if runtime.GOOS != "linux" || elfMachine[runtime.GOARCH] == 0 {
		t.Skipf("images are built and run on linux/amd64 or linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	tmp := t.TempDir()
	tool := buildTool(t, tmp)
	bin := filepath.Join(tmp, "bin")
	host, other := "linux/"+runtime.GOARCH, "linux/arm64"
	if runtime.GOARCH == "arm64" {
		other = "linux/amd64"
	}
	testVersion := controllerBinary(t, filepath.Join(bin, "linux_"+runtime.GOARCH))
	writeStandIn(t, filepath.Join(bin, strings.ReplaceAll(other, "/", "_")), strings.TrimPrefix(other, "linux/"))
	ca, caPEM := writeCABundle(t, tmp)

	buildArgs := func(out string) []string {
		return []string{"build", "-bin", bin, "-out", out, "-registry", "ghcr.io/eddyops", "-version", testVersion,
			"-revision", "0123456789abcdef0123456789abcdef01234567", "-source", "https://github.com/eddyops/eddy",
			"-created", "1700000000", "-ca-bundle", ca, "-platforms", host + "," + other, component}
	}
	layoutDir := filepath.Join(tmp, "images")
	out1 := tool.must(t, buildArgs(layoutDir)...)
	comps, err := ReadLayout(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) != 1 || comps[0].Component != component || comps[0].Version != testVersion {
		t.Fatalf("layout holds %+v, want %s %s", comps, component, testVersion)
	}
	idx := comps[0].Index
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("same source, same digest", func(t *testing.T) {
		again := filepath.Join(tmp, "again")
		out2 := tool.must(t, buildArgs(again)...)
		if want := component + " " + digest.String() + "\n"; out1 != want || out2 != want {
			t.Errorf("build printed %q, then %q; want %q both times", out1, out2, want)
		}
		for _, f := range []string{DigestsFile, "index.json"} {
			a, _ := os.ReadFile(filepath.Join(layoutDir, f))
			b, _ := os.ReadFile(filepath.Join(again, f))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("%s differs between two builds:\n%s\n%s", f, a, b)
			}
		}
		if d, _ := os.ReadFile(filepath.Join(layoutDir, DigestsFile)); string(d) != component+"="+digest.String()+"\n" {
			t.Errorf("%s = %q", DigestsFile, d)
		}
	})

	t.Run("valid OCI", func(t *testing.T) {
		if err := validate.Index(idx); err != nil {
			t.Fatalf("validate.Index: %v", err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if im.MediaType != types.OCIImageIndex || im.Annotations["org.opencontainers.image.version"] != testVersion {
			t.Errorf("index media type %s, annotations %v", im.MediaType, im.Annotations)
		}
		var platforms []string
		for _, d := range im.Manifests {
			platforms = append(platforms, d.Platform.String())
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 2 {
				t.Errorf("%s: manifest %s, config %s, %d layers; want OCI, two layers", d.Platform, m.MediaType, m.Config.MediaType, len(m.Layers))
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cf.Config
			if c.User != "65534:65534" || strings.Join(c.Entrypoint, " ") != "/"+component || cf.Platform().String() != d.Platform.String() {
				t.Errorf("%s: user %q, entrypoint %q, platform %s", d.Platform, c.User, c.Entrypoint, cf.Platform())
			}
			for k, v := range map[string]string{
				"org.opencontainers.image.source":   "https://github.com/eddyops/eddy",
				"org.opencontainers.image.version":  testVersion,
				"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
				"org.opencontainers.image.created":  "2023-11-14T22:13:20Z",
			} {
				if c.Labels[k] != v {
					t.Errorf("%s: label %s = %q, want %q", d.Platform, k, c.Labels[k], v)
				}
			}
			if !cf.Created.Equal(time.Unix(1700000000, 0)) {
				t.Errorf("%s: created %s", d.Platform, cf.Created)
			}
		}
		if strings.Join(platforms, ",") != host+","+other {
			t.Errorf("platforms %v, want %s,%s", platforms, host, other)
		}
	})

	t.Run("extracted layers run --version", func(t *testing.T) {
		m, err := platformImage(t, idx, host).Manifest()
		if err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(tmp, "rootfs")
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, l := range m.Layers {
			blob := filepath.Join(layoutDir, "blobs", l.Digest.Algorithm, l.Digest.Hex)
			if out, err := exec.Command("tar", "-xzf", blob, "-C", root).CombinedOutput(); err != nil {
				t.Fatalf("tar -xzf layer %s: %v\n%s", l.Digest, err, out)
			}
		}
		out, err := exec.Command(filepath.Join(root, component), "--version").CombinedOutput()
		if err != nil || string(out) != component+" "+testVersion+"\n" {
			t.Errorf("/%s --version: %v, output %q", component, err, out)
		}
		got, err := os.ReadFile(filepath.Join(root, caBundlePath))
		if err != nil || !bytes.Equal(got, caPEM) {
			t.Errorf("/%s: %v (or not the bundle given)", caBundlePath, err)
		}
		passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
		group, _ := os.ReadFile(filepath.Join(root, "etc/group"))
		if !strings.Contains(string(passwd), "\nnobody:x:65534:65534:") || !strings.Contains(string(group), "\nnobody:x:65534:") {
			t.Errorf("no nobody 65534 in /etc/passwd %q or /etc/group %q", passwd, group)
		}
		if fi, err := os.Stat(filepath.Join(root, "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
			t.Errorf("/tmp: %v %v, want drwxrwxrwt", fi.Mode(), err)
		}
	})

	t.Run("push to and pull from a registry", func(t *testing.T) {
		srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		defer srv.Close()
		reg := strings.TrimPrefix(srv.URL, "http://") + "/eddy"
		out := tool.must(t, "push", "-layout", layoutDir, "-registry", reg)
		ref := reg + "/" + component + ":" + testVersion
		if want := ref + "@" + digest.String() + "\n"; out != want {
			t.Errorf("push printed %q, want %q", out, want)
		}
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := remote.Index(tag)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := pulled.Digest(); d != digest {
			t.Errorf("pulled %s, pushed %s", d, digest)
		}
		// The registry checked each blob's digest on upload; the bytes were read in full above.
		if err := validate.Index(pulled, validate.Fast); err != nil {
			t.Errorf("validate.Index of the pulled index: %v", err)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		// The host's binary offered as the other platform's.
		wrong := filepath.Join(tmp, "wrong")
		if err := os.MkdirAll(filepath.Join(wrong, strings.ReplaceAll(other, "/", "_")), 0o755); err != nil {
			t.Fatal(err)
		}
		hostBin := filepath.Join(bin, "linux_"+runtime.GOARCH, component)
		if err := os.Symlink(hostBin, filepath.Join(wrong, strings.ReplaceAll(other, "/", "_"), component)); err != nil {
			t.Fatal(err)
		}
		otherMachine := elfMachine[strings.TrimPrefix(other, "linux/")].String()
		for _, tc := range []struct {
			name string
			args []string
			code int
			want string
		}{
			{"binary of another architecture", []string{"build", "-bin", wrong, "-out", filepath.Join(tmp, "x"), "-registry", "r.example",
				"-version", "v1", "-ca-bundle", ca, "-platforms", other, component}, 1, "not " + otherMachine + ": build it with GOARCH="},
			{"missing binary", []string{"build", "-bin", bin, "-out", filepath.Join(tmp, "x"), "-registry", "r.example", "-version", "v1",
				"-ca-bundle", ca, "source-controller"}, 1, "build it first"},
			{"not a CA bundle", []string{"build", "-bin", bin, "-out", filepath.Join(tmp, "x"), "-registry", "r.example", "-version", "v1",
				"-ca-bundle", hostBin, component}, 1, "holds no PEM certificate"},
			{"no registry", []string{"build", "-bin", bin, "-version", "v1", component}, 2, "needs -registry"},
			{"no layout", []string{"push", "-layout", filepath.Join(tmp, "none"), "-registry", "r.example"}, 1, "run make images first"},
			{"push without registry", []string{"push", "-layout", layoutDir}, 1, "no registry"},
		} {
			stdout, stderr, code := tool.run(t, tc.args...)
			if code != tc.code || stdout != "" || !strings.HasPrefix(stderr, "images: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and one line naming %q", tc.name, code, stdout, stderr, tc.code, tc.want)
			}
		}
		if _, err := os.Stat(filepath.Join(tmp, "x")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed build left its output: %v", err)
		}
	})
}

// imagesTool is the built images command.
type imagesTool string

// buildTool builds this package's command into dir, as go run in make images does.
func buildTool(t *testing.T, dir string) imagesTool {
	t.Helper()
	p := filepath.Join(dir, "images-command")
	if out, err := exec.Command("go", "build", "-o", p, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return imagesTool(p)
}

func (it imagesTool) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(string(it), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func (it imagesTool) must(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := it.run(t, args...)
	if code != 0 {
		t.Fatalf("images %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// controllerBinary puts the component's static binary for the host into
// dir and returns its version: make build's bin/<component> when it is
// static (its version from its --version), else one built as make images
// builds it (CGO off, -trimpath, the version ldflags) with a test version.
func controllerBinary(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	built, _ := filepath.Abs(filepath.Join("../../bin", component))
	if data, err := os.ReadFile(built); err == nil && checkStatic(data, Binary{OS: "linux", Arch: runtime.GOARCH}) == nil {
		out, err := exec.Command(built, "--version").Output()
		v, ok := strings.CutPrefix(strings.TrimSuffix(string(out), "\n"), component+" ")
		if err != nil || !ok || v == "" {
			t.Fatalf("%s --version: %v, output %q", built, err, out)
		}
		if err := os.WriteFile(filepath.Join(dir, component), data, 0o755); err != nil {
			t.Fatal(err)
		}
		return v
	}
	const v = "v0.0.0-imagestest"
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X github.com/eddyops/eddy/pkg/controllerkit.Version="+v,
		"-o", dir+"/", "./"+component)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", component, err, out)
	}
	return v
}

// writeStandIn writes, under the component's name in dir, the least an
// index entry for arch needs: an ELF header for that machine, static (no
// program headers), never run.
func writeStandIn(t *testing.T, dir, arch string) {
	t.Helper()
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elfMachine[arch]), Version: uint32(elf.EV_CURRENT), Ehsize: 64}
	copy(h.Ident[:], []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, h); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, component), b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
}

// writeCABundle writes a one-certificate PEM bundle, so the test does not
// depend on the host's ca-certificates.
func writeCABundle(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "images test CA"}, IsCA: true,
		NotBefore: time.Unix(0, 0), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	p := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

func platformImage(t *testing.T, idx v1.ImageIndex, platform string) v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform.String() == platform {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("no %s image in the index", platform)
	return nil
}

package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// TestNodeImages does what make node-images does twice, from source each
// time (tools/pause.sh compiling pause.c with gcc, go build of tinyapp,
// then `images node`), and checks that both builds give the same digests,
// that the images are valid OCI with the expected configuration and files,
// and that the extracted pause binary runs; as root, it runs the extracted
// application image chrooted with podinfo's own command and probes.
func TestNodeImages(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the node images are built on linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc to compile pause.c (on Debian: apt-get install gcc libc6-dev)")
	}
	tmp := t.TempDir()
	ca, _ := writeCABundle(t, tmp)
	const version = "v0.0.0-nodetest"
	buildOnce := func(n int) (string, string) {
		bin := filepath.Join(tmp, fmt.Sprint("bin", n))
		dir := filepath.Join(bin, "linux_amd64")
		out, err := exec.Command("bash", "../pause.sh", filepath.Join(dir, PauseName)).Output()
		if err != nil {
			t.Fatalf("pause.sh: %v", err)
		}
		pauseVersion, k8sVersion, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
		if !ok {
			t.Fatalf("pause.sh printed %q", out)
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", filepath.Join(dir, AppName), "./tinyapp")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build tinyapp: %v\n%s", err, out)
		}
		layout := filepath.Join(tmp, fmt.Sprint("node-images", n))
		var printed bytes.Buffer
		if err := node([]string{"-bin", bin, "-out", layout, "-registry", "ghcr.io/eddyops", "-version", version,
			"-created", "1700000000", "-ca-bundle", ca, "-pause-version", pauseVersion, "-kubernetes-version", k8sVersion}, &printed); err != nil {
			t.Fatal(err)
		}
		return layout, printed.String()
	}
	layout, printed := buildOnce(1)
	again, printed2 := buildOnce(2)
	if printed != printed2 {
		t.Errorf("two builds from source printed\n%s\nthen\n%s", printed, printed2)
	}
	for _, f := range []string{DigestsFile, "index.json"} {
		a, _ := os.ReadFile(filepath.Join(layout, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds:\n%s\n%s", f, a, b)
		}
	}
	t.Logf("digests:\n%s", printed)

	comps, err := ReadLayout(layout)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range comps {
		got = append(got, c.Component+":"+c.Version)
		if err := validate.Index(c.Index); err != nil {
			t.Errorf("%s: validate.Index: %v", c.Component, err)
		}
	}
	if !slices.Equal(got, []string{"pause:3.10.2", "tinyapp:" + version}) {
		t.Fatalf("layout holds %v", got)
	}

	t.Run("pause", func(t *testing.T) {
		img, cf := onlyImage(t, comps[0].Index)
		c := cf.Config
		if c.User != "65535:65535" || !slices.Equal(c.Entrypoint, []string{"/pause"}) || cf.Platform().String() != "linux/amd64" ||
			c.Labels["org.opencontainers.image.version"] != "3.10.2" ||
			c.Labels["org.opencontainers.image.source"] != "https://github.com/kubernetes/kubernetes/tree/v1.37.2/build/pause" {
			t.Errorf("config: %+v, platform %s", c, cf.Platform())
		}
		root := extract(t, img)
		if names := listLayer(t, img, 0); !slices.Equal(names, []string{"pause"}) {
			t.Errorf("layer holds %v, want pause alone", names)
		}
		out, err := exec.Command(filepath.Join(root, "pause"), "-v").CombinedOutput()
		if err != nil || string(out) != "pause.c v3.10.2-v1.37.2\n" {
			t.Errorf("/pause -v: %v, output %q", err, out)
		}
	})

	t.Run("tinyapp", func(t *testing.T) {
		img, cf := onlyImage(t, comps[1].Index)
		c := cf.Config
		if c.User != "65534:65534" || !slices.Equal(c.Entrypoint, []string{"/tinyapp"}) || c.WorkingDir != "/" ||
			!slices.Contains(c.Env, "PATH=/usr/local/bin:/usr/bin:/bin") || c.Labels["org.opencontainers.image.version"] != version {
			t.Errorf("config: %+v", c)
		}
		want := []string{"podinfo -> /tinyapp", "tinyapp", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/podcli -> /tinyapp"}
		if names := listLayer(t, img, 1); !slices.Equal(names, want) {
			t.Errorf("application layer holds %v, want %v", names, want)
		}
		root := extract(t, img)
		if os.Getuid() != 0 {
			t.Skip("not root: the image's /podinfo and podcli links are absolute; running them needs chroot")
		}
		runChrooted(t, root)
	})
}

// runChrooted runs the extracted application image as podinfo's
// kustomize/deployment.yaml runs podinfo's (command ./podinfo with its
// flags, working directory /), and its probes as the kubelet execs them
// (podcli found through the image's PATH).
func runChrooted(t *testing.T, root string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	srv := exec.Command("chroot", root, "./podinfo", "--port="+port, "--port-metrics=0", "--grpc-port=9999",
		"--grpc-service-name=podinfo", "--level=info", "--random-delay=false", "--random-error=false")
	srv.Env = append(env, "PODINFO_UNREADY=true")
	var logs bytes.Buffer
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// As the kubelet stops a container: SIGTERM, then SIGKILL.
		srv.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- srv.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("after SIGTERM: %v, want exit 0\n%s", err, logs.String())
			}
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			t.Errorf("still running 10s after SIGTERM\n%s", logs.String())
			<-done
		}
	}()
	probe := func(path string) (int, string) {
		cmd := exec.Command("chroot", root, "podcli", "check", "http", "localhost:"+port+path)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if e, ok := err.(*exec.ExitError); ok {
			return e.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out := probe("/healthz")
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("liveness probe still failing after 20s: exit %d %s\nserver: %s", code, out, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, out := probe("/readyz"); code != 1 || !strings.Contains(out, "503") {
		t.Errorf("readiness probe with PODINFO_UNREADY=true: exit %d %q, want 1 and the 503", code, out)
	}
}

func onlyImage(t *testing.T, idx v1.ImageIndex) (v1.Image, *v1.ConfigFile) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform.String() != "linux/amd64" {
		t.Fatalf("index manifests %+v, want one linux/amd64", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return img, cf
}

// listLayer lists layer i of img: names, and "-> target" for links.
func listLayer(t *testing.T, img v1.Image, i int) []string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[i].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s: owner %d:%d, time %s", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		n := h.Name
		if h.Typeflag == tar.TypeSymlink {
			n += " -> " + h.Linkname
		}
		names = append(names, n)
	}
}

// extract unpacks img's layers with tar into a new directory.
func extract(t *testing.T, img v1.Image) string {
	t.Helper()
	root := t.TempDir()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("tar", "-xzf", "-", "-C", root)
		cmd.Stdin = rc
		out, err := cmd.CombinedOutput()
		rc.Close()
		if err != nil {
			t.Fatalf("tar: %v\n%s", err, out)
		}
	}
	return root
}

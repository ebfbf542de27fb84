package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/eddyops/eddy/pkg/oci"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/google/go-containerregistry/pkg/crane"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The artifact verbs of the built bin/eddy against an in-process registry, and against the
// real flux CLI (bin/flux, v2.9.5): each tool pulls what the other pushed, with the same
// files; their builds and manifests are byte for byte the same.

// matchLines fails t unless out has a line matching each of want (regular expressions).
func matchLines(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !regexp.MustCompile("(?m)" + w).MatchString(out) {
			t.Errorf("%s: output has no line matching %q", what, w)
		}
	}
}

// sameTree fails t unless dir holds exactly the files of want, with the same contents.
func sameTree(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got := testenv.ReadFiles(t, dir)
	if !maps.Equal(got, want) {
		t.Errorf("%s holds %v, want %v", filepath.Base(dir), slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// manifestOf returns the manifest of ref and its digest.
func manifestOf(t *testing.T, ref string) *v1.Manifest {
	t.Helper()
	raw, err := crane.Manifest(ref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestArtifactE2E: podinfo's kustomize/ through every artifact verb of bin/eddy, and across
// eddy and flux: build (the same bytes as flux's, also with --resolve-symlinks), push (the same
// manifest digest as flux's --reproducible push, Flux's media types and annotation keys, -o json,
// -f - from stdin), pull of a flux push
// and flux pull of an eddy push (the same files), tag, list (filters; flux lists eddy's
// pushes), diff (exit 0 same, 1 changed; flux agrees), and bad input: a missing tag, a `../`
// entry and a symlink out (refused, nothing written), a URL without oci://, a registry with
// basic auth without and with --creds (the password never printed). One push runs at a
// pseudo-terminal (colours on, lines whole).
func TestArtifactE2E(t *testing.T) {
	u := newUser(t)
	flux := newFluxCLI(t, filepath.Join(t.TempDir(), "no-kubeconfig"))
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // neither tool reads the user's Docker credentials
	reg := testenv.NewRegistry(t)
	host := reg.Host()
	src := filepath.Join(testenv.TestdataDir(t), "repos", "podinfo", "kustomize")
	srcFiles := testenv.ReadFiles(t, src)
	const (
		source   = "https://github.com/stefanprodan/podinfo"
		revision = "6.9.2@sha1:0123456789abcdef0123456789abcdef01234567"
	)
	push := func(tool func(...string) (string, error), ref string, extra ...string) (string, error) {
		return tool(append([]string{"push", "artifact", "oci://" + ref, "--path", src, "--source", source, "--revision", revision}, extra...)...)
	}

	t.Run("build", func(t *testing.T) {
		dir := t.TempDir()
		out := u.must("build", "artifact", "--path", src, "--output", filepath.Join(dir, "eddy.tgz"))
		matchLines(t, "eddy build artifact", out, `^► building artifact from `+regexp.QuoteMeta(src)+`$`, `^✔ artifact created at .*eddy\.tgz$`)
		flux.on(t).must([]string{"build", "artifact", "--path", src, "--output", filepath.Join(dir, "flux.tgz")})
		e, _ := os.ReadFile(filepath.Join(dir, "eddy.tgz"))
		f, _ := os.ReadFile(filepath.Join(dir, "flux.tgz"))
		if len(e) == 0 || !bytes.Equal(e, f) {
			t.Errorf("eddy's tar.gz (%d bytes) differs from flux's (%d bytes)", len(e), len(f))
		}

		// A tree of links (as Nix makes): --resolve-symlinks archives their targets, as flux does.
		links := t.TempDir()
		for _, name := range []string{"deployment.yaml", "kustomization.yaml"} {
			if err := os.Symlink(filepath.Join(src, name), filepath.Join(links, name)); err != nil {
				t.Fatal(err)
			}
		}
		u.must("build", "artifact", "--path", links, "--resolve-symlinks", "--output", filepath.Join(dir, "eddy-links.tgz"))
		flux.on(t).must([]string{"build", "artifact", "--path", links, "--resolve-symlinks", "--output", filepath.Join(dir, "flux-links.tgz")})
		e, _ = os.ReadFile(filepath.Join(dir, "eddy-links.tgz"))
		f, _ = os.ReadFile(filepath.Join(dir, "flux-links.tgz"))
		if len(e) == 0 || !bytes.Equal(e, f) {
			t.Errorf("--resolve-symlinks: eddy's tar.gz (%d bytes) differs from flux's (%d bytes)", len(e), len(f))
		}
	})

	var eddyDigest string
	t.Run("push", func(t *testing.T) {
		out, err := push(u.run, host+"/eddy/podinfo:6.9.2", "--reproducible")
		if err != nil {
			t.Fatal(err)
		}
		matchLines(t, "eddy push artifact", out, `^► pushing artifact to `+regexp.QuoteMeta(host)+`/eddy/podinfo:6\.9\.2$`,
			`^✔ artifact successfully pushed to `+regexp.QuoteMeta(host)+`/eddy/podinfo@sha256:[0-9a-f]{64}$`)
		eddyDigest, _ = crane.Digest(host + "/eddy/podinfo:6.9.2")

		fluxOut, err := flux.on(t).run("push", "artifact", "oci://"+host+"/flux/podinfo:6.9.2", "--path", src,
			"--source", source, "--revision", revision, "--reproducible")
		if err != nil {
			t.Fatal(err)
		}
		fluxDigest, _ := crane.Digest(host + "/flux/podinfo:6.9.2")
		if eddyDigest == "" || eddyDigest != fluxDigest {
			t.Errorf("the same reproducible push: eddy's digest %s, flux's %s (%s)", eddyDigest, fluxDigest, fluxOut)
		}
		em, fm := manifestOf(t, host+"/eddy/podinfo:6.9.2"), manifestOf(t, host+"/flux/podinfo:6.9.2")
		if em.MediaType != fm.MediaType || em.Config.MediaType != fm.Config.MediaType || em.Config.MediaType != oci.ConfigMediaType ||
			len(em.Layers) != 1 || len(fm.Layers) != 1 || em.Layers[0].MediaType != fm.Layers[0].MediaType || em.Layers[0].MediaType != oci.ContentMediaType {
			t.Errorf("media types: eddy %s/%s/%v, flux %s/%s/%v", em.MediaType, em.Config.MediaType, em.Layers, fm.MediaType, fm.Config.MediaType, fm.Layers)
		}
		if ek, fk := slices.Sorted(maps.Keys(em.Annotations)), slices.Sorted(maps.Keys(fm.Annotations)); !slices.Equal(ek, fk) {
			t.Errorf("annotation keys: eddy %v, flux %v", ek, fk)
		}

		cmd := u.command("push", "artifact", "oci://"+host+"/eddy/podinfo:json", "--path", src, "--source", source,
			"--revision", revision, "-o", "json", "-a", "org.opencontainers.image.description=podinfo")
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		var info struct{ URL, Repository, Tag, Digest string }
		if err := json.Unmarshal(stdout, &info); err != nil {
			t.Fatalf("push -o json printed %q: %v", stdout, err)
		}
		if info.Repository != host+"/eddy/podinfo" || info.Tag != "json" || info.URL != "oci://"+info.Repository+"@"+info.Digest {
			t.Errorf("push -o json: %+v", info)
		}
		if m := manifestOf(t, host+"/eddy/podinfo:json"); m.Annotations["org.opencontainers.image.description"] != "podinfo" || m.Annotations[oci.RevisionAnnotation] != revision {
			t.Errorf("annotations %v", m.Annotations)
		}

		// -f - pushes stdin as one YAML file.
		cmd = u.command("push", "artifact", "oci://"+host+"/eddy/stdin:v1", "-f", "-", "--source", source, "--revision", revision)
		cmd.Stdin = strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: podinfo\n\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("push -f -: %v\n%s", err, out)
		}
		dir := t.TempDir()
		u.must("pull", "artifact", "oci://"+host+"/eddy/stdin:v1", "--output", dir)
		got := testenv.ReadFiles(t, dir)
		if len(got) != 1 {
			t.Errorf("push -f - then pull: files %v, want one", slices.Collect(maps.Keys(got)))
		}
		for name, content := range got {
			if !strings.HasSuffix(name, ".yaml") || content != "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: podinfo" {
				t.Errorf("push -f - then pull: %s = %q", name, content)
			}
		}
	})

	t.Run("push at a terminal", func(t *testing.T) {
		tty := u.startTTY(160, false, "push", "artifact", "oci://"+host+"/eddy/podinfo:tty", "--path", src, "--source", source, "--revision", revision)
		screen := strings.Join(tty.checkTerminal(time.Minute, false), "\n")
		matchLines(t, "eddy push artifact at a terminal", screen, `^► pushing artifact to `+regexp.QuoteMeta(host)+`/eddy/podinfo:tty$`,
			`^✔ artifact successfully pushed to `+regexp.QuoteMeta(host)+`/eddy/podinfo@sha256:[0-9a-f]{64}$`)
	})

	t.Run("pull", func(t *testing.T) {
		dir := t.TempDir()
		out := u.must("pull", "artifact", "oci://"+host+"/flux/podinfo:6.9.2", "--output", dir)
		matchLines(t, "eddy pull artifact", out, `^► pulling artifact from `+regexp.QuoteMeta(host)+`/flux/podinfo:6\.9\.2$`,
			`^✔ source `+regexp.QuoteMeta(source)+`$`, `^✔ revision `+regexp.QuoteMeta(revision)+`$`,
			`^✔ digest `+regexp.QuoteMeta(host)+`/flux/podinfo@sha256:[0-9a-f]{64}$`, `^✔ artifact content extracted to `+regexp.QuoteMeta(dir)+`$`)
		sameTree(t, dir, srcFiles)

		fluxDir := t.TempDir()
		flux.on(t).must([]string{"pull", "artifact", "oci://" + host + "/eddy/podinfo:6.9.2", "--output", fluxDir}, `^✔ revision `+regexp.QuoteMeta(revision)+`$`)
		sameTree(t, fluxDir, srcFiles)
	})

	t.Run("tag and list", func(t *testing.T) {
		out := u.must("tag", "artifact", "oci://"+host+"/eddy/podinfo:6.9.2", "--tag", "latest")
		matchLines(t, "eddy tag artifact", out, `^► tagging artifact$`, `^✔ artifact tagged as `+regexp.QuoteMeta(host)+`/eddy/podinfo:latest$`)
		row := func(tag string) string {
			return `^` + regexp.QuoteMeta(host+"/eddy/podinfo:"+tag) + `\s+sha256:[0-9a-f]{64}\s+` + regexp.QuoteMeta(source) + `\s+` + regexp.QuoteMeta(revision) + `\s*$`
		}
		out = u.must("list", "artifacts", "oci://"+host+"/eddy/podinfo")
		matchLines(t, "eddy list artifacts", out, `^ARTIFACT\s+DIGEST\s+SOURCE\s+REVISION$`, row("latest"), row("6.9.2"), row("json"), row("tty"))
		if !regexp.MustCompile(regexp.QuoteMeta(host+"/eddy/podinfo:latest") + `\s+` + regexp.QuoteMeta(eddyDigest) + `\s`).MatchString(out) {
			t.Errorf("latest is not listed with the digest of 6.9.2 (%s)", eddyDigest)
		}
		out = u.must("list", "artifacts", "oci://"+host+"/eddy/podinfo", "--filter-semver", ">=6.0.0")
		if strings.Count(strings.TrimSpace(out), "\n") != 1 || !regexp.MustCompile(`(?m)`+row("6.9.2")).MatchString(out) {
			t.Errorf("--filter-semver >=6.0.0 should list 6.9.2 alone")
		}
		out = u.must("list", "artifacts", "oci://"+host+"/eddy/podinfo", "--filter-regex", "^lat")
		if strings.Count(strings.TrimSpace(out), "\n") != 1 || !regexp.MustCompile(`(?m)`+row("latest")).MatchString(out) {
			t.Errorf("--filter-regex ^lat should list latest alone")
		}
		flux.on(t).must([]string{"list", "artifacts", "oci://" + host + "/eddy/podinfo"}, row("latest"), row("6.9.2"), row("json"))
	})

	t.Run("diff", func(t *testing.T) {
		matchLines(t, "eddy diff artifact", u.must("diff", "artifact", "oci://"+host+"/flux/podinfo:6.9.2", "--path", src), `^✔ no changes detected$`)
		flux.on(t).must([]string{"diff", "artifact", "oci://" + host + "/eddy/podinfo:6.9.2", "--path", src}, `^✔ no changes detected$`)
		changed := t.TempDir()
		if err := os.CopyFS(changed, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(changed, "service.yaml"), []byte("changed: true\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := u.fails("diff", "artifact", "oci://"+host+"/eddy/podinfo:6.9.2", "--path", changed)
		matchLines(t, "eddy diff artifact (changed)", out, `^✗ the remote artifact contents differs from the local one$`)
		if code := u.command("diff", "artifact", "oci://"+host+"/eddy/podinfo:6.9.2", "--path", changed).Run(); code == nil || !strings.Contains(code.Error(), "exit status 1") {
			t.Errorf("diff with changes: %v, want exit status 1", code)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		dir := t.TempDir()
		out := u.fails("pull", "artifact", "oci://"+host+"/eddy/podinfo:nope", "--output", dir)
		matchLines(t, "pull of a missing tag", out, `^✗ artifact `+regexp.QuoteMeta(host)+`/eddy/podinfo:nope not found: `)
		ok := artifacttest.Entry{Name: "ok.yaml", Content: "ok"}
		for tag, bad := range map[string]artifacttest.Entry{
			"dotdot":  {Name: "../escape.yaml", Content: "x"},
			"symlink": {Name: "passwd", Type: tar.TypeSymlink, Link: "/etc/passwd"},
		} {
			ref := reg.PushLayer(t, "bad:"+tag, oci.ConfigMediaType, oci.ContentMediaType, artifacttest.TarGz(t, ok, bad))
			out := u.fails("pull", "artifact", "oci://"+ref, "--output", dir)
			matchLines(t, "pull of "+tag, out, `^✗ artifact `+regexp.QuoteMeta(ref)+`: unsafe archive: entry "`+regexp.QuoteMeta(bad.Name)+`" `)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("refused pulls wrote %d entries", len(entries))
		}
		matchLines(t, "pull without oci://", u.fails("pull", "artifact", host+"/eddy/podinfo:6.9.2", "--output", dir),
			`^✗ URL must be in format 'oci://<domain>/<org>/<repo>'$`)
		out = u.fails("pull", "artifact", "oci://flux:s3cr3t-pass@"+host+"/eddy/podinfo:6.9.2", "--output", dir)
		matchLines(t, "pull with credentials in the URL", out, `^✗ 'oci://xxxxx@`+regexp.QuoteMeta(host)+`/eddy/podinfo:6.9.2' invalid URL: `)
		if strings.Contains(out, "s3cr3t-pass") {
			t.Errorf("the password written in the URL is printed: %s", out)
		}
		matchLines(t, "push without --source", u.fails("push", "artifact", "oci://"+host+"/x:1", "--path", src, "--revision", "r"), `^✗ --source is required$`)

		auth := testenv.NewRegistry(t, testenv.WithBasicAuth("flux", "s3cr3t-pass"))
		ref := auth.Host() + "/private/podinfo:6.9.2"
		out = u.fails("push", "artifact", "oci://"+ref, "--path", src, "--source", source, "--revision", revision)
		matchLines(t, "push without credentials", out, `^✗ pushing artifact failed: unauthorized to access `+regexp.QuoteMeta(ref)+` `)
		out = u.must("push", "artifact", "oci://"+ref, "--path", src, "--source", source, "--revision", revision, "--creds", "flux:s3cr3t-pass")
		matchLines(t, "push with --creds", out, `^► logging in to registry with credentials$`, `^✔ artifact successfully pushed to `)
		out, _ = u.run("pull", "artifact", "oci://"+ref, "--output", dir, "--creds", "flux:wrong-pass")
		if !strings.Contains(out, "unauthorized to access "+ref) || strings.Contains(out, "wrong-pass") {
			t.Errorf("pull with a wrong password should fail naming the reference, not the password")
		}
		u.must("pull", "artifact", "oci://"+ref, "--output", dir, "--creds", "flux:s3cr3t-pass")
		sameTree(t, dir, srcFiles)
		flux.on(t).must([]string{"list", "artifacts", "oci://" + auth.Host() + "/private/podinfo", "--creds", "flux:s3cr3t-pass"}, `6\.9\.2`)
	})
}

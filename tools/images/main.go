// Command images builds Eddy's controller images without Docker and
// pushes them (make images, make push-images), with go-containerregistry.
//
//	images build -bin DIR -out DIR -registry REG -version V [-revision R] [-source URL]
//	       [-created UNIX] [-ca-bundle FILE] [-platforms linux/amd64,linux/arm64] COMPONENT...
//	images node -bin DIR -out DIR -registry REG -version V -pause-version P -kubernetes-version K
//	       [-revision R] [-source URL] [-created UNIX] [-ca-bundle FILE]
//	images push -layout DIR -registry REG
//
// build reads each component's static binary from DIR/<os>_<arch>/<component>
// and writes one OCI image layout (see WriteLayout) with a multi-platform
// index per component; it prints "<component> sha256:<hex>" per component.
// node does the same for the node's images, pause and tinyapp, from
// DIR/linux_amd64/pause and DIR/linux_amd64/tinyapp (see PauseIndex and
// AppIndex): <registry>/pause:<P> and <registry>/tinyapp:<V>.
// push pushes them (see Push). Errors: one line on stderr, exit 1; usage
// errors exit 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	var u usageError
	switch {
	case errors.As(err, &u):
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

type usageError struct{ error }

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{fmt.Errorf("usage: images build|node|push [flags]")}
	}
	switch args[0] {
	case "build":
		return build(args[1:], out)
	case "node":
		return node(args[1:], out)
	case "push":
		fs := flag.NewFlagSet("push", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		dir := fs.String("layout", "bin/images", "the OCI image layout make images wrote")
		registry := fs.String("registry", "", "where to push: a registry host with an optional path, e.g. ghcr.io/acme")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError{err}
		}
		return Push(ctx, *dir, *registry, out, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	default:
		return usageError{fmt.Errorf("unknown command %q: images build|node|push [flags]", args[0])}
	}
}

// buildFlags are the flags build and node share.
type buildFlags struct {
	binDir, outDir, registry, version, revision, source, created, caBundle *string
}

func newBuildFlags(fs *flag.FlagSet, out string) buildFlags {
	fs.SetOutput(io.Discard)
	return buildFlags{
		binDir:   fs.String("bin", "bin", "the directory holding <os>_<arch>/<component> binaries"),
		outDir:   fs.String("out", out, "the OCI image layout to write (replaced)"),
		registry: fs.String("registry", "", "the registry the images are named for (ref.name annotations)"),
		version:  fs.String("version", "", "the images' tag and org.opencontainers.image.version"),
		revision: fs.String("revision", "", "org.opencontainers.image.revision: the source commit"),
		source:   fs.String("source", "", "org.opencontainers.image.source: the source repository URL"),
		created:  fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "the creation time in Unix seconds (default $SOURCE_DATE_EPOCH, else 0)"),
		caBundle: fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "the PEM CA bundle the images carry"),
	}
}

// meta is the Meta the parsed flags give.
func (f buildFlags) meta() (Meta, error) {
	var t time.Time
	if *f.created != "" {
		sec, err := strconv.ParseInt(*f.created, 10, 64)
		if err != nil || sec < 0 {
			return Meta{}, usageError{fmt.Errorf("creation time %q: want Unix seconds (SOURCE_DATE_EPOCH)", *f.created)}
		}
		t = time.Unix(sec, 0).UTC()
	} else {
		t = time.Unix(0, 0).UTC()
	}
	ca, err := os.ReadFile(*f.caBundle)
	if err != nil {
		return Meta{}, fmt.Errorf("CA bundle: %w (on Debian: apt-get install ca-certificates)", err)
	}
	return Meta{Version: *f.version, Revision: *f.revision, Source: *f.source, Created: t, CABundle: ca}, nil
}

// write writes comps as the layout and prints their digests.
func (f buildFlags) write(comps []Component, out io.Writer) error {
	digests, err := WriteLayout(*f.outDir, *f.registry, *f.version, comps)
	if err != nil {
		return err
	}
	for _, c := range comps {
		fmt.Fprintf(out, "%s %s\n", c.Name, digests[c.Name])
	}
	return nil
}

func build(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	f := newBuildFlags(fs, "bin/images")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated <os>/<arch> list")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() == 0 || *f.registry == "" || *f.version == "" {
		return usageError{fmt.Errorf("build needs -registry, -version and at least one component")}
	}
	meta, err := f.meta()
	if err != nil {
		return err
	}
	var comps []Component
	for _, c := range fs.Args() {
		var bins []Binary
		for _, p := range strings.Split(*platforms, ",") {
			goos, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
			if !ok {
				return usageError{fmt.Errorf("platform %q: want <os>/<arch>, e.g. linux/arm64", p)}
			}
			dir := filepath.Join(*f.binDir, goos+"_"+arch)
			b := Binary{OS: goos, Arch: arch, Path: filepath.Join(dir, c)}
			for _, h := range Helpers[c] {
				b.Helpers = append(b.Helpers, filepath.Join(dir, h))
			}
			bins = append(bins, b)
		}
		idx, err := Index(c, bins, meta)
		if err != nil {
			return err
		}
		comps = append(comps, Component{Name: c, Index: idx})
	}
	return f.write(comps, out)
}

// node builds the node's images (see PauseIndex and AppIndex) from
// DIR/linux_amd64/pause and DIR/linux_amd64/tinyapp into one layout.
func node(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	f := newBuildFlags(fs, "bin/node-images")
	pauseVersion := fs.String("pause-version", "", "the pause image's tag and version (Kubernetes' build/pause TAG)")
	k8sVersion := fs.String("kubernetes-version", "", "the k8s.io/kubernetes version pause.c was taken from")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 0 || *f.registry == "" || *f.version == "" || *pauseVersion == "" || *k8sVersion == "" {
		return usageError{fmt.Errorf("node needs -registry, -version, -pause-version and -kubernetes-version, and no argument")}
	}
	meta, err := f.meta()
	if err != nil {
		return err
	}
	dir := filepath.Join(*f.binDir, "linux_amd64")
	pause, err := PauseIndex(filepath.Join(dir, PauseName), *pauseVersion, *k8sVersion, meta)
	if err != nil {
		return err
	}
	app, err := AppIndex(filepath.Join(dir, AppName), meta)
	if err != nil {
		return err
	}
	return f.write([]Component{{Name: PauseName, Index: pause, Tag: *pauseVersion}, {Name: AppName, Index: app}}, out)
}

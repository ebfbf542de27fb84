// Command images builds Eddy's controller images without Docker and
// pushes them (make images, make push-images), with go-containerregistry.
//
//	images build -bin DIR -out DIR -registry REG -version V [-revision R] [-source URL]
//	       [-created UNIX] [-ca-bundle FILE] [-platforms linux/amd64,linux/arm64] COMPONENT...
//	images push -layout DIR -registry REG
//
// build reads each component's static binary from DIR/<os>_<arch>/<component>
// and writes one OCI image layout (see WriteLayout) with a multi-platform
// index per component; it prints "<component> sha256:<hex>" per component.
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
		return usageError{fmt.Errorf("usage: images build|push [flags]")}
	}
	switch args[0] {
	case "build":
		return build(args[1:], out)
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
		return usageError{fmt.Errorf("unknown command %q: images build|push [flags]", args[0])}
	}
}

func build(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	binDir := fs.String("bin", "bin", "the directory holding <os>_<arch>/<component> binaries")
	outDir := fs.String("out", "bin/images", "the OCI image layout to write (replaced)")
	registry := fs.String("registry", "", "the registry the images are named for (ref.name annotations)")
	version := fs.String("version", "", "the images' tag and org.opencontainers.image.version")
	revision := fs.String("revision", "", "org.opencontainers.image.revision: the source commit")
	source := fs.String("source", "", "org.opencontainers.image.source: the source repository URL")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "the creation time in Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	caBundle := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "the PEM CA bundle the images carry")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated <os>/<arch> list")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() == 0 || *registry == "" || *version == "" {
		return usageError{fmt.Errorf("build needs -registry, -version and at least one component")}
	}
	var t time.Time
	if *created != "" {
		sec, err := strconv.ParseInt(*created, 10, 64)
		if err != nil || sec < 0 {
			return usageError{fmt.Errorf("creation time %q: want Unix seconds (SOURCE_DATE_EPOCH)", *created)}
		}
		t = time.Unix(sec, 0).UTC()
	} else {
		t = time.Unix(0, 0).UTC()
	}
	ca, err := os.ReadFile(*caBundle)
	if err != nil {
		return fmt.Errorf("CA bundle: %w (on Debian: apt-get install ca-certificates)", err)
	}
	meta := Meta{Version: *version, Revision: *revision, Source: *source, Created: t, CABundle: ca}
	var comps []Component
	for _, c := range fs.Args() {
		var bins []Binary
		for _, p := range strings.Split(*platforms, ",") {
			goos, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
			if !ok {
				return usageError{fmt.Errorf("platform %q: want <os>/<arch>, e.g. linux/arm64", p)}
			}
			dir := filepath.Join(*binDir, goos+"_"+arch)
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
	digests, err := WriteLayout(*outDir, *registry, *version, comps)
	if err != nil {
		return err
	}
	for _, c := range comps {
		fmt.Fprintf(out, "%s %s\n", c.Name, digests[c.Name])
	}
	return nil
}

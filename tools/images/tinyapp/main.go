// Command tinyapp is the application the examples and the node profile's
// tests run as real containers (make node-images puts it in an image): a
// small static HTTP server that stands in for podinfo, so that podinfo's own
// manifests (kustomize/ and the chart) run with it through an image override.
//
// As the server (any name but podcli; the image names it ./podinfo):
//
//	tinyapp [--port=9898] [--port-metrics=0] [--host=] [--prefix=/]
//	        [--unready] [--unhealthy] [--crash] [other podinfo flags, ignored]
//
// it serves, under the prefix, / (a JSON document: hostname, version,
// message), /healthz (200, or 503 with --unhealthy), /readyz (200, or 503
// with --unready) and /version, and /metrics on the metrics port when one is
// given. --crash makes it exit 1 at start (a container that crash-loops).
// Each flag can also be set from the environment as PODINFO_<FLAG> (upper
// case, "-" as "_"), e.g. PODINFO_UNREADY=true, as podinfo reads its own;
// a flag on the command line wins. Flags tinyapp does not know (podinfo has
// more: --grpc-port, --level, --random-delay, ...) are logged and ignored.
// SIGTERM or SIGINT shut it down gracefully, exit 0.
//
// As podcli (the image links /usr/local/bin/podcli to it, or run tinyapp
// check ...):
//
//	podcli check http [--timeout=5s] [--retry=0] <host:port/path or URL>
//	podcli check tcp [--timeout=5s] <host:port>
//
// exits 0 when the URL answers 2xx (the TCP address accepts), 1 otherwise:
// podinfo's exec probes, `podcli check http localhost:9898/readyz`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// version is set at link time (-X main.version=...).
var version = "dev"

func main() {
	log.SetFlags(0)
	name := path.Base(os.Args[0])
	args := os.Args[1:]
	if name != "podcli" && len(args) > 0 && args[0] == "check" {
		name = "podcli"
	}
	if name == "podcli" {
		os.Exit(podcli(args, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serve(ctx, args, os.Getenv, os.Stderr, nil); err != nil {
		log.Printf("tinyapp: %v", err)
		os.Exit(1)
	}
}

// config is the server's configuration.
type config struct {
	port, metricsPort       int
	host, prefix            string
	unready, unhealthy      bool
	crash                   bool
	message, color, ignored string
}

func newFlags(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("tinyapp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&c.port, "port", 9898, "the HTTP port")
	fs.IntVar(&c.metricsPort, "port-metrics", 0, "the port of /metrics (0: none)")
	fs.StringVar(&c.host, "host", "", "the address to listen on (empty: all)")
	fs.StringVar(&c.prefix, "prefix", "/", "the path prefix of every route")
	fs.BoolVar(&c.unready, "unready", false, "/readyz answers 503: the readiness probe never passes")
	fs.BoolVar(&c.unhealthy, "unhealthy", false, "/healthz answers 503: the liveness probe fails")
	fs.BoolVar(&c.crash, "crash", false, "exit 1 at start: the container crash-loops")
	fs.StringVar(&c.message, "ui-message", "greetings from tinyapp", "the message / answers with")
	fs.StringVar(&c.color, "ui-color", "", "the color / answers with")
	return fs
}

// parse reads args over the environment (PODINFO_<FLAG>), ignoring flags
// it does not know; it returns the ignored ones. The environment is read
// only for flags the command line does not set: Kubernetes' service links
// set PODINFO_PORT=tcp://<IP>:<port> in every pod beside a Service named
// podinfo, and podinfo's manifests pass --port.
func parse(args []string, getenv func(string) string) (config, []string, error) {
	var c config
	fs := newFlags(&c)
	var known, ignored []string
	for _, a := range args {
		n := strings.TrimLeft(a, "-")
		n, _, _ = strings.Cut(n, "=")
		if !strings.HasPrefix(a, "-") || fs.Lookup(n) != nil {
			known = append(known, a)
		} else {
			ignored = append(ignored, a)
		}
	}
	if err := fs.Parse(known); err != nil {
		return c, nil, err
	}
	if fs.NArg() > 0 {
		return c, nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := "PODINFO_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" && !set[f.Name] && err == nil {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %v", env, v, e)
			}
		}
	})
	if err != nil {
		return c, nil, err
	}
	if !strings.HasPrefix(c.prefix, "/") {
		c.prefix = "/" + c.prefix
	}
	return c, ignored, nil
}

// serve runs the server until ctx ends. ready, when not nil, is sent the
// HTTP address once it listens.
func serve(ctx context.Context, args []string, getenv func(string) string, logw io.Writer, ready chan<- string) error {
	lg := log.New(logw, "", 0)
	c, ignored, err := parse(args, getenv)
	if err != nil {
		return err
	}
	if len(ignored) > 0 {
		lg.Printf("tinyapp %s: ignoring podinfo flags it does not implement: %s", version, strings.Join(ignored, " "))
	}
	if c.crash {
		return errors.New("--crash (PODINFO_CRASH) is set: exiting 1")
	}
	var requests atomic.Int64
	hostname, _ := os.Hostname()
	p := strings.TrimSuffix(c.prefix, "/")
	mux := http.NewServeMux()
	status := func(fail bool, what string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if fail {
				http.Error(w, what+": failing on purpose (--un"+what+")", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "{\"status\":\"OK\"}\n")
		}
	}
	mux.HandleFunc("GET "+p+"/healthz", status(c.unhealthy, "healthy"))
	mux.HandleFunc("GET "+p+"/readyz", status(c.unready, "ready"))
	mux.HandleFunc("GET "+p+"/version", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"version": version})
	})
	mux.HandleFunc("GET "+p+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{
			"hostname": hostname, "version": version, "message": c.message, "color": c.color,
		})
	})
	count := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		mux.ServeHTTP(w, r)
	})
	servers := []*http.Server{{Addr: net.JoinHostPort(c.host, strconv.Itoa(c.port)), Handler: count, ReadHeaderTimeout: 10 * time.Second}}
	if c.metricsPort != 0 {
		m := http.NewServeMux()
		m.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fmt.Fprintf(w, "# HELP tinyapp_requests_total HTTP requests served.\n# TYPE tinyapp_requests_total counter\ntinyapp_requests_total %d\n", requests.Load())
		})
		servers = append(servers, &http.Server{Addr: net.JoinHostPort(c.host, strconv.Itoa(c.metricsPort)), Handler: m, ReadHeaderTimeout: 10 * time.Second})
	}
	// Every port listens before ready is said, so a caller may use any of them.
	listeners := make([]net.Listener, len(servers))
	for i, s := range servers {
		l, err := net.Listen("tcp", s.Addr)
		if err != nil {
			for _, l := range listeners[:i] {
				l.Close()
			}
			return err
		}
		listeners[i] = l
	}
	errc := make(chan error, len(servers))
	for i, s := range servers {
		l := listeners[i]
		lg.Printf("tinyapp %s: listening on %s (unready=%t unhealthy=%t)", version, l.Addr(), c.unready, c.unhealthy)
		go func() { errc <- s.Serve(l) }()
	}
	if ready != nil {
		ready <- listeners[0].Addr().String()
	}
	select {
	case err := <-errc:
		for _, s := range servers {
			s.Close()
		}
		return err
	case <-ctx.Done():
	}
	lg.Printf("tinyapp: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		s.Shutdown(sctx)
	}
	return nil
}

// podcli runs `check http|tcp ...` and returns the exit code.
func podcli(args []string, stdout, stderr io.Writer) int {
	usage := "usage: podcli check http [--timeout=5s] [--retry=N] <address/path>, or podcli check tcp [--timeout=5s] <host:port>"
	if len(args) < 2 || args[0] != "check" || (args[1] != "http" && args[1] != "tcp") {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	kind := args[1]
	fs := flag.NewFlagSet("podcli", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	timeout := fs.Duration("timeout", 5*time.Second, "each attempt's timeout")
	retries := fs.Int("retry", 0, "further attempts after a failure, a second apart")
	// podinfo's podcli spells them so as well.
	fs.IntVar(retries, "retry-count", 0, "same as --retry")
	if err := fs.Parse(args[2:]); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	target := fs.Arg(0)
	var err error
	for i := 0; i <= *retries; i++ {
		if i > 0 {
			time.Sleep(time.Second)
		}
		if kind == "tcp" {
			err = checkTCP(target, *timeout)
		} else {
			err = checkHTTP(target, *timeout)
		}
		if err == nil {
			fmt.Fprintf(stdout, "check %s %s: OK\n", kind, target)
			return 0
		}
	}
	fmt.Fprintf(stderr, "check %s %s: %v\n", kind, target, err)
	return 1
}

// dialLocalhost dials "localhost" as the loopback address without asking
// a resolver (RFC 6761): the probes' target, in an image with no
// /etc/hosts of its own (the kubelet gives pods one, a bare runtime may not).
func dialLocalhost(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && strings.EqualFold(host, "localhost") {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func checkTCP(addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := dialLocalhost(ctx, "tcp", strings.TrimPrefix(addr, "tcp://"))
	if err != nil {
		return err
	}
	return c.Close()
}

func checkHTTP(target string, timeout time.Duration) error {
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: dialLocalhost}}
	resp, err := client.Get(target)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

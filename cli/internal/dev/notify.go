package dev

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/eddyops/eddy/pkg/events"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Secrets `eddy dev up` creates in flux-system for its own Receiver and
// for the notification objects of a repository
// (examples/platform-config/clusters/dev/notifications.yaml names them),
// so no secret is committed. Their names start with eddy-dev- so that no
// repository's Secret replaces them: a repository following Flux's
// documentation declares its own webhook-token.
const (
	// WebhookSecret holds `token`: the Receivers' token, random, kept in
	// <state dir>/webhook-token so the receiver URL survives a restart.
	WebhookSecret = "eddy-dev-webhook-token"
	// AlertsSinkSecret holds `address`: the URL of the alerts sink (only
	// with Options.AlertsSink).
	AlertsSinkSecret = "eddy-dev-alerts-sink"
)

// maxEventBytes bounds an event's body, as notification-controller does.
const maxEventBytes = 3 << 20

// tokenFile is where the Receivers' token is kept (mode 0600).
func tokenFile(stateDir string) string { return filepath.Join(stateDir, "webhook-token") }

// WebhookToken returns the Receivers' token of stateDir, creating a random
// one (32 bytes, hex) the first time.
func WebhookToken(stateDir string) (string, error) {
	if data, err := os.ReadFile(tokenFile(stateDir)); err == nil {
		if t := strings.TrimSpace(string(data)); t != "" {
			return t, nil
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b)
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(tokenFile(stateDir), []byte(t+"\n"), 0o600); err != nil {
		return "", err
	}
	return t, nil
}

// applySecret creates or updates the Secret flux-system/name with data.
func applySecret(ctx context.Context, c client.Client, name string, data map[string]string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}}
	if err := createOrUpdate(ctx, c, s, func() {
		s.Type = corev1.SecretTypeOpaque
		s.Data = nil
		s.StringData = data
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels["app.kubernetes.io/managed-by"] = "eddy-dev"
	}); err != nil {
		return fmt.Errorf("Secret %s/%s: %w", Namespace, name, err)
	}
	return nil
}

// startEventRecorder serves the controllers' --events-addr: it appends
// each event, one JSON document a line, to logs/events.log and forwards it
// unchanged to notification-controller's event server (State
// NotificationAddr), answering with its status (502 when it is down, so the
// controllers retry as they would against it).
func (e *Env) startEventRecorder() (int, error) {
	fc := &http.Client{Timeout: 4 * time.Second}
	var mu sync.Mutex
	srv, port, err := e.serveLogged("events.log", func(f *os.File) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				http.Error(w, "POST an event", http.StatusMethodNotAllowed)
				return
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, maxEventBytes+1))
			if len(body) > maxEventBytes {
				http.Error(w, "the event is larger than 3 MiB", http.StatusRequestEntityTooLarge)
				return
			}
			if err != nil || !json.Valid(body) {
				http.Error(w, "invalid event", http.StatusBadRequest)
				return
			}
			mu.Lock()
			_, _ = f.Write(append(bytes.TrimSpace(body), '\n'))
			mu.Unlock()
			e.mu.Lock()
			forward := e.state.NotificationAddr
			e.mu.Unlock()
			if forward == "" {
				http.Error(w, "notification-controller not started", http.StatusServiceUnavailable)
				return
			}
			req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, forward, bytes.NewReader(body))
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := fc.Do(req)
			if err != nil {
				http.Error(w, "notification-controller unreachable", http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, io.LimitReader(resp.Body, 64<<10))
		}
	})
	e.events = srv
	return port, err
}

// serveLogged serves the handler made by h on a free loopback port, with
// logs/<logName> under the state directory opened for appending and given
// to h (closed when the server shuts down). It returns the server, already
// in e.servers, and its port.
func (e *Env) serveLogged(logName string, h func(*os.File) http.HandlerFunc) (*http.Server, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(filepath.Join(e.Opts.StateDir, "logs", logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		l.Close()
		return nil, 0, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: h(f)}
	e.servers = append(e.servers, srv)
	srv.RegisterOnShutdown(func() { f.Close() })
	go func() { _ = srv.Serve(l) }()
	return srv, l.Addr().(*net.TCPAddr).Port, nil
}

// AlertLine formats one alert (the Flux event JSON a generic Provider
// POSTs) as the sink prints it: severity, involved object, revision when
// known, message (first line).
func AlertLine(body []byte) (string, error) {
	var ev struct {
		InvolvedObject struct{ Kind, Namespace, Name string } `json:"involvedObject"`
		Severity       string                                 `json:"severity"`
		Message        string                                 `json:"message"`
		Metadata       map[string]string                      `json:"metadata"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return "", errors.New("not a Flux event")
	}
	o := ev.InvolvedObject
	if o.Kind == "" || o.Name == "" {
		return "", errors.New("not a Flux event: no involvedObject")
	}
	msg := strings.Join(strings.Fields(strings.ReplaceAll(ev.Message, "\n", "; ")), " ")
	if cut := events.Truncate(msg, 300); cut != msg {
		msg = cut + "…" // on a rune boundary: an alert line stays valid UTF-8
	}
	line := fmt.Sprintf("alert %s %s/%s/%s", ev.Severity, o.Kind, o.Namespace, o.Name)
	if rev := ev.Metadata["revision"]; rev != "" {
		line += " " + rev
	}
	return line + ": " + msg, nil
}

// startAlertsSink serves a local alerts endpoint for generic Providers: each
// event POSTed there is written as one AlertLine to logs/alerts.log and
// given to Options.OnAlert.
func (e *Env) startAlertsSink() (int, error) {
	var mu sync.Mutex
	_, port, err := e.serveLogged("alerts.log", func(f *os.File) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				http.Error(w, "POST an alert", http.StatusMethodNotAllowed)
				return
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
			if err != nil {
				http.Error(w, "cannot read the body", http.StatusBadRequest)
				return
			}
			line, err := AlertLine(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			_, _ = fmt.Fprintf(f, "%s %s\n", time.Now().Format(time.RFC3339), line)
			if e.Opts.OnAlert != nil {
				e.Opts.OnAlert(line)
			}
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		}
	})
	return port, err
}

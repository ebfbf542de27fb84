package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// partOfSelector selects the controllers' Deployments. Flux compatible.
const partOfSelector = "app.kubernetes.io/part-of=flux"

// logFilter is what `eddy logs` prints: flux's --level, --kind, --name
// and namespace filters.
type logFilter struct {
	level, kind, name, namespace string
	allNamespaces                bool
}

// logEntry is one JSON line of a controller's log.
type logEntry struct {
	Timestamp      string `json:"ts"`
	Level          string `json:"level"`
	Message        string `json:"msg"`
	Error          string `json:"error,omitempty"`
	Logger         string `json:"logger"`
	Kind           string `json:"reconciler kind,omitempty"`
	ControllerKind string `json:"controllerKind,omitempty"`
	Name           string `json:"name,omitempty"`
	Namespace      string `json:"namespace,omitempty"`
}

func (f *logFilter) match(l *logEntry) bool {
	return (f.level == "" || f.level == l.Level) &&
		(f.kind == "" || strings.EqualFold(f.kind, l.Kind) || strings.EqualFold(f.kind, l.ControllerKind)) &&
		(f.name == "" || strings.EqualFold(f.name, l.Name)) &&
		(f.allNamespaces || strings.EqualFold(f.namespace, l.Namespace))
}

// format renders a line as flux does:
// `<ts> <level> <Kind>[/<name>.<namespace>] - <msg> <error>`.
func (l *logEntry) format() string {
	kind := l.Kind
	if kind == "" {
		kind = l.ControllerKind
	}
	if l.Name != "" {
		kind += "/" + l.Name + "." + l.Namespace
	}
	return fmt.Sprintf("%s %s %s - %s %s\n", l.Timestamp, l.Level, kind, l.Message, l.Error)
}

// copyLog prints the lines of r that are JSON log entries passing f; other
// lines are skipped.
func copyLog(w io.Writer, mu *sync.Mutex, r io.Reader, f *logFilter) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var l logEntry
		if json.Unmarshal(line, &l) != nil || !f.match(&l) {
			continue
		}
		mu.Lock()
		_, err := io.WriteString(w, l.format())
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

func newLogsCommand(g *globalFlags) *cobra.Command {
	var f logFilter
	var follow bool
	var tail int64
	var fluxNamespace string
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Display formatted logs of the Eddy controllers",
		Long: `Display the controllers' logs, formatted and filtered. In a cluster the logs are read from one
pod of each Deployment labelled app.kubernetes.io/part-of=flux in --flux-namespace; when the
kubeconfig points at a running eddy dev environment, from the controllers' log files.`,
		Example: `  # Print the reconciliation logs of all Flux custom resources in your cluster
  eddy logs --all-namespaces

  # Stream the error logs of a Kustomization
  eddy logs --follow --level=error --kind=Kustomization --name=podinfo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch f.level {
			case "", "debug", "info", "error", "trace":
			default:
				return fmt.Errorf("unsupported log level '%s', must be one of: debug, info, error, trace", f.level)
			}
			f.namespace = g.namespace
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if !follow {
				var cancel context.CancelFunc
				ctx, cancel = g.ctx(cmd)
				defer cancel()
			}
			out := cmd.OutOrStdout()
			if files := devLogFiles(cfg); files != nil {
				return devLogs(ctx, out, files, &f, follow, tail)
			}
			return podLogs(ctx, out, cfg, fluxNamespace, &f, follow, tail)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.level, "level", "", "log level: debug, info, error or trace")
	fs.StringVar(&f.kind, "kind", "", "displays errors of a particular toolkit kind e.g GitRepository")
	fs.StringVar(&f.name, "name", "", "specifies the name of the object logs to be displayed")
	fs.BoolVarP(&follow, "follow", "f", false, "specifies if the logs should be streamed")
	fs.Int64Var(&tail, "tail", -1, "lines of recent log file to display")
	fs.StringVar(&fluxNamespace, "flux-namespace", "flux-system", "the namespace where the Flux components are running")
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "displays logs for objects across all namespaces")
	return cmd
}

// devLogFiles returns the controllers' log files when cfg is the API
// server of the running eddy dev environment; nil otherwise.
func devLogFiles(cfg *rest.Config) []string {
	dir, err := dev.DefaultStateDir()
	if err != nil {
		return nil
	}
	s := dev.Running(dir)
	if s == nil || s.Kubeconfig == "" {
		return nil
	}
	devCfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil || strings.TrimSuffix(devCfg.Host, "/") != strings.TrimSuffix(cfg.Host, "/") {
		return nil
	}
	var files []string
	for _, c := range s.Controllers {
		if c.LogPath != "" {
			files = append(files, c.LogPath)
		}
	}
	sort.Strings(files)
	return files
}

// devLogs prints the log files, each from its last tail lines (all with
// -1); with follow it then waits for new lines until ctx ends.
func devLogs(ctx context.Context, w io.Writer, files []string, f *logFilter, follow bool, tail int64) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(files))
	for i, path := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = tailFile(ctx, w, &mu, path, f, follow, tail)
		}()
		if !follow {
			wg.Wait() // one file after the other, as pod logs are printed
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

func tailFile(ctx context.Context, w io.Writer, mu *sync.Mutex, path string, f *logFilter, follow bool, tail int64) error {
	file, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // not started yet
		}
		return err
	}
	defer file.Close()
	if tail >= 0 {
		data, err := io.ReadAll(file)
		if err != nil {
			return err
		}
		lines := strings.SplitAfter(string(data), "\n")
		if n := len(lines); n > 0 && lines[n-1] == "" {
			lines = lines[:n-1]
		}
		if int64(len(lines)) > tail {
			lines = lines[int64(len(lines))-tail:]
		}
		if err := copyLog(w, mu, strings.NewReader(strings.Join(lines, "")), f); err != nil {
			return err
		}
	} else if !follow {
		return copyLog(w, mu, file, f)
	}
	if !follow {
		return nil
	}
	// Follow: print each line once complete (from the start without
	// --tail), then poll for appended ones until ctx ends.
	r := bufio.NewReader(file)
	var partial string
	for {
		line, err := r.ReadString('\n')
		partial += line
		if err == nil {
			if err := copyLog(w, mu, strings.NewReader(partial), f); err != nil {
				return err
			}
			partial = ""
			continue
		}
		if err != io.EOF {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// podLogs prints the logs of one pod of each controller Deployment.
func podLogs(ctx context.Context, w io.Writer, cfg *rest.Config, ns string, f *logFilter, follow bool, tail int64) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: partOfSelector})
	if err != nil {
		return err
	}
	var pods []corev1.Pod
	for _, d := range deps.Items {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(d.Spec.Template.Labels).String()})
		if err != nil {
			return err
		}
		if p := pickPod(list.Items); p != nil {
			pods = append(pods, *p)
		}
	}
	if len(pods) == 0 {
		return fmt.Errorf("no Flux pods found in namespace %q", ns)
	}
	opts := &corev1.PodLogOptions{Follow: follow}
	if tail > -1 {
		opts.TailLines = &tail
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	for i, p := range pods {
		o := opts.DeepCopy()
		if len(p.Spec.Containers) > 1 {
			o.Container = "manager"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, o).Stream(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			defer stream.Close()
			errs[i] = copyLog(w, &mu, stream, f)
		}()
		if !follow {
			wg.Wait()
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pickPod prefers a running, ready pod, then the newest.
func pickPod(pods []corev1.Pod) *corev1.Pod {
	if len(pods) == 0 {
		return nil
	}
	score := func(p *corev1.Pod) int {
		s := 0
		if p.Status.Phase == corev1.PodRunning {
			s += 2
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				s++
			}
		}
		return s
	}
	best := &pods[0]
	for i := range pods[1:] {
		p := &pods[i+1]
		if score(p) > score(best) || (score(p) == score(best) && p.CreationTimestamp.After(best.CreationTimestamp.Time)) {
			best = p
		}
	}
	return best
}

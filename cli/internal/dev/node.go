package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kinds of node of `eddy dev up --node`.
const (
	// NodeKwok is the default: kwok's fake nodes, the controllers as
	// local processes.
	NodeKwok = "kwok"
	// NodeReal is the node profile: a real kubelet and containerd on this
	// machine (root), the controllers as pods from their images.
	NodeReal = "real"
)

// DefaultRegistryAddr is where the local registry of `eddy dev up --node
// real` listens: containerd pulls from a loopback registry over plain HTTP,
// so a repository names the images it serves 127.0.0.1:5001/<name>:<tag>.
const DefaultRegistryAddr = "127.0.0.1:5001"

// requiredImages are the controllers whose images --node real needs; an
// application-controller image is installed when the layout has one.
var requiredImages = install.DefaultComponents

// CheckNodeFlags refuses the flags that --node real cannot honour, in one
// line each; node "" is kwok.
func CheckNodeFlags(f *Flags) error {
	switch f.Node {
	case "", NodeKwok:
		return nil
	case NodeReal:
	default:
		return fmt.Errorf("--node %q: want %s (fake nodes, controllers as local processes) or %s (a real kubelet and containerd, controllers as pods)",
			f.Node, NodeKwok, NodeReal)
	}
	switch {
	case f.Nodes != 1:
		return fmt.Errorf("--nodes=%d: --node real runs one node, this machine", f.Nodes)
	case f.AlertsSink:
		return errors.New("--alerts-sink is not available with --node real (pods cannot reach the sink): run `eddy dev up` without --node real for it")
	case f.InstallHook:
		return errors.New("--install-hook is not available with --node real (notification-controller runs in a pod): " +
			"run `eddy reconcile ks flux-system --with-source` after a commit")
	}
	return nil
}

// NodeImages are the image layouts `eddy dev up --node real` pushes to its
// registry: the controllers' (Controllers) and the node's (Node: the
// pause image and the tiny application).
type NodeImages struct {
	Controllers, Node string
	// Components are the controllers the layout has images of.
	Components []string
}

// FindNodeImages returns the layouts of root's bin/ for version: bin/images
// (make images), else bin/test-images (make test-images), the first whose
// images of every installed controller carry the version label version,
// and bin/node-images. The error is one line saying what to build.
func FindNodeImages(root, version string) (*NodeImages, error) {
	node := filepath.Join(root, "bin", "node-images")
	if _, err := os.Stat(filepath.Join(node, "index.json")); err != nil {
		return nil, errors.New("--node real: no bin/node-images (the pause image the node needs): run `make node-images`")
	}
	var found []string
	for _, name := range []string{"images", "test-images"} {
		dir := filepath.Join(root, "bin", name)
		if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
			continue
		}
		labels, err := layoutVersions(dir)
		if err != nil {
			return nil, fmt.Errorf("--node real: bin/%s: %w", name, err)
		}
		current := true
		for _, c := range requiredImages {
			current = current && labels[c] == version
		}
		if current {
			imgs := &NodeImages{Controllers: dir, Node: node}
			for _, c := range install.Components {
				if labels[c] == version {
					imgs.Components = append(imgs.Components, c)
				}
			}
			return imgs, nil
		}
		found = append(found, fmt.Sprintf("bin/%s holds %s", name, labels[requiredImages[0]]))
	}
	msg := fmt.Sprintf("--node real: no controller images of eddy %s in bin/images or bin/test-images: run `make images` (or `make test-images`)", version)
	if len(found) > 0 {
		msg += " (" + strings.Join(found, "; ") + ")"
	}
	return nil, errors.New(msg)
}

// layoutVersions reads the org.opencontainers.image.version label of the
// linux/amd64 image of each entry of the OCI layout at dir, by repository
// name (source-controller, ...).
func layoutVersions(dir string) (map[string]string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	root, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := root.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range im.Manifests {
		name := d.Annotations["org.opencontainers.image.ref.name"]
		repo, _, _ := strings.Cut(name[strings.LastIndex(name, "/")+1:], ":")
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			continue // a single image: not one of make images' indexes
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, md := range m.Manifests {
			if md.Platform == nil || !md.Platform.Satisfies(v1.Platform{OS: "linux", Architecture: "amd64"}) {
				continue
			}
			img, err := idx.Image(md.Digest)
			if err != nil {
				return nil, err
			}
			cf, err := img.ConfigFile()
			if err != nil {
				return nil, err
			}
			out[repo] = cf.Config.Labels["org.opencontainers.image.version"]
		}
	}
	return out, nil
}

// NodeBundleOptions are the install options of --node real: `eddy
// install --registry=<registry>`'s, with the pushed images' digests,
// application-controller when its image is there, the optional
// controllers of s (`eddy dev up` refuses to start when one has no image:
// checkNodeOptional), and the shards.
func NodeBundleOptions(s *State, version string) install.Options {
	o := install.DefaultOptions(version)
	o.Registry = s.Registry
	o.ImageDigests, o.DigestsVersion = s.ImageDigests, version
	if _, ok := s.ImageDigests[install.ApplicationController]; ok {
		o.ComponentsExtra = []string{install.ApplicationController}
	}
	o.ComponentsExtra = append(o.ComponentsExtra, s.OptionalComponents...)
	for i := 1; i <= s.Shards; i++ {
		o.Shards = append(o.Shards, ShardName(i))
	}
	return o
}

// nodeBundle builds the install bundle of --node real, with each
// controller's extra flags appended to its Deployment's arguments.
func nodeBundle(s *State, version string) ([]*unstructured.Unstructured, error) {
	objs, err := install.Objects(NodeBundleOptions(s, version))
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		flags := s.ControllerFlags.forProcess(u.GetName())
		if u.GetKind() != "Deployment" || len(flags) == 0 {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
				args, _ := m["args"].([]any)
				for _, f := range flags {
					args = append(args, f)
				}
				m["args"] = args
			}
		}
		if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// startNode starts the registry and pushes the images to it, then the
// node profile's cluster, and installs Eddy as `eddy install --registry`
// does; the controllers' pods are waited for by waitPods.
func (e *Env) startNode(ctx context.Context) (err error) {
	imgs := e.Opts.NodeImages
	if imgs == nil {
		return errors.New("--node real: no images to install (see FindNodeImages)")
	}
	addr := e.Opts.RegistryAddr
	if addr == "" {
		addr = DefaultRegistryAddr
	}
	e.progress("starting the local registry at %s and pushing the images of %s and %s", addr, imgs.Controllers, imgs.Node)
	e.registry, err = localcluster.StartRegistry(localcluster.RegistryOptions{Addr: addr, Dir: filepath.Join(e.Opts.StateDir, "registry")})
	if err != nil {
		return fmt.Errorf("%w (another eddy dev or registry there? pick another address with --registry-addr)", err)
	}
	digests, refs := map[string]string{}, map[string]string{}
	var tags []string
	for _, dir := range []string{imgs.Controllers, imgs.Node} {
		pushed, err := e.registry.PushLayout(ctx, dir)
		if err != nil {
			return err
		}
		for _, p := range pushed {
			refs[p.Name] = p.Ref
			tags = append(tags, p.Name+":"+p.Tag)
			if slices.Contains(imgs.Components, p.Name) {
				digests[p.Name] = p.Digest.String()
			}
		}
	}
	e.mu.Lock()
	e.state.Registry, e.state.Images, e.state.ImageDigests = e.registry.Host(), tags, digests
	e.state.Ports = append(e.state.Ports, portOf("http://"+e.registry.Host()))
	e.mu.Unlock()
	e.progress("registry %s serves %s", e.registry.Host(), strings.Join(tags, ", "))

	e.progress("starting the local cluster with a real node (etcd, kube-apiserver, controller-manager, scheduler, CoreDNS, containerd, kubelet, kube-proxy)")
	e.Cluster, err = localcluster.Start(ctx, localcluster.Options{
		Profile: localcluster.ProfileNode, BinDir: e.Opts.K8sBinDir, Dir: filepath.Join(e.Opts.StateDir, "cluster"),
		Timeout: 3 * time.Minute, Node: localcluster.NodeOptions{SandboxImage: refs["pause"]},
	})
	if err != nil {
		return err
	}
	e.recordCluster()
	if e.Client, err = client.New(e.Cluster.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return err
	}
	st := e.State()
	objs, err := nodeBundle(&st, e.Opts.Version)
	if err != nil {
		return err
	}
	e.progress("installing Eddy as eddy install --registry=%s does: the controllers run as pods from their images", e.registry.Host())
	if _, err := install.Apply(ctx, e.Client, objs); err != nil {
		return fmt.Errorf("install failed: %w", err)
	}
	e.nodeObjs = objs
	return nil
}

// startNodeServers serves the Git repositories on the node IP, which the
// pods reach, and applies the webhook token's Secret.
func (e *Env) startNodeServers(ctx context.Context) (err error) {
	e.Git, err = gitserver.Start(e.gitServerOptions(localcluster.NodeIP + ":0"))
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.state.GitServer = e.Git.URL
	e.state.Ports = append(e.state.Ports, portOf(e.Git.URL))
	e.mu.Unlock()
	token, err := WebhookToken(e.Opts.StateDir)
	if err != nil {
		return err
	}
	return applySecret(ctx, e.Client, WebhookSecret, map[string]string{"token": token})
}

// waitPods waits until every controller's Deployment is Available, then
// keeps the controllers' flags for the next start.
func (e *Env) waitPods(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	err := install.WaitDeployments(ctx, e.Client, e.nodeObjs, time.Second, func(name string) {
		e.progress("%s: deployment ready", name)
	})
	if err != nil {
		return err
	}
	return saveControllerFlags(e.Opts.StateDir, e.Opts.ControllerFlags)
}

// printDeployments prints the controllers' Deployments of --node real,
// with their ready replicas, and returns a line for each not Available.
func printDeployments(ctx context.Context, out io.Writer, c client.Client) []string {
	l := &appsv1.DeploymentList{}
	if err := c.List(ctx, l, client.InNamespace(Namespace), client.MatchingLabels{install.PartOfLabel: install.PartOfValue}); err != nil {
		return []string{"  deployments: " + err.Error()}
	}
	var why []string
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "DEPLOYMENT\tREADY\tIMAGE")
	for _, d := range l.Items {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		image := ""
		if len(d.Spec.Template.Spec.Containers) > 0 {
			image = d.Spec.Template.Spec.Containers[0].Image
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\n", d.Name, d.Status.ReadyReplicas, want, image)
		if d.Status.ReadyReplicas < want {
			why = append(why, fmt.Sprintf("  %s: %d of %d pods ready (kubectl -n %s describe deployment/%s)", d.Name, d.Status.ReadyReplicas, want, Namespace, d.Name))
		}
	}
	_ = tw.Flush()
	return why
}

// nodeOf is the kind of node of the running environment s.
func nodeOf(s *State) string {
	if s.Node == "" {
		return NodeKwok
	}
	return s.Node
}

// recordCluster records the cluster's processes and ports in the state.
func (e *Env) recordCluster() {
	e.mu.Lock()
	e.state.Kubeconfig = e.Cluster.KubeconfigPath
	e.state.Ports = append(e.state.Ports, e.Cluster.Ports()...)
	for _, c := range e.Cluster.Components() {
		e.state.Cluster = append(e.state.Cluster, ClusterProc{Name: c.Name, PID: c.PID, Log: c.LogPath})
	}
	e.mu.Unlock()
	_ = e.save()
	e.progress("cluster ready in %s", e.Cluster.StartupDuration.Round(100*time.Millisecond))
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	yaml "sigs.k8s.io/yaml/goyaml.v2"
)

func newVersionCommand(g *globalFlags) *cobra.Command {
	var clientOnly bool
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client and server-side components version information",
		Long: `Print the eddy version and, unless --client, the distribution installed in the cluster and the
image tag of each controller (the Deployments labelled app.kubernetes.io/part-of=flux in the
namespace of -n). It fails when the cluster does not answer or has no such Deployment.`,
		Example: "  # Print client and server-side version\n  eddy version\n\n  # Print only client version\n  eddy version --client\n\n  # Print information in json format\n  eddy version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "yaml" && output != "json" {
				return fmt.Errorf("--output must be json or yaml, not %s", output)
			}
			fields := [][2]string{{"eddy", version}}
			if !clientOnly {
				server, err := g.serverVersions(cmd)
				if err != nil {
					return err
				}
				fields = append(fields, server...)
			}
			var out []byte
			var err error
			if output == "json" {
				m := map[string]string{}
				for _, f := range fields {
					m[f[0]] = f[1]
				}
				out, err = json.MarshalIndent(m, "", "  ")
				out = append(out, '\n')
			} else {
				ms := yaml.MapSlice{}
				for _, f := range fields {
					ms = append(ms, yaml.MapItem{Key: f[0], Value: f[1]})
				}
				out, err = yaml.Marshal(ms)
			}
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print only the client version")
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "the format to print the information in: json or yaml")
	return cmd
}

// serverVersions returns flux version's server fields in order: the
// distribution (when the GitRepository CRD is installed) and, sorted by
// name, each controller's image name and tag (flux2:cmd/flux/version.go).
func (g *globalFlags) serverVersions(cmd *cobra.Command) ([][2]string, error) {
	c, err := g.client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := g.ctx(cmd)
	defer cancel()
	var fields [][2]string
	// Without the CRD, other controllers may still run: no distribution.
	info, err := clusterInfo(ctx, c)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if d := info.distribution(); d != "" {
		fields = append(fields, [2]string{"distribution", d})
	}
	deps, err := controllers(ctx, c, g.namespace)
	if err != nil {
		return nil, err
	}
	if len(deps) == 0 {
		return nil, fmt.Errorf("no deployments found in %s namespace", g.namespace)
	}
	images := map[string]string{}
	for _, d := range deps {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			n, tag, err := imageNameTag(ctr.Image)
			if err != nil {
				return nil, err
			}
			images[n] = tag
		}
	}
	names := make([]string, 0, len(images))
	for n := range images {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fields = append(fields, [2]string{n, images[n]})
	}
	return fields, nil
}

// imageNameTag splits an image reference into the last element of its
// repository and its tag (with a digest, if any, after it):
// "ghcr.io/eddyops/source-controller:v1.0.0" is "source-controller", "v1.0.0".
func imageNameTag(image string) (string, string, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", "", fmt.Errorf("parsing image '%s' failed: %w", image, err)
	}
	repo := strings.TrimPrefix(image, ref.Context().RegistryStr())
	repo, digest, pinned := strings.Cut(repo, "@")
	path, tag, found := strings.Cut(repo, ":")
	if !found {
		return "", "", errors.New("missing image tag in image " + image)
	}
	if pinned {
		tag += "@" + digest
	}
	return path[strings.LastIndex(path, "/")+1:], tag, nil
}

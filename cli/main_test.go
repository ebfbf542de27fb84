package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestVersionCommand(t *testing.T) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version", "--client"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "eddy: "+version+"\n"; got != want {
		t.Errorf("eddy version printed %q, want %q", got, want)
	}
	cmd.SetArgs([]string{"version", "extra"})
	if err := cmd.Execute(); err == nil {
		t.Error("eddy version with an argument succeeded; want a usage error")
	}
}

// cobra takes a back-quoted word of a flag's usage as its placeholder
// (`--kubeconfig eddy dev`): no usage string may have one.
func TestFlagUsageHasNoBackQuotes(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if strings.Contains(f.Usage, "`") {
					t.Errorf("eddy %s --%s: usage has a back quote: %q", c.CommandPath(), f.Name, f.Usage)
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}

// TestBootstrapShards: bootstrap has --shards, and the shards reach the
// install options, so the pushed and applied bundle has the shard
// Deployments.
func TestBootstrapShards(t *testing.T) {
	if f := newBootstrapCommand(&globalFlags{}).PersistentFlags().Lookup("shards"); f == nil || f.Value.Type() != "stringSlice" {
		t.Fatalf("eddy bootstrap --shards: %v", f)
	}
	def := install.DefaultOptions("v1")
	b := &bootstrapFlags{version: "v1", components: def.Components, registry: def.Registry, logLevel: "info",
		clusterDomain: def.ClusterDomain, shards: []string{"a", "b"}}
	o := b.installOptions("flux-system")
	if strings.Join(o.Shards, ",") != "a,b" {
		t.Fatalf("install options' shards %q", o.Shards)
	}
	objs, err := install.Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, u := range objs {
		if u.GetKind() == "Deployment" && strings.HasSuffix(u.GetName(), "-controller-b") {
			found++
		}
	}
	if found != 3 {
		t.Errorf("%d Deployments of shard b, want 3", found)
	}
}

// TestBootstrapImageComponents: bootstrap's --components-extra reaches the
// install options, so the pushed bundle has the image controllers and
// their CRDs; an unknown extra component is refused before anything runs.
func TestBootstrapImageComponents(t *testing.T) {
	def := install.DefaultOptions("v1")
	b := &bootstrapFlags{version: "v1", components: def.Components, registry: def.Registry, logLevel: "info",
		clusterDomain: def.ClusterDomain, componentsExtra: []string{install.ImageReflectorController, install.ImageAutomationController}}
	objs, err := install.Objects(b.installOptions("flux-system"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range objs {
		if u.GetKind() == "Deployment" || u.GetKind() == "CustomResourceDefinition" {
			if strings.Contains(u.GetName(), "image") {
				got = append(got, u.GetKind()+"/"+u.GetName())
			}
		}
	}
	want := "CustomResourceDefinition/imagepolicies.image.toolkit.fluxcd.io,CustomResourceDefinition/imagerepositories.image.toolkit.fluxcd.io," +
		"CustomResourceDefinition/imageupdateautomations.image.toolkit.fluxcd.io,Deployment/image-automation-controller,Deployment/image-reflector-controller"
	if strings.Join(got, ",") != want {
		t.Errorf("bootstrap bundle's image objects %q, want %q", got, want)
	}
	b.componentsExtra = []string{"image-controller"}
	if _, err := install.Objects(b.installOptions("flux-system")); err == nil || !strings.Contains(err.Error(), `component "image-controller" is not available`) {
		t.Errorf("--components-extra=image-controller: %v", err)
	}
}

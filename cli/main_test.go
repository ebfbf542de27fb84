package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestVersionCommand(t *testing.T) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "eddy "+version+"\n"; got != want {
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

// The printed export line is one shell word whatever the path holds.
func TestPrintExportQuotesTheKubeconfigPath(t *testing.T) {
	for path, want := range map[string]string{
		"/home/a/.local/state/eddy/dev/cluster/kubeconfig": "export KUBECONFIG=/home/a/.local/state/eddy/dev/cluster/kubeconfig",
		"/home/a b/kubeconfig":                             "export KUBECONFIG='/home/a b/kubeconfig'",
		"/home/o'neil/kubeconfig":                          `export KUBECONFIG='/home/o'\''neil/kubeconfig'`,
		"/tmp/$x/kubeconfig":                               "export KUBECONFIG='/tmp/$x/kubeconfig'",
	} {
		var out bytes.Buffer
		printExport(&out, path, nil, false)
		if got := strings.TrimSpace(out.String()); got != want {
			t.Errorf("kubeconfig %q: printed %q, want %q", path, got, want)
		}
		// The shell reads it back as the path.
		echo, err := exec.Command("sh", "-c", strings.Replace(want, "export KUBECONFIG=", "printf %s ", 1)).Output()
		if err != nil || string(echo) != path {
			t.Errorf("sh reads %q back as %q (%v)", want, echo, err)
		}
	}
}

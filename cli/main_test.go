package main

import (
	"bytes"
	"strings"
	"testing"

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

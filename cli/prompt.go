package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// confirm asks label as a yes/no question on the command's output and
// reads the answer from its input (see askYes).
func confirm(cmd *cobra.Command, label string) bool {
	return askYes(cmd.OutOrStdout(), cmd.InOrStdin(), label+"? [y/N] ")
}

// askYes prints question and reads one line from in: only y or yes (any
// case) confirm; end of input is a no. Off a terminal, where the answer is
// not echoed, the question's line is ended so the next output starts on
// its own line.
func askYes(out io.Writer, in io.Reader, question string) bool {
	fmt.Fprint(out, question)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	if f, ok := in.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		fmt.Fprintln(out)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

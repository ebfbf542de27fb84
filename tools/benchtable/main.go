// Command benchtable reads the output of `go test -bench` (files named as
// arguments, or standard input) and prints one Markdown table of every metric
// whose unit starts with "ratio-": each benchmark's figure against the
// baseline measured in the same run (Flux's own controllers, a plain loop, the
// Helm SDK…), the table `make bench` ends with and the README's Scale section
// shows. Lines that are not benchmark results are ignored; no ratio at all is
// an error, so a run that measured nothing does not print an empty table.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ratio is one ratio metric of one benchmark result line.
type ratio struct {
	benchmark string // without the "Benchmark" prefix and the -GOMAXPROCS suffix
	metric    string // the unit after "ratio-", e.g. "eddy/flux-time"
	value     float64
}

func main() {
	var ins []io.Reader
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		defer f.Close()
		ins = append(ins, f)
	}
	if len(ins) == 0 {
		ins = append(ins, os.Stdin)
	}
	rs, err := parse(io.MultiReader(ins...))
	if err == nil && len(rs) == 0 {
		err = fmt.Errorf("no ratio-* metric in the benchmark output")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	fmt.Print(table(rs))
}

// parse returns the ratio metrics of r's benchmark result lines, in order.
// A result line is "BenchmarkName-N <iterations> (<value> <unit>)...", as
// testing.B prints it.
func parse(r io.Reader) ([]ratio, error) {
	var rs []ratio
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			unit, ok := strings.CutPrefix(f[i+1], "ratio-")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: metric %s: %v", f[0], f[i+1], err)
			}
			rs = append(rs, ratio{benchmark: name, metric: unit, value: v})
		}
	}
	return rs, sc.Err()
}

// table renders rs as a Markdown table, one row per ratio.
func table(rs []ratio) string {
	var b strings.Builder
	b.WriteString("| benchmark | ratio | value |\n|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %.2f |\n", r.benchmark, r.metric, r.value)
	}
	return b.String()
}

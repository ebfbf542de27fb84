package main

import (
	"strings"
	"testing"
)

func TestTableListsEveryRatioMetricOfEveryResultLine(t *testing.T) {
	out := `goos: linux
BenchmarkScale/n=1000/shards=1/limits=default-2   	       1	294400000000 ns/op	        294.4 ready-s	         3.13 ratio-ready/baseline	        22.00 req/reconcile
--- BENCH: BenchmarkScale
    scale_bench_test.go:231: ratio-fake 1 line that is a log, not a result
BenchmarkHelm/100-2	1	1 ns/op	0.41 ratio-eddy/flux-time	0.23 ratio-eddy/flux-rss
PASS
`
	rs, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got := table(rs)
	want := "| benchmark | ratio | value |\n|---|---|---|\n" +
		"| Scale/n=1000/shards=1/limits=default | ready/baseline | 3.13 |\n" +
		"| Helm/100 | eddy/flux-time | 0.41 |\n" +
		"| Helm/100 | eddy/flux-rss | 0.23 |\n"
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseRefusesAMalformedRatio(t *testing.T) {
	if _, err := parse(strings.NewReader("BenchmarkX-2 1 1 ns/op abc ratio-eddy/flux-time\n")); err == nil {
		t.Fatal("no error for a ratio that is not a number")
	}
}

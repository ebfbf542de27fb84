package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// PeakRSSMiB is the peak resident set size of process pid in MiB (VmHWM of
// /proc/<pid>/status), 0 when the process is gone or the field unreadable.
func PeakRSSMiB(pid int) float64 {
	f, err := ProcMemFields(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return f["VmHWM"]
}

// ProcMemFields reads the "Name: <n> kB" lines of a /proc file (status,
// smaps_rollup), in MiB by name.
func ProcMemFields(path string) (map[string]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		fields := strings.Fields(v)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseFloat(fields[0], 64); err == nil {
			out[k] = kb / 1024
		}
	}
	return out, s.Err()
}

// ResidentSplit is the resident memory of process pid in MiB, split into
// anonymous (heap, stacks, written data pages) and file-backed pages (the
// executable's text, read-only data and pclntab, shared with the page
// cache): /proc/<pid>/smaps_rollup, Rss minus Anonymous is file-backed.
func ResidentSplit(pid int) (anon, file float64, err error) {
	f, err := ProcMemFields(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	return f["Anonymous"], f["Rss"] - f["Anonymous"], nil
}

// Mapping is one mapping of /proc/<pid>/smaps, its sizes in MiB.
type Mapping struct {
	Range, Perms, Path   string
	Size, Rss, Anonymous float64
}

func (m Mapping) String() string {
	return fmt.Sprintf("%s %s size %.1f MiB Rss %.1f MiB Anonymous %.1f MiB", m.Range, m.Perms, m.Size, m.Rss, m.Anonymous)
}

// ExeMappings are the mappings of process pid's executable file: text,
// read-only data and pclntab are file-backed, the written data pages
// anonymous.
func ExeMappings(pid int) ([]Mapping, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
	}
	var out []Mapping
	var cur *Mapping
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			cur = nil
			if len(f) == 6 && f[5] == exe {
				out = append(out, Mapping{Range: f[0], Perms: f[1], Path: f[5]})
				cur = &out[len(out)-1]
			}
		case cur != nil && len(f) == 3 && f[2] == "kB":
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "Size:":
				cur.Size = kb / 1024
			case "Rss:":
				cur.Rss = kb / 1024
			case "Anonymous:":
				cur.Anonymous = kb / 1024
			}
		}
	}
	return out, nil
}

// ExeResidentMiB is the file-backed resident part of pid's executable
// mappings (ExeMappings' Rss minus Anonymous), in MiB.
func ExeResidentMiB(pid int) (float64, error) {
	ms, err := ExeMappings(pid)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, m := range ms {
		total += m.Rss - m.Anonymous
	}
	return total, nil
}

// ProcStatusMiB is the "kB" field of /proc/<pid>/status in MiB (pid a
// number, or "self"); tb fails when the file or the field is missing.
func ProcStatusMiB(tb testing.TB, pid, field string) float64 {
	tb.Helper()
	f, err := ProcMemFields("/proc/" + pid + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	v, ok := f[field]
	if !ok {
		tb.Fatalf("/proc/%s/status has no %s", pid, field)
	}
	return v
}

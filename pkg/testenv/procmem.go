package testenv

import (
	"os"
	"strconv"
	"strings"
)

// PeakRSSMiB is the peak resident set size of process pid in MiB (VmHWM of
// /proc/<pid>/status), 0 when the process is gone or the field unreadable.
func PeakRSSMiB(pid int) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat (proc(5):
// clock ticks, USER_HZ, which Linux fixes at 100 for user space).
const userHZ = 100

// ProcCPU is the CPU time process pid has used so far: utime+stime of
// /proc/<pid>/stat. The error names the file when it is gone or malformed.
func ProcCPU(pid int) (time.Duration, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	stat, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name start at field 3 (state).
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %q", path, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s: %q", path, s)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

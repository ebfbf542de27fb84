package testenv

import (
	"os"
	"testing"
)

func TestResidentSplitFindsThisProcessesExecutablePages(t *testing.T) {
	anon, file, err := ResidentSplit(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if anon <= 0 || file <= 0 {
		t.Fatalf("anonymous %.1f MiB, file-backed %.1f MiB: want both above 0", anon, file)
	}
	exe, err := ExeResidentMiB(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if exe <= 0 || exe > file {
		t.Fatalf("executable resident %.1f MiB: want above 0 and at most the file-backed %.1f MiB", exe, file)
	}
	if PeakRSSMiB(os.Getpid()) < anon+file-1 {
		t.Fatalf("peak RSS %.1f MiB below the resident %.1f MiB", PeakRSSMiB(os.Getpid()), anon+file)
	}
	if _, _, err := ResidentSplit(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}

func TestProcStatusMiBReadsThisProcessesPeak(t *testing.T) {
	if v := ProcStatusMiB(t, "self", "VmHWM"); v <= 0 {
		t.Errorf("VmHWM of this process %.1f MiB, want above 0", v)
	}
}

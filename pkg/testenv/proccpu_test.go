package testenv

import (
	"os"
	"testing"
)

func TestProcCPUReadsThisProcessAndRefusesAMissingOne(t *testing.T) {
	if _, err := ProcCPU(os.Getpid()); err != nil {
		t.Fatalf("this process: %v", err)
	}
	if _, err := ProcCPU(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}

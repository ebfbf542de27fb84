package localcluster

import "testing"

// TestFreePortsNeverRepeatInAProcess: one process picking its components'
// ports in many calls gets each port once, although each is released when
// picked and the kernel hands released ports out again (about 1 in 7 of
// 2,000 single picks repeated an earlier one on a 2-core CI machine).
func TestFreePortsNeverRepeatInAProcess(t *testing.T) {
	seen := map[int]int{}
	for call := range 1000 {
		ports, err := FreePorts(1 + call%3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if first, ok := seen[p]; ok {
				t.Fatalf("call %d returned port %d, which call %d returned", call, p, first)
			}
			seen[p] = call
		}
	}
}

// TestFreePortsBelowTheEphemeralRange: the ports are picked where the kernel
// gives none to binds to port 0 and outgoing connections.
func TestFreePortsBelowTheEphemeralRange(t *testing.T) {
	lo, hi := pickRange()
	if lo == 0 {
		t.Skip("no room below net.ipv4.ip_local_port_range here")
	}
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if p < lo || p > hi {
			t.Errorf("port %d outside [%d, %d]", p, lo, hi)
		}
	}
}

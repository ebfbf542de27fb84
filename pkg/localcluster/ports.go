package localcluster

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// handedOut holds every port FreePorts returned in this process. A port is
// released as soon as it is picked, and the kernel may give it again to the
// next pick: one environment, picking its components' ports in several
// calls, once gave source-controller's storage server the port it had
// already given notification-controller, and source-controller never bound.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free when
// asked (all held open together, so none repeats), that no earlier call in
// this process returned, so the components of one process never share a
// port, and, where there is room, outside the kernel's ephemeral range (see
// pickRange). Another process may still take one before it is used.
func FreePorts(n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := pickRange()
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if lo > 0 && tries < 1000 {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo+1))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken
			}
			return nil, err
		}
		ls = append(ls, l) // held, so the next Listen gets another port
		if port := l.Addr().(*net.TCPAddr).Port; !handedOut.ports[port] {
			ports = append(ports, port)
		}
	}
	for _, p := range ports {
		handedOut.ports[p] = true
	}
	return ports, nil
}

// pickLow is the lowest port FreePorts picks, above the well-known and
// registered ports services commonly use.
const pickLow = 10000

// pickRange returns the ports FreePorts picks from: those between pickLow
// and the kernel's ephemeral range (net.ipv4.ip_local_port_range), from
// which the kernel gives a port to every bind to port 0 (any test's HTTP
// server) and every outgoing connection. A port picked there and released
// could be taken by any of them before its component binds it; below it,
// only other pickers like this one compete. 0, 0 when there is no room.
func pickRange() (lo, hi int) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first-1-pickLow < 1000 {
		return 0, 0
	}
	return pickLow, first - 1
}

// PortFree reports whether TCP port on 127.0.0.1 can be listened on now.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

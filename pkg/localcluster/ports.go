package localcluster

import (
	"net"
	"strconv"
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
// asked (all held open together, so none repeats) and that no earlier call in
// this process returned, so the components of one process never share a
// port. Another process may still take one before it is used.
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
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
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

// PortFree reports whether TCP port on 127.0.0.1 can be listened on now.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

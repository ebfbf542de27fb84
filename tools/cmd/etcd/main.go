// Command etcd is the upstream etcd server, built from go.etcd.io/etcd/server/v3
// at the version k8s.io/kubernetes pins, so the local cluster needs no prebuilt binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }

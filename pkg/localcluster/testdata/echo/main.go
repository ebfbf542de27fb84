// Command echo is the node profile tests' application: with -listen it
// serves its hostname over HTTP; with -get it fetches a URL (retrying for
// a while) and exits 0 when the answer is 200.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "", "address to serve on")
	get := flag.String("get", "", "URL to fetch")
	flag.Parse()
	if *listen != "" {
		host, _ := os.Hostname()
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, host) })
		fmt.Fprintln(os.Stderr, http.ListenAndServe(*listen, nil))
		os.Exit(1)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := client.Get(*get)
		if err != nil {
			last = err
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			fmt.Printf("%s", body)
			return
		}
		last = fmt.Errorf("status %s", resp.Status)
	}
	fmt.Fprintln(os.Stderr, last)
	os.Exit(1)
}

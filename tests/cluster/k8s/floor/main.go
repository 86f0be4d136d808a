// floor replays a kubectl-coord request trace (written when KUBECTL_COORD_TRACE names
// a file) as fast as a plain client can: the same GETs with the same Accept headers,
// `workers` at a time, each body read to the end and not decoded. Its wall time is
// the floor that a command's time is compared with in the benchmarks.
//
//	floor -kubeconfig F -trace FILE [-workers 8]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	trace := flag.String("trace", "", "request trace written by kubectl-coord")
	workers := flag.Int("workers", 8, "requests in flight at once")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	check(err)
	client, err := rest.HTTPClientFor(config)
	check(err)
	f, err := os.Open(*trace)
	check(err)
	var requests [][2]string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		parts := strings.SplitN(scanner.Text(), "\t", 3)
		if len(parts) == 3 && parts[0] == "GET" {
			requests = append(requests, [2]string{parts[1], parts[2]})
		}
	}
	var next, bytes, failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(requests) {
					return
				}
				req, err := http.NewRequest(http.MethodGet, strings.TrimRight(config.Host, "/")+requests[i][1], nil)
				check(err)
				req.Header.Set("Accept", requests[i][0])
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				bytes.Add(n)
				if resp.StatusCode/100 != 2 {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%d requests, %d bytes, %d failed\n", len(requests), bytes.Load(), failed.Load())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

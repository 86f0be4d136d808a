// floor replays a kubectl-coord request trace (written when KUBECTL_COORD_TRACE names
// a file) as fast as a plain client can: the same GETs with the same Accept headers,
// each body read to the end and not decoded. Its wall time is the floor that a
// command's time is compared with in the benchmarks.
//
// The pages of one paginated list form a chain: a client learns each continue token
// from the page before, so a chain is replayed in order by one worker. Chains (and
// single requests) run `workers` at a time. Replaying the pages of one list side by
// side, which no client can do, would make the floor unreachable.
//
//	floor -kubeconfig F -trace FILE [-workers 8]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	var chains [][][2]string
	chainOf := map[string]int{}
	requests := 0
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		// method, Accept, path, then protocol and bytes, which the replay does not need.
		parts := strings.Split(scanner.Text(), "\t")
		if len(parts) < 3 || parts[0] != "GET" {
			continue
		}
		requests++
		request := [2]string{parts[1], parts[2]}
		key, continued := listKey(parts[2])
		if i, ok := chainOf[key]; ok && continued {
			chains[i] = append(chains[i], request)
			continue
		}
		chainOf[key] = len(chains)
		chains = append(chains, [][2]string{request})
	}
	var next, bytes, failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(chains) {
					return
				}
				for _, r := range chains[i] {
					req, err := http.NewRequest(http.MethodGet, strings.TrimRight(config.Host, "/")+r[1], nil)
					check(err)
					req.Header.Set("Accept", r[0])
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
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%d requests in %d chains, %d bytes, %d failed\n", requests, len(chains), bytes.Load(), failed.Load())
}

// listKey names the list a request reads (its path and query without the continue
// token), and says whether the request continues that list.
func listKey(path string) (string, bool) {
	u, err := url.Parse(path)
	check(err)
	q := u.Query()
	continued := q.Has("continue")
	q.Del("continue")
	return u.Path + "?" + q.Encode(), continued
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

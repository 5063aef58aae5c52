//go:build ignore

// otlp: an OTLP/HTTP trace receiver that prints, per trace, each span's
// name and duration, and sums them by name at exit (SIGINT).
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func main() {
	var mu sync.Mutex
	durs := map[string][]float64{}
	http.HandleFunc("/v1/traces", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					durs[s.Name] = append(durs[s.Name], float64(s.EndTimeUnixNano-s.StartTimeUnixNano)/1e6)
				}
			}
		}
		mu.Unlock()
		w.Write(nil)
	})
	go http.ListenAndServe("127.0.0.1:4318", nil)
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	<-c
	mu.Lock()
	var names []string
	for n := range durs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		xs := durs[n]
		sort.Float64s(xs)
		fmt.Printf("%-40s n=%3d median %8.3f ms\n", n, len(xs), xs[len(xs)/2])
	}
}

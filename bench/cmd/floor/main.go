// Command floor is the cold-start floor of `bench coldstart`: the least a Go
// HTTP service can do, net/http answering GET /health with thumbd's body on
// PORT (default 8080). Built static (CGO_ENABLED=0), it is what exec to
// /health and idle RSS cost before thumbd adds anything of its own.
//
//	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/floor ./bench/cmd/floor
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	})
	if err := http.ListenAndServe(":"+port, mux); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

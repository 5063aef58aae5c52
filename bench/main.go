// Command bench is thumbd's bench driver. Without a subcommand it measures,
// for every target (a local binary as a process, a container image, or an
// already-running URL): startup to the first /health and to the first
// thumbnail, idle memory, throughput, latency and server CPU per request
// of every route at several concurrencies (load from github.com/rakyll/hey's
// requester), and container image sizes. It checks every target against
// the contract before timing it, and writes a versioned results JSON, a
// Markdown report and charts.
//
//	go run ./bench                 # the default suite (see -h)
//	go run ./bench -quick          # a smoke test: 1 run, 1 s steps, 10 clients
//	go run ./bench -render DIR/results.json   # redraw report and charts
//	go run ./bench help            # the subcommands: engine, coldstart, memory, overload, origin, sources, serve, lock, ...
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	var code exitCode
	switch {
	case errors.As(err, &code):
		os.Exit(int(code))
	case err != nil:
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Package probe reads a running thumbd over HTTP for the bench's
// subcommands: a GET's status and body, samples of /metrics, and
// liveness probes from a process and a CPU cgroup of their own
// (prober.go), with the floor's idle server.
package probe

import (
	"context"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Get sends a GET of u through client: the status and the whole body.
func Get(ctx context.Context, client *http.Client, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Metric reads one unlabelled sample of base's /metrics: NaN when absent
// (the twin has no such series, an older build not this one), which
// reports show as n/a.
func Metric(ctx context.Context, base, name string) (float64, error) {
	_, body, err := Get(ctx, http.DefaultClient, base+"/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return math.NaN(), nil
}

// Series reads every sample of base's /metrics, keyed by the series as
// written (name and labels); nil when /metrics does not answer 200 (the
// twin, a fake).
func Series(ctx context.Context, base string) map[string]float64 {
	status, body, err := Get(ctx, http.DefaultClient, base+"/metrics")
	if err != nil || status != http.StatusOK {
		return nil
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// Package probe reads a running thumbd over HTTP for the bench's
// subcommands: a GET's status and body, and one sample of /metrics.
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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// outcome is one client request.
type outcome struct {
	id         string
	status     int
	latency    time.Duration
	kind       string // "answer", "refused" (connection level), "error"
	err        string
	sentAt     time.Time
	complete   bool
	retryAfter time.Duration
	code       string // an error answer's code
}

type recorder struct {
	mu  sync.Mutex
	all []outcome
}

func (r *recorder) add(o outcome) { r.mu.Lock(); r.all = append(r.all, o); r.mu.Unlock() }

// loadClients runs n workers posting thumbnails until ctx is done; each
// finishes the request it has in flight.
func loadClients(ctx context.Context, base, query string, n int, srcs [][]byte, timeout time.Duration, backoff bool, rec *recorder) *sync.WaitGroup {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n, DisableCompression: true,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	client := &http.Client{Transport: tr, Timeout: timeout}
	var wg sync.WaitGroup
	var seq atomic.Int64
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				src := srcs[(w+i)%len(srcs)]
				id := fmt.Sprintf("soak-%d", seq.Add(1))
				x := postOnce(client, base+"/thumbnail?"+query, id, src)
				rec.add(x)
				if backoff && x.status == 503 {
					select {
					case <-ctx.Done():
					case <-time.After(time.Duration(rand.Int64N(int64(x.retryAfter) + 1))):
					}
				}
			}
		}(w)
	}
	return &wg
}

func postOnce(client *http.Client, url, id string, src []byte) outcome {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(src))
	req.Header.Set("X-Request-Id", id)
	req.Header.Set("Content-Type", "application/octet-stream")
	o := outcome{id: id, sentAt: time.Now()}
	resp, err := client.Do(req)
	if err != nil {
		o.latency = time.Since(o.sentAt)
		o.kind, o.err = classify(err), err.Error()
		return o
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	o.latency = time.Since(o.sentAt)
	o.status = resp.StatusCode
	if err != nil {
		o.kind, o.err = "error", "body: "+err.Error()
		return o
	}
	o.kind = "answer"
	switch {
	case resp.StatusCode == 200:
		o.complete = strconv.Itoa(len(body)) == resp.Header.Get("Content-Length") && hasMagic(body, resp.Header.Get("Content-Type"))
	case resp.StatusCode == 503:
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		o.complete = err == nil && secs >= 0 && json.Valid(body)
		o.retryAfter = time.Duration(secs) * time.Second
	default:
		var e struct{ Code string }
		o.complete = json.Unmarshal(body, &e) == nil
		o.code = e.Code
	}
	if !o.complete {
		o.kind, o.err = "error", fmt.Sprintf("incomplete %d answer (%d bytes)", resp.StatusCode, len(body))
	}
	return o
}

// hasMagic checks an image starts as its Content-Type says.
func hasMagic(b []byte, contentType string) bool {
	switch contentType {
	case "image/png":
		return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF})
	case "image/webp":
		return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
	}
	return false
}

// classify tells connection-level refusals (nothing was admitted: the
// dial was refused, or the server closed an idle keep-alive connection
// before reading the request) from lost answers.
func classify(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return "refused"
	}
	s := err.Error()
	if strings.Contains(s, "server closed idle connection") {
		return "refused"
	}
	return "error"
}

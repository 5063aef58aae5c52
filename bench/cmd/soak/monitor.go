package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thumbd/thumbd/internal/procfs"
)

// healthPoller polls /health every 100 ms with a 2 s timeout.
type healthPoller struct {
	polls, fails atomic.Int64
	maxNs        atomic.Int64
	firstFail    atomic.Value
}

func pollHealth(ctx context.Context, base string, h *healthPoller) *sync.WaitGroup {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for ctx.Err() == nil {
			start := time.Now()
			resp, err := client.Get(base + "/health")
			el := time.Since(start)
			h.polls.Add(1)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != 200 {
				h.fails.Add(1)
				h.firstFail.CompareAndSwap(nil, fmt.Sprint(err))
			}
			for {
				old := h.maxNs.Load()
				if int64(el) <= old || h.maxNs.CompareAndSwap(old, int64(el)) {
					break
				}
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}()
	return &wg
}

// rssSampler keeps the peak VmRSS and the last VmHWM of pid.
type rssSampler struct {
	peak, hwm atomic.Int64
}

func sampleRSS(ctx context.Context, pid int, s *rssSampler) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if st, err := procfs.Read(pid); err == nil {
				if st.VmRSS > s.peak.Load() {
					s.peak.Store(st.VmRSS)
				}
				s.hwm.Store(st.VmHWM)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return &wg
}

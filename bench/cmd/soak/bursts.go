package main

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// burstsMode makes libvips 8.14's worker-thread race likely
// (docs/hardening.md, scripts/threadset-race.sh): -cycles bursts of -burst
// thumbnails from -burst-clients clients, each burst starting just before
// the previous one's idle libvips workers reach their idle timeout
// (-burst-idle, 15 s in libvips 8.14, minus up to 40 ms that moves from
// cycle to cycle). It stops at the first crash or hang.
func burstsMode(o options, srcs [][]byte) (*result, error) {
	p, err := startThumbd(o, "")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	r := &result{Mode: "bursts", Malloc: "glibc", Clients: o.burstClients}
	client := &http.Client{Timeout: o.burstTimeout}
	rec := &recorder{}
	start := time.Now()
	burst := func(cycle int) map[string]int {
		jobs := make(chan int)
		var wg sync.WaitGroup
		got := map[string]int{}
		var mu sync.Mutex
		for range o.burstClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					x := postOnce(client, p.base+"/thumbnail?"+o.query, fmt.Sprintf("soak-burst-%d-%d", cycle, i), srcs[i%len(srcs)])
					rec.add(x)
					key := strconv.Itoa(x.status)
					if x.kind != "answer" {
						key = x.kind
					}
					mu.Lock()
					got[key]++
					mu.Unlock()
				}
			}()
		}
		for i := range o.burst {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		return got
	}
	burst(-1) // the first workers, whose idle timeout the cycles chase
	done := 0
	for c := 0; c < o.cycles; c++ {
		off := time.Duration((c*1700)%40000-40000) * time.Microsecond // the clients start a few ms after the sleep
		time.Sleep(o.burstIdle + off)
		got := burst(c)
		if got["200"] == o.burst && p.srv.Exited() == nil {
			done++
			continue
		}
		// A crash breaks the burst's connections before the process is
		// reaped: give it a moment to be seen gone.
		p.waitExit(2 * time.Second)
		if gone, how := p.exited(); gone {
			r.fail("CRASH in cycle %d: %s, %s", c, how, crashLine(p.logs))
		} else {
			r.fail("HANG in cycle %d: answers %s (a thumbnail never finished)", c, answers(got))
		}
		break
	}
	r.Seconds = time.Since(start).Seconds()
	r.note("%d of %d cycles, %d thumbnails each", done, o.cycles, o.burst)
	summarise(r, rec, o, p)
	return r, nil
}

// crashLine returns the first line of a Go or glibc crash report thumbd
// wrote, if any.
func crashLine(l *serverLog) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.errors {
		for _, p := range []string{"SIG", "fatal", "malloc", "free", "double"} {
			if strings.HasPrefix(line, p) {
				return line
			}
		}
	}
	return "no crash header in its log"
}

func answers(got map[string]int) string {
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%dx%s", got[k], k))
	}
	return strings.Join(parts, ",")
}

//go:build ignore

// seq: one upload at a time against two servers, interleaved round by
// round, per source and format: median latency of each, their ratio, and
// thumbd's own split (http duration sum minus processing sum, from /metrics).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func post(c *http.Client, url string, body []byte) (float64, error) {
	t := time.Now()
	resp, err := c.Post(url, "image/jpeg", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("%s: %d", url, resp.StatusCode)
	}
	return float64(time.Since(t).Microseconds()) / 1000, nil
}

// sums reads thumbd's /metrics: the /thumbnail route's duration sum and
// count, and the processing sum and count.
func sums(base string) (httpSum, httpN, procSum, procN float64) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch {
		case strings.HasPrefix(l, "thumbd_http_request_duration_seconds_sum{") && strings.Contains(l, `route="/thumbnail"`) && strings.Contains(l, `code="200"`):
			httpSum += v
		case strings.HasPrefix(l, "thumbd_http_request_duration_seconds_count{") && strings.Contains(l, `route="/thumbnail"`) && strings.Contains(l, `code="200"`):
			httpN += v
		case strings.HasPrefix(l, "thumbd_thumbnail_processing_seconds_sum"):
			procSum += v
		case strings.HasPrefix(l, "thumbd_thumbnail_processing_seconds_count"):
			procN += v
		}
	}
	return
}

func main() {
	a := flag.String("a", "http://127.0.0.1:8093", "thumbd")
	b := flag.String("b", "http://127.0.0.1:8094", "twin")
	dir := flag.String("dir", "/tmp/seq", "sources")
	rounds := flag.Int("rounds", 5, "rounds")
	n := flag.Int("n", 15, "requests per arm per round")
	flag.Parse()
	c := &http.Client{Timeout: 60 * time.Second}
	for _, src := range []string{"small", "large", "photo12"} {
		body, err := os.ReadFile(*dir + "/" + src + ".jpg")
		if err != nil {
			panic(err)
		}
		for _, format := range []string{"png", "jpeg", "webp"} {
			q := "/thumbnail?w=256&h=256&format=" + format
			lat := map[string][]float64{}
			var rs []float64
			h0, n0, p0, pn0 := sums(*a)
			for r := 0; r < *rounds; r++ {
				order := []string{*a, *b}
				if r%2 == 1 {
					order = []string{*b, *a}
				}
				var med = map[string]float64{}
				for _, base := range order {
					post(c, base+q, body) // warm the connection
					var xs []float64
					for i := 0; i < *n; i++ {
						ms, err := post(c, base+q, body)
						if err != nil {
							panic(err)
						}
						xs = append(xs, ms)
					}
					lat[base] = append(lat[base], xs...)
					med[base] = median(xs)
				}
				rs = append(rs, med[*a]/med[*b])
			}
			h1, n1, p1, pn1 := sums(*a)
			around := 0.0
			if n1 > n0 && pn1 > pn0 {
				around = ((h1-h0)/(n1-n0) - (p1-p0)/(pn1-pn0)) * 1000
			}
			fmt.Printf("%-8s %-5s thumbd %7.2f ms  twin %7.2f ms  pooled ratio %.2f  round ratios %v  thumbd outside the engine %.2f ms (engine %.2f ms)\n",
				src, format, median(lat[*a]), median(lat[*b]), median(lat[*a])/median(lat[*b]), fmtRs(rs), around, (p1-p0)/(pn1-pn0)*1000)
		}
	}
}

func fmtRs(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%.2f", r))
	}
	return strings.Join(s, " ")
}

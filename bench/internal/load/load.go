// Package load drives one timed load step with github.com/rakyll/hey's
// requester and turns its template output into figures where only 2xx
// answers (or the one status a step expects, such as a revalidation's 304)
// count as throughput.
package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/rakyll/hey/requester"
	"golang.org/x/sys/unix"

	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/internal/procfs"
)

// MaxRate bounds a step in count: at most MaxRate requests per second of
// step duration.
const MaxRate = 50_000

// Request is what every client sends, again and again.
type Request struct {
	Method      string
	URL         string
	Body        []byte
	ContentType string
	// Header is sent with every request (If-None-Match, for a
	// revalidation).
	Header map[string]string
	// Status is the answer that counts as served (a revalidation's 304);
	// 0: any 2xx. Every other answer is an error.
	Status int
}

// Step is one measured run.
type Step struct {
	Request     Request
	Concurrency int
	Duration    time.Duration
	// MaxRequests bounds the step in count as well as in time.
	MaxRequests int
	// Timeout is hey's per-request timeout; such requests count as errors.
	Timeout time.Duration
	// ServerPID, when not 0, is sampled for peak VmRSS and CPU time.
	ServerPID int
}

// Outcome holds a step's figures. Latencies are in milliseconds, over 2xx
// answers only (over Request.Status answers, when it is set).
type Outcome struct {
	Wall       float64        `json:"wall_s"`   // from start to the last answer, drain included
	Requests   int64          `json:"requests"` // answered or failed
	OK         int64          `json:"ok"`       // 2xx (Request.Status, when set)
	RPS        float64        `json:"rps"`      // OK / Wall
	P50        float64        `json:"p50_ms"`
	P50Lo      float64        `json:"p50_ci95_lo_ms,omitempty"` // the bootstrap 95% confidence interval of P50
	P50Hi      float64        `json:"p50_ci95_hi_ms,omitempty"`
	P90        float64        `json:"p90_ms"`
	P99        float64        `json:"p99_ms"`
	Max        float64        `json:"max_ms"`
	Non2xx     map[string]int `json:"non_2xx,omitempty"` // answers not counted as OK, by status code
	Errors     map[string]int `json:"errors,omitempty"`  // transport errors, by message
	ErrorCount int64          `json:"error_count"`       // non-2xx + transport errors
	BytesPerOK int64          `json:"bytes_per_response"`
	ClientCPU  float64        `json:"client_cpu"` // driver CPU-seconds per second over the timed window
	ServerCPU  float64        `json:"server_cpu"` // server CPU-seconds per second over the timed window
	// ServerCPUTime is the server's CPU time (utime+stime from
	// /proc/PID/stat, with its child processes': a cells-mode thumbd's
	// cells, live or reaped) over the whole step, the drain of the last requests
	// included, and CPUPerOK that time per 2xx answer, in µs: what a
	// request costs the server, which still tells targets apart where the
	// load generator, not the server, limits requests/s.
	ServerCPUTime float64 `json:"server_cpu_s,omitempty"`
	CPUPerOK      float64 `json:"server_cpu_us_per_ok,omitempty"`
	ServerPeakRSS int64   `json:"server_peak_rss"`
	// HostIdle, HostSteal and HostIRQ are machine-wide shares of CPU time
	// over the timed window: idle, stolen by the hypervisor, interrupts.
	HostIdle  float64 `json:"host_idle"`
	HostSteal float64 `json:"host_steal"`
	HostIRQ   float64 `json:"host_irq"` // interrupts and softirqs, charged to no process
}

// heyTemplate makes hey print its report as JSON.
const heyTemplate = `{"total_ns":{{ .Total.Nanoseconds }},"num_res":{{ .NumRes }},"size_total":{{ .SizeTotal }},` +
	`"error_dist":{{ jsonify .ErrorDist }},"lats":{{ jsonify .Lats }},"status_codes":{{ jsonify .StatusCodes }}}`

type heyReport struct {
	TotalNS     int64          `json:"total_ns"`
	NumRes      int64          `json:"num_res"`
	SizeTotal   int64          `json:"size_total"`
	ErrorDist   map[string]int `json:"error_dist"`
	Lats        []float64      `json:"lats"` // seconds, answered requests only
	StatusCodes []int          `json:"status_codes"`
}

// Run runs the step and blocks until every client has finished.
func Run(st Step) (Outcome, error) {
	if st.MaxRequests <= 0 {
		// Above anything 2 cores serve, and it keeps hey's preallocated
		// per-request arrays (8 float64 per request) small.
		st.MaxRequests = int(MaxRate * st.Duration.Seconds())
	}
	if st.Timeout <= 0 {
		st.Timeout = 30 * time.Second
	}
	req, err := http.NewRequest(st.Request.Method, st.Request.URL, nil)
	if err != nil {
		return Outcome{}, err
	}
	if st.Request.ContentType != "" {
		req.Header.Set("Content-Type", st.Request.ContentType)
	}
	for k, v := range st.Request.Header {
		req.Header.Set(k, v)
	}
	req.ContentLength = int64(len(st.Request.Body))
	var out bytes.Buffer
	w := &requester.Work{
		Request:     req,
		RequestBody: st.Request.Body,
		N:           max(st.MaxRequests, st.Concurrency),
		C:           st.Concurrency,
		Timeout:     int((st.Timeout + time.Second - 1) / time.Second),
		Output:      heyTemplate,
		Writer:      &out,
	}
	w.Init()

	var sampler *procfs.Sampler
	var srv0 time.Duration
	if st.ServerPID > 0 {
		sampler = procfs.StartSampler(st.ServerPID, 20*time.Millisecond)
		srv0, _ = procfs.TreeCPUTime(st.ServerPID)
	}
	host0, _ := procfs.ReadHostCPU()
	cli0 := selfCPU()
	t0 := time.Now()

	// At the end of the window read the CPU counters, then tell the clients
	// to stop (each finishes the request it is in); or, when the count
	// bound ended the step before the timer, as soon as it ended.
	var once sync.Once
	var cliCPU, srvCPU time.Duration
	var window time.Duration
	var host1 procfs.HostCPU
	srvSince := func() time.Duration { // the server's CPU time since the start
		if st.ServerPID > 0 {
			if s, err := procfs.TreeCPUTime(st.ServerPID); err == nil {
				return s - srv0
			}
		}
		return 0
	}
	endWindow := func() {
		window = time.Since(t0)
		cliCPU = selfCPU() - cli0
		host1, _ = procfs.ReadHostCPU()
		srvCPU = srvSince()
	}
	timer := time.AfterFunc(st.Duration, func() { once.Do(func() { endWindow(); w.Stop() }) })
	w.Run()
	timer.Stop()
	once.Do(endWindow)
	o := Outcome{ServerCPUTime: srvSince().Seconds()} // the drain included
	if sampler != nil {
		o.ServerPeakRSS, _ = sampler.Stop()
	}
	var rep heyReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return Outcome{}, fmt.Errorf("load: hey output: %w", err)
	}
	summarize(&o, rep, st.Request.Status)
	o.ClientCPU = cliCPU.Seconds() / window.Seconds()
	o.ServerCPU = srvCPU.Seconds() / window.Seconds()
	o.HostIdle, o.HostSteal, o.HostIRQ = procfs.Share(host0, host1)
	if o.OK > 0 {
		o.CPUPerOK = o.ServerCPUTime * 1e6 / float64(o.OK)
	}
	return o, nil
}

// summarize fills o from hey's report: throughput and latencies from the
// answers that count (status, or any 2xx when it is 0) only; every other
// status and every transport error is an error.
func summarize(o *Outcome, rep heyReport, status int) {
	o.Wall = float64(rep.TotalNS) / 1e9
	o.Requests = rep.NumRes
	var okLats []float64
	for i, code := range rep.StatusCodes {
		if status == 0 && code >= 200 && code < 300 || code == status {
			okLats = append(okLats, rep.Lats[i]*1000)
			continue
		}
		if o.Non2xx == nil {
			o.Non2xx = map[string]int{}
		}
		o.Non2xx[strconv.Itoa(code)]++
		o.ErrorCount++
	}
	for msg, n := range rep.ErrorDist {
		if o.Errors == nil {
			o.Errors = map[string]int{}
		}
		o.Errors[msg] += n
		o.ErrorCount += int64(n)
	}
	o.OK = int64(len(okLats))
	if o.Wall > 0 {
		o.RPS = float64(o.OK) / o.Wall
	}
	if len(okLats) > 0 {
		sort.Float64s(okLats)
		o.P50 = stats.PercentileSorted(okLats, 50)
		o.P50Lo, o.P50Hi = stats.MedianCI(okLats)
		o.P90 = stats.PercentileSorted(okLats, 90)
		o.P99 = stats.PercentileSorted(okLats, 99)
		o.Max = okLats[len(okLats)-1]
	}
	if len(rep.Lats) > 0 {
		// hey sums Content-Length over answered requests.
		o.BytesPerOK = rep.SizeTotal / int64(len(rep.Lats))
	}
}

func selfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

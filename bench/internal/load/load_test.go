package load

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

func TestSummarizeCountsOnly2xx(t *testing.T) {
	var o Outcome
	summarize(&o, heyReport{
		TotalNS:     2e9,
		NumRes:      7,
		SizeTotal:   600,
		ErrorDist:   map[string]int{"connection refused": 1},
		Lats:        []float64{0.001, 0.002, 0.003, 0.004, 0.100, 0.200},
		StatusCodes: []int{200, 200, 204, 200, 503, 404},
	}, 0)
	if o.OK != 4 || o.RPS != 2 || o.ErrorCount != 3 || o.Requests != 7 {
		t.Fatalf("%+v", o)
	}
	if o.Non2xx["503"] != 1 || o.Non2xx["404"] != 1 || o.Errors["connection refused"] != 1 {
		t.Fatalf("%+v", o)
	}
	if o.P50 != 2.5 || o.Max != 4 || o.BytesPerOK != 100 {
		t.Fatalf("latencies over 2xx only: %+v", o)
	}
	if !(o.P50Lo >= 1 && o.P50Lo <= o.P50 && o.P50 <= o.P50Hi && o.P50Hi <= 4) {
		t.Fatalf("p50 interval [%v, %v] around %v, within the 2xx latencies", o.P50Lo, o.P50Hi, o.P50)
	}
}

// A step that expects one status (a revalidation's 304) counts it, and
// only it, as served: a 200 there is an error.
func TestSummarizeCountsTheExpectedStatus(t *testing.T) {
	var o Outcome
	summarize(&o, heyReport{TotalNS: 1e9, NumRes: 3, Lats: []float64{0.001, 0.002, 0.003}, StatusCodes: []int{304, 304, 200}}, 304)
	if o.OK != 2 || o.RPS != 2 || o.ErrorCount != 1 || o.Non2xx["200"] != 1 || o.Max != 2 {
		t.Fatalf("%+v", o)
	}
}

// Headers go with every request: a revalidation load answered 304.
func TestRunSendsHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"x"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write([]byte("image"))
	}))
	defer srv.Close()
	o, err := Run(Step{Request: Request{Method: "GET", URL: srv.URL, Header: map[string]string{"If-None-Match": `"x"`}, Status: 304},
		Concurrency: 2, Duration: time.Minute, MaxRequests: 20})
	if err != nil {
		t.Fatal(err)
	}
	if o.OK != 20 || o.ErrorCount != 0 {
		t.Fatalf("%+v", o)
	}
}

func TestRunAgainstLocalServer(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if string(b) != "payload" || r.Method != "POST" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if n.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	start := time.Now()
	o, err := Run(Step{
		Request:     Request{Method: "POST", URL: srv.URL + "/x", Body: []byte("payload")},
		Concurrency: 4,
		Duration:    200 * time.Millisecond,
		MaxRequests: 100_000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("step took %v", el)
	}
	if o.OK == 0 || o.Non2xx["503"] == 0 || o.Non2xx["400"] != 0 || o.ErrorCount != int64(o.Non2xx["503"]) {
		t.Fatalf("%+v", o)
	}
	if o.ClientCPU <= 0 || o.P99 < o.P50 {
		t.Fatalf("%+v", o)
	}
}

func TestRunBoundedByCount(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	o, err := Run(Step{Request: Request{Method: "GET", URL: srv.URL}, Concurrency: 2, Duration: time.Minute, MaxRequests: 50})
	if err != nil {
		t.Fatal(err)
	}
	if o.Requests != 50 || o.OK != 50 {
		t.Fatalf("%+v", o)
	}
}

// The server's CPU time over the step, and per 2xx answer; here the
// "server" is this process (the handler runs in it), which is busy enough
// to be seen at /proc's 10 ms resolution.
func TestRunReadsServerCPUPerAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 4096)) }))
	defer srv.Close()
	o, err := Run(Step{Request: Request{Method: "GET", URL: srv.URL}, Concurrency: 4, Duration: 500 * time.Millisecond, ServerPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if o.ServerCPUTime <= 0 || o.OK == 0 || math.Abs(o.CPUPerOK-o.ServerCPUTime*1e6/float64(o.OK)) > 1e-6 || o.ServerPeakRSS <= 0 {
		t.Fatalf("%+v", o)
	}
	t.Logf("%d answers, %.0f µs of CPU each", o.OK, o.CPUPerOK)
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake docker client (COLDSTART_FAKE=docker) and
// as the fake container's server (COLDSTART_FAKE=server), so the whole loop
// runs without Docker.
func TestMain(m *testing.M) {
	switch os.Getenv("COLDSTART_FAKE") {
	case "docker":
		os.Exit(fakeDocker(os.Args[1:]))
	case "server":
		port := os.Getenv("COLDSTART_PORT") // from the fake docker
		if port == "" {
			port = os.Getenv("PORT") // run as exec:BINARY
		}
		os.Exit(fakeServer(port))
	}
	os.Exit(m.Run())
}

func TestColdStartAgainstFakeDocker(t *testing.T) {
	journal := t.TempDir() + "/journal"
	t.Setenv("COLDSTART_FAKE", "docker")
	t.Setenv("COLDSTART_JOURNAL", journal)
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"-docker", os.Args[0], "-runs", "3", "-timeout", "10s", "fake:one", "fake:two"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"fake:one", "fake:two", "first thumbnail 200", "median"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Every container started was removed.
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	var started, removed []string
	for _, line := range strings.Fields(strings.ReplaceAll(string(data), "\n", " ")) {
		if id, ok := strings.CutPrefix(line, "run:"); ok {
			started = append(started, id)
		}
		if id, ok := strings.CutPrefix(line, "rm:"); ok {
			removed = append(removed, id)
		}
	}
	if len(started) != 6 || len(removed) != 6 {
		t.Errorf("started %v, removed %v; want 6 of each", started, removed)
	}
}

func TestColdStartOfAProcess(t *testing.T) {
	t.Setenv("COLDSTART_FAKE", "server")
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"-runs", "2", "-timeout", "10s", "exec:" + os.Args[0]}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if !strings.Contains(out.String(), "exec:") || !strings.Contains(out.String(), "first thumbnail 200") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestColdStartGivesUp(t *testing.T) {
	t.Setenv("COLDSTART_FAKE", "docker")
	t.Setenv("COLDSTART_JOURNAL", t.TempDir()+"/journal")
	t.Setenv("COLDSTART_NEVER_READY", "1")
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"-docker", os.Args[0], "-runs", "1", "-timeout", "500ms", "fake:broken"}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "no thumbnail within 500ms") || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("err = %v, want a timeout that names the last 503", err)
	}
}

func TestSummarize(t *testing.T) {
	st := summarize([]float64{5, 1, 3, 2, 4})
	if st.median != 3 || st.min != 1 || st.max != 5 || math.Abs(st.stdev-math.Sqrt(2.5)) > 1e-9 {
		t.Errorf("odd: %+v", st)
	}
	if st := summarize([]float64{4, 1, 3, 2}); st.median != 2.5 {
		t.Errorf("even: median %v, want 2.5", st.median)
	}
	if st := summarize([]float64{7}); st.median != 7 || st.stdev != 0 {
		t.Errorf("one: %+v", st)
	}
}

// fakeDocker implements `run -d ... -p 127.0.0.1:PORT:8080 IMAGE` (a detached
// fake server; its pid is the container ID), `rm -f ID` and `logs`.
func fakeDocker(args []string) int {
	journal, err := os.OpenFile(os.Getenv("COLDSTART_JOURNAL"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer journal.Close()
	switch args[0] {
	case "run":
		port := ""
		for i, a := range args {
			if a == "-p" {
				port = strings.Split(args[i+1], ":")[1]
			}
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "COLDSTART_FAKE=server", "COLDSTART_PORT="+port)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintf(journal, "run:%d\n", cmd.Process.Pid)
		fmt.Println(cmd.Process.Pid)
		return 0
	case "rm":
		id := args[len(args)-1]
		var pid int
		fmt.Sscan(id, &pid)
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
		fmt.Fprintf(journal, "rm:%s\n", id)
		return 0
	case "logs":
		fmt.Println("fake container log line")
		return 0
	}
	return 2
}

// fakeServer starts listening after 30 ms, answers 503 for another 30 ms (as
// /ready does while libvips starts), then 200 with a PNG type; it exits by
// itself after 20 s in case nobody removes it.
func fakeServer(port string) int {
	time.Sleep(30 * time.Millisecond)
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		return 1
	}
	ready := time.Now().Add(30 * time.Millisecond)
	never := os.Getenv("COLDSTART_NEVER_READY") != ""
	go func() {
		time.Sleep(20 * time.Second)
		os.Exit(0)
	}()
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/thumbnail" || never || time.Now().Before(ready) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG"))
	}))
	return 0
}

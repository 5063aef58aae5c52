// Command coldstart simulates a scale from zero with Docker: for each image it
// starts a fresh, hardened container N times and measures how long it takes
// until the first POST /thumbnail answers 200, then removes the container.
//
//	coldstart [-runs 10] [-source photo.jpg] thumbd:slim thumbd:scratch exec:bin/thumbd-static
//
// Each run: `docker run -d` (read-only root filesystem, all capabilities
// dropped, no-new-privileges, user 65532, the CPU and memory limits of the
// Kubernetes manifests, the port published on 127.0.0.1 only), then POST the
// source to /thumbnail every few milliseconds until a 200 with an image.
// A target exec:BINARY runs the binary as a bare process instead, the
// process-level baseline. Reported per target: median, min, max and standard
// deviation of the time the start took to return (docker run -d: container
// created and started; exec: fork and exec), of the time to the first HTTP
// answer of any status, and of the time to the first thumbnail, all from just
// before the start.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}

type config struct {
	runs     int
	source   string
	docker   string
	timeout  time.Duration
	interval time.Duration
	cpus     string
	memory   string
	network  string
	images   []string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("coldstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.runs, "runs", 10, "cold starts per image")
	fs.StringVar(&cfg.source, "source", "", "JPEG to POST to /thumbnail (default: a generated 640x480 JPEG)")
	fs.StringVar(&cfg.docker, "docker", "docker", "docker client to run")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "give up on a run after this long")
	fs.DurationVar(&cfg.interval, "interval", 5*time.Millisecond, "pause between two attempts")
	fs.StringVar(&cfg.cpus, "cpus", "2", "docker --cpus (the manifests' CPU limit)")
	fs.StringVar(&cfg.memory, "memory", "512m", "docker --memory (the manifests' memory limit)")
	fs.StringVar(&cfg.network, "network", "bridge", "bridge (port published on 127.0.0.1) or host (PORT set, no port publishing)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: coldstart [flags] IMAGE|exec:BINARY...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.images = fs.Args()
	if len(cfg.images) == 0 || cfg.runs < 1 {
		fs.Usage()
		return errors.New("need at least one image and one run")
	}
	body, err := sourceImage(cfg.source)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cold start: from docker run -d (or exec) to the first POST /thumbnail (%d-byte JPEG) that answers 200; %d runs per target; containers get --cpus %s --memory %s, %s network\n",
		len(body), cfg.runs, cfg.cpus, cfg.memory, cfg.network)
	width := len("target")
	for _, t := range cfg.images {
		width = max(width, len(t))
	}
	fmt.Fprintf(stdout, "%-*s %-22s %9s %9s %9s %9s %s\n", width, "target", "phase", "median", "min", "max", "stdev", "(ms)")
	for _, img := range cfg.images {
		var samples []sample
		for i := range cfg.runs {
			s, err := coldStart(ctx, cfg, img, body)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", img, i+1, err)
			}
			samples = append(samples, s)
		}
		for _, phase := range []struct {
			name string
			get  func(sample) time.Duration
		}{
			{"started", func(s sample) time.Duration { return s.started }},
			{"first HTTP answer", func(s sample) time.Duration { return s.firstAnswer }},
			{"first thumbnail 200", func(s sample) time.Duration { return s.thumbnail }},
			{"  of which after start", func(s sample) time.Duration { return s.thumbnail - s.started }},
		} {
			var ms []float64
			for _, s := range samples {
				ms = append(ms, float64(phase.get(s).Microseconds())/1000)
			}
			st := summarize(ms)
			fmt.Fprintf(stdout, "%-*s %-22s %9.1f %9.1f %9.1f %9.1f\n", width, img, phase.name, st.median, st.min, st.max, st.stdev)
		}
	}
	return nil
}

// sample is one cold start, each time measured from just before the start.
type sample struct {
	started     time.Duration // docker run -d (container created and started) or fork/exec returned
	firstAnswer time.Duration // first HTTP answer, whatever its status
	thumbnail   time.Duration // first 200 from POST /thumbnail
}

// instance is one started container or process.
type instance struct {
	stop func()        // removes it
	logs func() string // its last log lines
}

// startDocker runs img detached with the manifests' hardening and limits,
// its port 8080 published on 127.0.0.1:port.
func startDocker(ctx context.Context, cfg config, img string, port int) (instance, error) {
	args := []string{"run", "-d",
		"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--user", "65532:65532", "--cpus", cfg.cpus, "--memory", cfg.memory}
	switch cfg.network {
	case "bridge":
		args = append(args, "-p", fmt.Sprintf("127.0.0.1:%d:8080", port))
	case "host":
		args = append(args, "--network", "host", "-e", fmt.Sprintf("PORT=%d", port))
	default:
		return instance{}, fmt.Errorf("-network %q: want bridge or host", cfg.network)
	}
	args = append(args, img)
	out, err := exec.CommandContext(ctx, cfg.docker, args...).Output()
	id := strings.TrimSpace(string(out))
	inst := instance{
		// A fresh context: removed even when ctx is cancelled.
		stop: func() { exec.Command(cfg.docker, "rm", "-f", id).Run() }, //nolint:errcheck
		logs: func() string {
			out, _ := exec.Command(cfg.docker, "logs", "--tail", "20", id).CombinedOutput()
			return string(out)
		},
	}
	if err != nil {
		if id != "" {
			inst.stop()
		}
		return instance{}, fmt.Errorf("docker run: %w%s", err, stderrOf(err))
	}
	return inst, nil
}

// startProcess runs the binary at path directly with PORT=port: the
// process-level baseline that the container figures compare with.
func startProcess(path string, port int) (instance, error) {
	logs := &lockedBuffer{}
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return instance{}, err
	}
	return instance{
		stop: func() { cmd.Process.Kill(); cmd.Wait() }, //nolint:errcheck
		logs: func() string { return tail(logs.String(), 20) },
	}, nil
}

// lockedBuffer collects a process's output while it may be read.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// coldStart starts target (an image, or exec:PATH for a bare process) and
// polls POST /thumbnail until it answers 200 with an image.
func coldStart(ctx context.Context, cfg config, target string, body []byte) (sample, error) {
	port, err := freePort()
	if err != nil {
		return sample{}, err
	}
	var s sample
	t0 := time.Now()
	var inst instance
	if path, ok := strings.CutPrefix(target, "exec:"); ok {
		inst, err = startProcess(path, port)
	} else {
		inst, err = startDocker(ctx, cfg, target, port)
	}
	s.started = time.Since(t0)
	if err != nil {
		return s, err
	}
	defer inst.stop()

	url := fmt.Sprintf("http://127.0.0.1:%d/thumbnail?w=256&h=256", port)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(cfg.timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		status, ctype, err := post(ctx, client, url, body)
		elapsed := time.Since(t0)
		switch {
		case err != nil:
			last = err.Error()
		case status == http.StatusOK && strings.HasPrefix(ctype, "image/"):
			if s.firstAnswer == 0 {
				s.firstAnswer = elapsed
			}
			s.thumbnail = elapsed
			return s, nil
		default:
			if s.firstAnswer == 0 {
				s.firstAnswer = elapsed
			}
			last = fmt.Sprintf("HTTP %d %s", status, ctype)
		}
		time.Sleep(cfg.interval)
	}
	return s, fmt.Errorf("no thumbnail within %s (last: %s); logs:\n%s", cfg.timeout, last, inst.logs())
}

func post(ctx context.Context, client *http.Client, url string, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "image/jpeg")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, "", err
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), nil
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before docker does; docker run then fails loudly.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(exit.Stderr))
	}
	return ""
}

// sourceImage reads the JPEG to post, or makes a 640x480 one with smooth
// gradients and some texture, so it compresses roughly like a photo.
func sourceImage(path string) ([]byte, error) {
	if path != "" {
		return os.ReadFile(path)
	}
	img := image.NewRGBA(image.Rect(0, 0, 640, 480))
	for y := range 480 {
		for x := range 640 {
			t := uint8((x*7 + y*13) % 23)
			img.Set(x, y, color.RGBA{uint8(x * 255 / 640), uint8(y * 255 / 480), uint8(128 + t), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type stats struct{ median, min, max, stdev float64 }

// summarize gives the median, extremes and sample standard deviation.
func summarize(xs []float64) stats {
	if len(xs) == 0 {
		return stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	st := stats{min: s[0], max: s[n-1], median: s[n/2]}
	if n%2 == 0 {
		st.median = (s[n/2-1] + s[n/2]) / 2
	}
	if n > 1 {
		mean := 0.0
		for _, x := range s {
			mean += x
		}
		mean /= float64(n)
		sum := 0.0
		for _, x := range s {
			sum += (x - mean) * (x - mean)
		}
		st.stdev = math.Sqrt(sum / float64(n-1))
	}
	return st
}

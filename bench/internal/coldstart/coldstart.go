// Package coldstart is `bench coldstart`: a scale from zero simulated with
// Docker. For each image it starts a fresh, hardened container N times and
// measures how long it takes until the first POST /thumbnail answers 200,
// then removes the container.
//
//	bench coldstart [-runs 10] [-source photo.jpg] thumbd:slim thumbd:scratch exec:bin/thumbd-static
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
// before the start. It holds the bench lock while it measures.
package coldstart

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/launch"
)

type config struct {
	runs     int
	source   string
	docker   string
	timeout  time.Duration
	interval time.Duration
	cpus     string
	memory   string
	network  string
	lock     string
	targets  []string
}

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("coldstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.runs, "runs", 10, "cold starts per target")
	fs.StringVar(&cfg.source, "source", "bench/results/tmp/sources/small.jpg", "JPEG to POST to /thumbnail (a known source's name is made when missing)")
	fs.StringVar(&cfg.docker, "docker", "docker", "docker client to run")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "give up on a run after this long")
	fs.DurationVar(&cfg.interval, "interval", 5*time.Millisecond, "pause between two attempts")
	fs.StringVar(&cfg.cpus, "cpus", "2", "docker --cpus (the manifests' CPU limit)")
	fs.StringVar(&cfg.memory, "memory", "1280m", "docker --memory (the manifests' memory limit)")
	fs.StringVar(&cfg.network, "network", "bridge", "bridge (port published on 127.0.0.1) or host")
	benchlock.Flag(fs, &cfg.lock)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench coldstart [flags] IMAGE|exec:BINARY...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.targets = fs.Args()
	if len(cfg.targets) == 0 || cfg.runs < 1 {
		fs.Usage()
		return errors.New("need at least one target and one run")
	}
	body, err := sources.Read(cfg.source)
	if err != nil {
		return err
	}
	release, err := benchlock.Hold(ctx, cfg.lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	fmt.Fprintf(stdout, "cold start: from docker run -d (or exec) to the first POST /thumbnail (%d-byte JPEG) that answers 200; %d runs per target; containers get --cpus %s --memory %s, %s network\n",
		len(body), cfg.runs, cfg.cpus, cfg.memory, cfg.network)
	width := len("target")
	for _, t := range cfg.targets {
		width = max(width, len(t))
	}
	fmt.Fprintf(stdout, "%-*s %-22s %9s %9s %9s %9s %s\n", width, "target", "phase", "median", "min", "max", "stdev", "(ms)")
	for _, target := range cfg.targets {
		var samples []sample
		for i := range cfg.runs {
			s, err := coldStart(ctx, cfg, target, body)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", target, i+1, err)
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
			st := stats.Summarize(ms)
			fmt.Fprintf(stdout, "%-*s %-22s %9.1f %9.1f %9.1f %9.1f\n", width, target, phase.name, st.Median, st.Min, st.Max, st.Stdev)
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

// spec is how a target starts: exec:PATH as a bare process, anything else
// as a hardened container with the manifests' limits.
func spec(cfg config, name string, log *launch.Log) launch.Spec {
	if path, ok := strings.CutPrefix(name, "exec:"); ok {
		return launch.Spec{Command: []string{path}, Stdout: log, Stderr: log}
	}
	return launch.Spec{Image: name, Docker: cfg.docker, Network: cfg.network, DockerArgs: target.Hardened(cfg.cpus, cfg.memory)}
}

// coldStart starts target and polls POST /thumbnail until it answers 200
// with an image.
func coldStart(ctx context.Context, cfg config, target string, body []byte) (sample, error) {
	log := &launch.Log{}
	srv, err := launch.Start(ctx, spec(cfg, target, log))
	if err != nil {
		return sample{}, err
	}
	defer srv.Stop(5 * time.Second)
	var s sample
	at, err := srv.Started(ctx)
	if err != nil {
		return s, err
	}
	s.started = at.Sub(srv.Spawned)
	logs := func() string {
		if srv.Cmd != nil {
			return tail(log.String(), 20)
		}
		return srv.Logs()
	}

	url := srv.URL() + "/thumbnail?w=256&h=256"
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(cfg.timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		if err := srv.Exited(); err != nil {
			return s, fmt.Errorf("%w; logs:\n%s", err, logs())
		}
		status, ctype, err := post(ctx, client, url, body)
		elapsed := time.Since(srv.Spawned)
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
	return s, fmt.Errorf("no thumbnail within %s (last: %s); logs:\n%s", cfg.timeout, last, logs())
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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

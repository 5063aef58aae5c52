package main

import (
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestConfigDefaults(t *testing.T) {
	c := testConfig(t)
	if c.Port != 8080 || c.MaxBodyBytes != 20<<20 || c.MaxPixels != 40_000_000 || c.MaxFrames != 256 || c.MaxSide != 4096 ||
		c.Concurrency != runtime.GOMAXPROCS(0) || c.Queue != 32 || c.Deadline != 10*time.Second || c.SourceDir != "" ||
		c.ShutdownDelay != 0 || c.ShutdownTimeout != 30*time.Second || c.LogLevel.String() != "INFO" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestConfigEnvAndFlags(t *testing.T) {
	env := envOf(map[string]string{"PORT": "9000", "THUMBD_QUEUE": "5", "THUMBD_DEADLINE": "2s", "THUMBD_LOG_LEVEL": "debug", "THUMBD_CONCURRENCY": "3"})
	c, err := loadConfig([]string{"-queue", "7", "-shutdown-delay", "5s"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 9000 || c.Queue != 7 || c.Deadline != 2*time.Second || c.ShutdownDelay != 5*time.Second || c.Concurrency != 3 || c.LogLevel.String() != "DEBUG" {
		t.Fatalf("got %+v", c)
	}
}

func TestConfigErrorsAreAllReported(t *testing.T) {
	env := envOf(map[string]string{"PORT": "eighty", "THUMBD_DEADLINE": "soon", "THUMBD_LOG_LEVEL": "loud", "THUMBD_CONCURRENCY": "0", "THUMBD_WRITE_TIMEOUT": "1s"})
	_, err := loadConfig(nil, env, io.Discard)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"PORT", "THUMBD_DEADLINE", "log level", "concurrency", "write timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := loadConfig([]string{"-no-such-flag"}, envOf(nil), io.Discard); err == nil {
		t.Error("unknown flag accepted")
	}
	if _, err := loadConfig([]string{"extra"}, envOf(nil), io.Discard); err == nil {
		t.Error("stray argument accepted")
	}
}

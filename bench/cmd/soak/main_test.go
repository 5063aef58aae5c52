package main

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{dial, "refused"},
		{errors.New(`Post "http://x": http: server closed idle connection`), "refused"},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, "error"},
		{errors.New("unexpected EOF"), "error"},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

func TestServerLogKeepsThumbnailAnswersAndPanics(t *testing.T) {
	l := &serverLog{answered: map[string]int{}, durMax: map[int]float64{}}
	l.add([]byte(`{"level":"DEBUG","msg":"request","request_id":"soak-1","path":"/thumbnail","status":200,"duration_ms":12.5}`))
	l.add([]byte(`{"level":"DEBUG","msg":"request","request_id":"h","path":"/health","status":200,"duration_ms":1}`))
	l.add([]byte(`{"level":"WARN","msg":"http: panic serving 127.0.0.1:1: boom"}`))
	if l.answered["soak-1"] != 200 || len(l.answered) != 1 || l.durMax[200] != 12.5 {
		t.Fatalf("%+v", l)
	}
	if len(l.errors) != 1 {
		t.Fatalf("errors %q", l.errors)
	}
}

func TestHasMagic(t *testing.T) {
	if !hasMagic([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "), "image/webp") || hasMagic([]byte("RIFF"), "image/webp") ||
		!hasMagic([]byte("\x89PNG\r\n\x1a\n"), "image/png") || !hasMagic([]byte{0xFF, 0xD8, 0xFF, 0xE0}, "image/jpeg") ||
		hasMagic([]byte("\x89PNG\r\n\x1a\n"), "image/jpeg") {
		t.Fatal("magic")
	}
}

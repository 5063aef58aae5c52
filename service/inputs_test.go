package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// inputSources are one small file of each input format beyond JPEG, PNG,
// WebP and GIF, made with Debian's encoders from one picture (the engine
// tests, service/internal/thumb, check each kind's pixels; these check
// the whole service).
func inputSources(t *testing.T) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.jpg"), encodeJPEG(t, scene(320, 240), 90), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := [][]string{
		{"vips", "copy", "in.jpg", "in.png"},
		{"vips", "tiffsave", "in.jpg", "out.tif", "--compression", "lzw"},
		{"heif-enc", "-q", "60", "in.png", "-o", "out.heic"},
		{"heif-enc", "-A", "-q", "60", "-p", "speed=9", "in.png", "-o", "out.avif"},
		{"cjxl", "in.png", "out.jxl", "-d", "1", "--quiet"},
		{"convert", "in.png", "BMP3:out.bmp"},
		{"convert", "in.png", "-resize", "64x48", "out.ico"},
		// Videos (issue 47): a second of testsrc2 in each codec and
		// container; the MOV turned by its display matrix, as an iPhone's.
		video("out.mp4", "-c:v", "libx264", "-g", "10"),
		video("unturned.mov", "-c:v", "libx265", "-tag:v", "hvc1", "-x265-params", "log-level=error:keyint=10"),
		{"ffmpeg", "-v", "error", "-y", "-i", "unturned.mov", "-c", "copy", "-metadata:s:v:0", "rotate=90", "out.mov"},
		video("out.webm", "-c:v", "libvpx-vp9", "-b:v", "200k", "-g", "10", "-deadline", "realtime", "-cpu-used", "8"),
		video("out.vp8.webm", "-c:v", "libvpx", "-b:v", "200k", "-g", "10"),
		video("out.mkv", "-c:v", "libaom-av1", "-b:v", "200k", "-g", "10", "-cpu-used", "8"),
	}
	for _, s := range steps {
		if _, err := exec.LookPath(s[0]); err != nil {
			t.Fatalf("%s: %v (scripts/deps.sh dev installs it)", s[0], err)
		}
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", s, err, out)
		}
	}
	out := map[string][]byte{}
	for _, name := range []string{"tif", "heic", "avif", "jxl", "bmp", "ico", "mp4", "mov", "webm", "vp8.webm", "mkv"} {
		b, err := os.ReadFile(filepath.Join(dir, "out."+name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// video is the ffmpeg command that writes a second of testsrc2 (160x120,
// 25 frames a second) with the encoder's args to name.
func video(name string, args ...string) []string {
	cmd := []string{"ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=1", "-pix_fmt", "yuv420p"}
	return append(append(cmd, args...), name)
}

// TestCellsReadEveryInputFormat: each new format's decoder (libheif with
// dav1d and FFmpeg's HEVC, libtiff, libjxl, the Go BMP/ICO decoder, and
// FFmpeg's video decoders fed by the Go container reader) runs inside
// a sandboxed cell, seccomp and Landlock on, and answers exactly what the
// in-process engine answers; its broken files are 4xx there too, and no
// cell is killed (a decoder's thread or system call outside the filter
// would kill the cell: a 500 engine_crashed).
func TestCellsReadEveryInputFormat(t *testing.T) {
	videoNames := map[string]bool{"mp4": true, "mov": true, "webm": true, "vp8.webm": true, "mkv": true}
	inproc, _ := newTestServer(t, testConfig(t))
	cells := newCellsServer(t, cellsConfig(t), "")
	sources := inputSources(t)
	for name, src := range sources {
		for _, q := range []string{"?w=64&h=64", "?w=80&format=avif", "?w=40&h=30&fit=contain&format=webp", "?w=48&t=0.5", "?w=48&t=50%25&keyframe=true", "?w=48&frames=3"} {
			s1, h1, b1 := postThumb(t, inproc.URL, q, src)
			s2, h2, b2 := postThumb(t, cells.URL, q, src)
			if s1 != 200 || s2 != 200 || h1.Get("Content-Type") != h2.Get("Content-Type") || !bytes.Equal(b1, b2) {
				t.Errorf("%s%s: in process %d %s (%d bytes), cells %d %s (%d bytes): %.200s", name, q, s1, h1.Get("Content-Type"), len(b1), s2, h2.Get("Content-Type"), len(b2), b2)
			}
			// A video's preview is an animated WebP of 3 frames (one
			// ANMF chunk a frame); an image's is itself, one frame.
			if _, isVideo := videoNames[name]; strings.Contains(q, "frames=3") && isVideo && bytes.Count(b2, []byte("ANMF")) != 3 {
				t.Errorf("%s%s: %d WebP frames, want 3", name, q, bytes.Count(b2, []byte("ANMF")))
			}
		}
	}
	for name, src := range hostile.Malformed() {
		for _, url := range []string{inproc.URL, cells.URL} {
			s, _, b := postThumb(t, url, "?w=64", src)
			var e errorBody
			if json.Unmarshal(b, &e) != nil || s < 400 || s >= 500 || e.Code == string(apierr.EngineCrashed) {
				t.Errorf("malformed %s at %s: %d %s, want a 4xx", name, url, s, b)
			}
		}
	}
	// Each video cut short, and with bits flipped past its header: a
	// poster (the frames it still holds) or a 4xx, the same in both modes,
	// never a 5xx or a killed cell.
	for name := range videoNames {
		src := sources[name]
		damaged := hostile.Truncations(src)
		for i, b := range hostile.BitFlips(src, uint64(len(name)), 3, 8) {
			damaged[fmt.Sprintf("flipped-%d", i)] = b
		}
		for how, b := range damaged {
			for _, q := range []string{"?w=48", "?w=48&t=0.9", "?w=48&frames=3"} {
				s1, _, b1 := postThumb(t, inproc.URL, q, b)
				s2, _, b2 := postThumb(t, cells.URL, q, b)
				if s1 >= 500 || s2 >= 500 || s1 != s2 || s1 == 200 && !bytes.Equal(b1, b2) {
					t.Errorf("%s %s%s: in process %d %.120s, cells %d %.120s", name, how, q, s1, b1, s2, b2)
				}
			}
		}
	}
}

// TestInputsSettingRefusesFormats: THUMBD_INPUTS leaves formats out, in
// both engine modes: a 415 that names the format and the setting.
func TestInputsSettingRefusesFormats(t *testing.T) {
	srcs := inputSources(t)
	for _, mode := range []string{"inprocess", "cells"} {
		var url string
		if mode == "cells" {
			cfg := cellsConfig(t)
			cfg.Inputs = []imagefmt.Format{imagefmt.JPEG, imagefmt.PNG, imagefmt.TIFF}
			url = newCellsServer(t, cfg, "").URL
		} else {
			cfg := testConfig(t)
			cfg.Inputs = []imagefmt.Format{imagefmt.JPEG, imagefmt.PNG, imagefmt.TIFF}
			srv, _ := newTestServer(t, cfg)
			url = srv.URL
		}
		if s, _, b := postThumb(t, url, "?w=32", srcs["tif"]); s != 200 {
			t.Errorf("%s: TIFF kept: %d %s", mode, s, b)
		}
		s, _, b := postThumb(t, url, "?w=32", srcs["heic"])
		var e errorBody
		if json.Unmarshal(b, &e) != nil || s != 415 || e.Code != string(apierr.UnsupportedFormat) ||
			!bytes.Contains(b, []byte("HEIC")) || !bytes.Contains(b, []byte("THUMBD_INPUTS")) {
			t.Errorf("%s: HEIC left out: %d %s, want a 415 naming HEIC and THUMBD_INPUTS", mode, s, b)
		}
		// A video is refused by its codec's name.
		s, _, b = postThumb(t, url, "?w=32", srcs["mp4"])
		if json.Unmarshal(b, &e) != nil || s != 415 || e.Code != string(apierr.UnsupportedFormat) ||
			!bytes.Contains(b, []byte("coded in H.264")) || !bytes.Contains(b, []byte("THUMBD_INPUTS")) {
			t.Errorf("%s: H.264 left out: %d %s, want a 415 naming H.264 and THUMBD_INPUTS", mode, s, b)
		}
	}
}

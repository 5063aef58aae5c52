package imagecheck

import (
	"bytes"
	"compress/gzip"
	"context"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/bench/internal/memory"
	"github.com/thumbd/thumbd/bench/internal/originload"
	"github.com/thumbd/thumbd/bench/internal/peer"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/internal/imagediff"
	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/procfs"
)

// flavours are the images and the docker run flags each is smoke-tested
// with: the scratch image read-only, without capabilities or new
// privileges, as a non-root user.
var flavours = []struct {
	name       string
	dockerArgs []string
}{
	{"slim", nil},
	{"scratch", []string{"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "65532:65532"}},
}

// sourceDir holds the bench's sources the tests send: small, the 12 MP
// photo and the 7000x5000 flat PNG.
func sourceDir(t *testing.T) (dir string, paths map[string]string) {
	t.Helper()
	if os.Getenv("THUMBD_TEST_IMAGES") != "1" {
		t.Skip("needs dockerd and the thumbd:slim and thumbd:scratch images: scripts/test-images.sh runs it (THUMBD_TEST_IMAGES=1)")
	}
	dir = t.TempDir()
	names := []string{"small", "photo12", "flat7000"}
	ps, err := sources.Ensure(dir, names...)
	if err != nil {
		t.Fatal(err)
	}
	paths = map[string]string{}
	for i, n := range names {
		paths[n] = ps[i]
	}
	return dir, paths
}

// TestImages smoke-tests a container of each image on a loopback port:
// /health, a real thumbnail (decoded, its size checked, the same picture
// in both images), /metrics, a bad body answered with a 4xx, `thumbd
// health` inside, a non-root user, the CA certificates for https origins,
// the licence notices, MALLOC_ARENA_MAX=2 and GLIBC_TUNABLES; then GET /thumbnail?url=
// from a loopback origin (bench origin: the same thumbnail as the POST).
func TestImages(t *testing.T) {
	dir, paths := sourceDir(t)
	small, err := os.ReadFile(paths["small"])
	if err != nil {
		t.Fatal(err)
	}
	thumbs := map[string]image.Image{}
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) { thumbs[f.name] = smoke(t, f.name, f.dockerArgs, small) })
	}
	if a, b := thumbs["slim"], thumbs["scratch"]; a != nil && b != nil {
		// The same libvips build, shared and static: the same picture.
		if d := imagediff.MeanAbs(a, b); d > 2.5 {
			t.Errorf("slim and scratch thumbnails differ by %.2f levels on average", d)
		} else {
			t.Logf("ok   slim and scratch thumbnails: mean difference %.2f levels", d)
		}
	}
	for _, f := range flavours {
		t.Run(f.name+"/origin", func(t *testing.T) {
			var md, log bytes.Buffer
			err := originload.Run(context.Background(), []string{"-image", "thumbd:" + f.name, "-lock", "", "-sources", "small", "-source-dir", dir,
				"-rounds", "1", "-duration", "1s", "-warmup", "0", "-clients", "2", "-server-cpus", "", "-client-cpus", ""}, &md, &log)
			if err != nil {
				t.Fatalf("GET /thumbnail?url=: %v\n%s", err, tail(log.String(), 3))
			}
			row := regexp.MustCompile(`(?m)^\| small.*$`).FindString(md.String())
			t.Logf("ok   %s: GET /thumbnail?url= from a loopback origin: %s", f.name, row)
		})
	}
}

// TestScratchUnder256MiB: thumbd:scratch with no setting under a 256 MiB
// memory limit, 500 clients for 7 s with the 12 MP photo, then 7 s with a
// 7000x5000 PNG (114 KB of 105 MB of pixels): no OOM kill, never 3 failed
// liveness probes in a row (every 250 ms, 1 s timeout), every request
// answered, thumbnails of both (issue 19; bench memory -check). The probes
// ask the admin port, as the manifests' do (issue 40; -admin).
// THUMBD_MERGE=false: the clients post the same bytes, which would
// otherwise share one job; the check wants as many jobs as places.
func TestScratchUnder256MiB(t *testing.T) {
	_, paths := sourceDir(t)
	var out, log bytes.Buffer
	err := memory.Run(context.Background(), []string{"-lock", "", "-image", "thumbd:scratch", "-env", "THUMBD_MERGE=false", "-memory", "256m", "-clients", "500", "-duration", "7s",
		"-source", paths["photo12"] + "," + paths["flat7000"], "-admin", "-check"}, &out, &log)
	if err != nil {
		t.Fatalf("scratch at 256 MiB, 500 clients: %v: %s %s", err, out.String(), tail(log.String(), 5))
	}
	t.Logf("ok   scratch at 256 MiB, 500 clients: %s", strings.ReplaceAll(strings.TrimSpace(out.String()), "\n", " "))
}

// smoke runs the checks on a container of thumbd:flavour and returns its
// thumbnail of small.
func smoke(t *testing.T, flavour string, dockerArgs []string, small []byte) image.Image {
	ctx := context.Background()
	srv, err := launch.Start(ctx, launch.Spec{Image: "thumbd:" + flavour, Network: "bridge", DockerArgs: dockerArgs})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if running, err := srv.Inspect(ctx, "{{.State.Running}}"); err != nil || running != "true" {
			t.Errorf("the container stopped before the end of the checks (%v); its log:\n%s", err, srv.Logs())
		}
		if err := srv.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	if err := srv.WaitReady(ctx, 30*time.Second); err != nil {
		t.Fatalf("%v; its log:\n%s", err, srv.Logs())
	}
	ok := func(format string, args ...any) { t.Logf("ok   "+flavour+": "+format, args...) }

	if status, body := do(t, "GET", srv.URL()+"/health", nil); status != 200 || !strings.Contains(body, `"ok"`) {
		t.Errorf("/health answered %d %s", status, body)
	} else {
		ok("/health 200")
	}

	var thumb image.Image
	status, body := do(t, "POST", srv.URL()+"/thumbnail?w=200&h=150&fit=cover&format=png", small)
	if img, err := png.Decode(strings.NewReader(body)); status != 200 || err != nil || img.Bounds().Size() != image.Pt(200, 150) {
		t.Errorf("POST /thumbnail answered %d (%v)", status, err)
	} else {
		thumb = img
		ok("POST /thumbnail 200, decodes to a 200x150 PNG (%d bytes)", len(body))
	}

	if status, body := do(t, "POST", srv.URL()+"/thumbnail", []byte("this is not an image")); status/100 != 4 || !strings.Contains(body, `"code"`) {
		t.Errorf("a bad body answered %d %s", status, body)
	} else {
		ok("bad body answered %d %s", status, body)
	}

	if status, body := do(t, "GET", srv.URL()+"/metrics", nil); status != 200 || !strings.Contains(body, "\n# TYPE ") {
		t.Errorf("/metrics answered %d", status)
	} else {
		ok("/metrics 200, %d metric families", strings.Count(body, "# TYPE "))
	}

	entry := docker(t, "inspect", "-f", "{{index .Config.Entrypoint 0}}", "thumbd:"+flavour)
	if out, err := exec.Command("docker", "exec", srv.Container, entry, "health").CombinedOutput(); err != nil {
		t.Errorf("'%s health' in the container: %v %s", entry, err, out)
	} else {
		ok("'%s health' exits 0 in the container", entry)
	}

	user, _ := srv.Inspect(ctx, "{{.Config.User}}")
	if uid, _, _ := strings.Cut(user, ":"); user == "" || uid == "0" || uid == "root" {
		t.Errorf("runs as root (user %q)", user)
	} else {
		ok("runs as user %s", user)
	}

	// The CA set https origins are verified against (GET /thumbnail?url=).
	copied := t.TempDir()
	docker(t, "cp", srv.Container+":/etc/ssl/certs/ca-certificates.crt", filepath.Join(copied, "ca.crt"))
	ca, _ := os.ReadFile(filepath.Join(copied, "ca.crt"))
	if n := bytes.Count(ca, []byte("BEGIN CERTIFICATE")); n <= 100 {
		t.Errorf("%d CA certificates for https origins", n)
	} else {
		ok("%d CA certificates in /etc/ssl/certs/ca-certificates.crt", n)
	}

	// The licence notices (THIRD_PARTY_NOTICES.md): the summary, libvips'
	// LGPL text (gzip'ed in the scratch image) and a Debian copyright file.
	docs := filepath.Join(copied, "doc")
	docker(t, "cp", srv.Container+":/usr/share/doc/thumbd", docs)
	summary, _ := os.ReadFile(filepath.Join(docs, "THIRD_PARTY_NOTICES.md"))
	if !bytes.HasPrefix(summary, []byte("# Third-party notices")) && !bytes.Contains(summary, []byte("\n# Third-party notices")) ||
		!strings.Contains(notice(docs, "built-from-source/vips/LICENSE"), "LESSER GENERAL PUBLIC") ||
		!strings.Contains(notice(docs, "debian/libc6.copyright"), "GNU C Library") {
		t.Error("licence notices missing or unreadable in /usr/share/doc/thumbd")
	} else {
		ok("licence notices in /usr/share/doc/thumbd")
	}

	// The allocator the images pick (docs/hardening.md), as the process sees it.
	pid, err := srv.PID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// glibc writes a NUL over each colon of GLIBC_TUNABLES' original
	// string as it parses it (the process itself reads an intact copy), so
	// /proc/PID/environ shows the value cut at its colons: joined again
	// with them it must hold the whole value.
	env, err := procfs.Environ(pid)
	joined := ":" + strings.Join(env, ":") + ":"
	for _, want := range []string{"MALLOC_ARENA_MAX=2", "GLIBC_TUNABLES=" + peer.ImageTunables} {
		if err != nil || !strings.Contains(joined, ":"+want+":") {
			t.Errorf("%s not in the process environment (%v)", want, err)
		} else {
			ok("runs with " + want)
		}
	}
	return thumb
}

// do sends one request and returns the status and the body.
func do(t *testing.T, method, url string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// docker runs the docker client and returns its output; a failure fails
// the test.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// notice is the text of notice file under root, from file or its gzip'ed
// file.gz, following a "Same text as OTHER." pointer (scripts/notices.sh).
func notice(root, file string) string {
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		f, err := os.Open(filepath.Join(root, file+".gz"))
		if err != nil {
			return ""
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return ""
		}
		if b, err = io.ReadAll(z); err != nil {
			return ""
		}
	}
	if m := regexp.MustCompile(`^Same text as (.*)\.\s*$`).FindSubmatch(b); m != nil {
		return notice(root, string(m[1]))
	}
	return string(b)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

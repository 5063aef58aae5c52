// Package images measures container images: the size Docker reports and
// the gzip'ed size of `docker save` (what a registry pull roughly moves).
package images

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// Docker returns the daemon's version, or an error saying why Docker is
// not usable here.
func Docker(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker: %s", firstLine(string(out), err))
	}
	return strings.TrimSpace(string(out)), nil
}

// Exists reports whether the image is present locally.
func Exists(ctx context.Context, image string) bool {
	return exec.CommandContext(ctx, "docker", "image", "inspect", image).Run() == nil
}

// ID is the image ID a tag names now.
func ID(ctx context.Context, image string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "-f", "{{.Id}}", image).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker image inspect %s: %s", image, firstLine(string(out), err))
	}
	return strings.TrimSpace(string(out)), nil
}

// Size is an image's uncompressed size as `docker image inspect` reports it.
func Size(ctx context.Context, image string) (int64, error) {
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "-f", "{{.Size}}", image).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("docker image inspect %s: %s", image, firstLine(string(out), err))
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

// SavedGzipSize streams `docker save IMAGE` through gzip (default level)
// and returns the compressed byte count; nothing is written to disk.
func SavedGzipSize(ctx context.Context, image string) (int64, error) {
	cmd := exec.CommandContext(ctx, "docker", "save", image)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var cw countWriter
	zw := gzip.NewWriter(&cw)
	_, copyErr := io.Copy(zw, stdout)
	closeErr := zw.Close()
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("docker save %s: %w", image, err)
	}
	if copyErr != nil {
		return 0, copyErr
	}
	return cw.n, closeErr
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func firstLine(out string, err error) string {
	out = strings.TrimSpace(out)
	if out == "" {
		return err.Error()
	}
	line, _, _ := strings.Cut(out, "\n")
	return line
}

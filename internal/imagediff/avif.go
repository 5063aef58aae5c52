package imagediff

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// VipsToPNG decodes an image Go cannot, such as an AVIF (every thumbd build
// writes AVIF but none reads it), with the vips command of Debian's
// libvips-tools, whose libheif has an AV1 decoder, in a process of its own:
// a test's hardened libvips refuses the HEIF loader. vips finds the loader
// from the bytes. The result is a lossless PNG.
func VipsToPNG(avif []byte) ([]byte, error) {
	vips, err := exec.LookPath("vips")
	if err != nil {
		return nil, fmt.Errorf("decoding AVIF (or any format Go cannot) needs the vips command (scripts/deps.sh dev installs libvips-tools): %w", err)
	}
	dir, err := os.MkdirTemp("", "thumbd-avif")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out.png")
	if err := os.WriteFile(in, avif, 0o600); err != nil {
		return nil, err
	}
	if msg, err := exec.Command(vips, "copy", in, out).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("vips copy: %v: %s", err, msg)
	}
	return os.ReadFile(out)
}

// AVIFSize reads an AVIF's size from its first image spatial extents
// property (ispe: version and flags, then width and height, big-endian),
// without decoding: what a test checks a thumbnail's size with, many
// times over, where VipsToPNG's process would be slow.
func AVIFSize(avif []byte) (w, h int, ok bool) {
	i := bytes.Index(avif, []byte("ispe"))
	if i < 0 || len(avif) < i+16 {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint32(avif[i+8:])), int(binary.BigEndian.Uint32(avif[i+12:])), true
}

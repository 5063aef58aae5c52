// Package flavour builds test binaries against one of scripts/build.sh's
// builds of libvips (dynamic, slim, static), for the subcommands that time
// code in a test binary: bench engine and bench cells.
package flavour

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
)

// TestBinary builds pkg's test binary into out with flavour's cgo
// environment, build cache, tags and link flags (scripts/build.sh's
// flavour_go, run as `scripts/build.sh go`). It runs from the repository root.
func TestBinary(ctx context.Context, flavour, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "scripts/build.sh", "go", flavour, "test", "-c", "-o", out, pkg)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for the %s build (run from the repository root): %w\n%s", pkg, flavour, err, log.String())
	}
	return nil
}

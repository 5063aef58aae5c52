package target

import (
	"context"
	"errors"
	"flag"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
)

// Flags are the flags of a subcommand that starts one thumbd: -image,
// -docker, -env, or else the command after the flags (bench serve,
// memory, origin).
type Flags struct {
	Image, Docker string
	Env           []string
	Command       []string // the arguments after the flags
}

// Register adds -image (described by imageHelp), -docker and -env to fs.
func (f *Flags) Register(fs *flag.FlagSet, imageHelp string) {
	fs.StringVar(&f.Image, "image", "", imageHelp)
	fs.StringVar(&f.Docker, "docker", "docker", "docker client to run")
	fs.Func("env", "KEY=VALUE for thumbd (repeatable)", func(v string) error { f.Env = append(f.Env, v); return nil })
}

// Parsed takes the command from fs, parsed, and holds the rule: an image
// or a command, not both.
func (f *Flags) Parsed(fs *flag.FlagSet) error {
	f.Command = fs.Args()
	if (f.Image == "") == (len(f.Command) == 0) {
		return errors.New("want -image or a command, not both")
	}
	return nil
}

// Spec is what to launch: the image on network with dockerArgs, or the
// command. env comes first, then -env's.
func (f *Flags) Spec(network string, dockerArgs, env []string) launch.Spec {
	env = append(append([]string(nil), env...), f.Env...)
	if f.Image != "" {
		return launch.Spec{Image: f.Image, Docker: f.Docker, Network: network, DockerArgs: dockerArgs, Env: env}
	}
	return launch.Spec{Command: f.Command, Env: env}
}

// Name is the image or the command, for reports.
func (f *Flags) Name() string {
	if f.Image != "" {
		return f.Image
	}
	return strings.Join(f.Command, " ")
}

// StartReady starts spec, with THUMBD_ADMIN_PORT on a free port when
// admin, and waits until it is ready: the server, to be stopped by the
// caller, the admin port's base URL ("" without one) and the server's
// PID.
func StartReady(ctx context.Context, spec launch.Spec, admin bool) (srv *launch.Server, adminURL string, pid int, err error) {
	if admin {
		port, err := launch.FreePort()
		if err != nil {
			return nil, "", 0, err
		}
		spec.Env = append(slices.Clip(spec.Env), "THUMBD_ADMIN_PORT="+strconv.Itoa(port))
		adminURL = "http://127.0.0.1:" + strconv.Itoa(port)
	}
	if srv, err = launch.Start(ctx, spec); err != nil {
		return nil, "", 0, err
	}
	if err = srv.WaitReady(ctx, 30*time.Second); err == nil {
		pid, err = srv.PID(ctx)
	}
	if err != nil {
		srv.Stop(5 * time.Second)
		return nil, "", 0, err
	}
	return srv, adminURL, pid, nil
}

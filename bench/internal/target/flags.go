package target

import (
	"errors"
	"flag"
	"strings"

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

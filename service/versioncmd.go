package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/thumbd/thumbd/service/internal/buildinfo"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// printVersion is `thumbd version [-json]`: the release, the commit, the
// Go version and, for the builds that link the libvips recipe, every C
// library it pins with its version and Debian revision, so that a security
// team can match a running binary against advisories.
func printVersion(args []string, info buildinfo.Info, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("thumbd version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON object: version, revision, goversion, platform, flavour, recipe, libvips and libraries [{package, name, suite, debian_version, version, revision, sha256, license}]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version: unexpected arguments %q", fs.Args())
	}
	return buildinfo.Report{Info: info, Libvips: thumb.Version()}.Print(stdout, *asJSON)
}

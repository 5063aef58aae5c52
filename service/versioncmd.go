package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/thumbd/thumbd/service/internal/buildinfo"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// versionInfo is `thumbd version -json`: the build, and the libvips
// version the binary was compiled against (Debian's for the dynamic
// flavour, the recipe's for slim and static).
type versionInfo struct {
	buildinfo.Info
	Libvips string `json:"libvips"`
}

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
	v := versionInfo{Info: info, Libvips: thumb.Version()}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(stdout, "thumbd %s (commit %s, %s, %s, %s build)\n", v.Version, v.Revision, v.GoVersion, v.Platform, v.Flavour)
	if len(v.Libraries) == 0 {
		fmt.Fprintf(stdout, "libvips %s and its codecs: the system's shared libraries (Debian's packages), not the recipe's\n", v.Libvips)
		return nil
	}
	fmt.Fprintf(stdout, "libvips %s and its codecs: scripts/build-libvips.sh, recipe %s, from Debian source packages\n", v.Libvips, v.Recipe)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "library\tversion\tdebian revision\tsuite\tsource package\tlicence")
	for _, l := range v.Libraries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.Version, l.Revision, l.Suite, l.Package, l.License)
	}
	return tw.Flush()
}

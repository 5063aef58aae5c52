package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// printFormats is `thumbd formats [-json]`: the format table, which the
// bench (bench/internal/formats embeds the JSON) and the Node twin read
// rather than keep copies of formats and default qualities.
func printFormats(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("thumbd formats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON array of {format, name, content_type, input, output, quality, alpha, animated, auto, listed}")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("formats: unexpected arguments %q", fs.Args())
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(imagefmt.Table())
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "format\tmedia type\treads\twrites\tdefault q")
	for _, s := range imagefmt.Table() {
		fmt.Fprintf(tw, "%s\t%s\t%t\t%t\t%d\n", s.Format, s.ContentType, s.Input, s.Output, s.Quality)
	}
	return tw.Flush()
}

package main

import (
	"flag"
	"fmt"
	"io"

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
	return imagefmt.WriteTable(stdout, *asJSON)
}

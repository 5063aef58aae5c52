package imagefmt

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes the format table as `thumbd formats` shows it: text,
// or a JSON array (asJSON), which the bench and the Node twin read.
func WriteTable(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(Table())
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "format\tmedia type\treads\twrites\tdefault q")
	for _, s := range Table() {
		fmt.Fprintf(tw, "%s\t%s\t%t\t%t\t%d\n", s.Format, s.ContentType, s.Input, s.Output, s.Quality)
	}
	return tw.Flush()
}

// Package formats is thumbd's format table as the bench reads it:
// formats.json, the output of `thumbd formats -json` (a service test keeps
// it equal to service/internal/imagefmt's table; the Node twin reads the
// same file). A new output format is a row there, and the bench's routes,
// the engine comparison and the twin follow.
package formats

import (
	_ "embed"
	"encoding/json"
)

//go:embed formats.json
var table []byte

// Format is one row.
type Format struct {
	Name    string `json:"format"` // as the API spells it: "webp"
	Output  bool   `json:"output"`
	Quality int    `json:"quality"` // the default q; 0: the encoder takes none (PNG)
}

// Outputs lists the formats thumbd writes, in the table's order.
func Outputs() []Format {
	var rows []Format
	if err := json.Unmarshal(table, &rows); err != nil {
		panic("formats.json: " + err.Error()) // embedded and tested: cannot happen
	}
	var out []Format
	for _, r := range rows {
		if r.Output {
			out = append(out, r)
		}
	}
	return out
}

// Names lists the output formats' names.
func Names() []string {
	var names []string
	for _, f := range Outputs() {
		names = append(names, f.Name)
	}
	return names
}

// Quality is format's default q (0 for none), and whether thumbd writes it.
func Quality(format string) (int, bool) {
	for _, f := range Outputs() {
		if f.Name == format {
			return f.Quality, true
		}
	}
	return 0, false
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// `thumbd formats -json` prints the format table, one object a row, in the
// table's order: what the bench and the Node twin read instead of copies.
func TestFormatsCommandPrintsTheTable(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"thumbd", "formats", "-json"}, envOf(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Format      imagefmt.Format `json:"format"`
		ContentType string          `json:"content_type"`
		Input       bool            `json:"input"`
		Output      bool            `json:"output"`
		Quality     int             `json:"quality"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var outputs []imagefmt.Format
	for _, r := range rows {
		spec, ok := imagefmt.Lookup(r.Format)
		if !ok || spec.ContentType != r.ContentType || spec.Input != r.Input || spec.Output != r.Output || spec.Quality != r.Quality {
			t.Errorf("row %+v, table %+v", r, spec)
		}
		if r.Output {
			outputs = append(outputs, r.Format)
		}
	}
	if got, want := outputs, imagefmt.Outputs(); !slices.Equal(got, want) {
		t.Errorf("outputs %v, table %v", got, want)
	}
	if err := run(context.Background(), []string{"thumbd", "formats", "-xml"}, envOf(nil), io.Discard, io.Discard); err == nil {
		t.Error("formats -xml: no error")
	}
}

// The copy the bench embeds and the twin reads is the command's output:
// a new format is a row in imagefmt's table (and its exporter); this file
// is regenerated, never edited.
func TestFormatsFileIsTheTable(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"thumbd", "formats", "-json"}, envOf(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	const file = "../bench/internal/formats/formats.json"
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, out.Bytes()) {
		t.Fatalf("%s is not `thumbd formats -json` (%v); regenerate it: go run ./service formats -json > bench/internal/formats/formats.json", file, err)
	}
}

package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import rules of docs/architecture.md: each internal package imports
// only the thumbd packages listed for it, and thumb stays free of HTTP.
func TestPackageImports(t *testing.T) {
	const own = "github.com/thumbd/thumbd/service/internal/"
	allowed := map[string][]string{
		"params":    {"apierr", "imagefmt", "thumb"},
		"source":    {"apierr", "admission"},
		"origin":    {"apierr", "source"},
		"signing":   {"apierr"},
		"admission": {},
		"memlimit":  {},
		"memcost":   {"imagefmt"},
		"thumb":     {"imagefmt", "thumbjob"},
		"thumbjob":  {"apierr"},
		"cell":      {"apierr", "imagefmt", "sandbox", "thumb", "thumbjob"},
		"cellpool":  {"cell", "sandbox", "thumb"},
		"sandbox":   {},
		"celltest":  {"cell", "imagefmt", "thumb", "thumbjob"},
		"imagefmt":  {},
		"apierr":    {},
		"hostile":   {},
	}
	dirs, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		pkg := d.Name()
		want, known := allowed[pkg]
		if !known {
			t.Errorf("internal/%s is not in docs/architecture.md's table (nor in this test)", pkg)
			continue
		}
		files, _ := filepath.Glob(filepath.Join("internal", pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if name, ok := strings.CutPrefix(path, own); ok && !slices.Contains(want, name) {
					t.Errorf("%s imports %s; internal/%s may import only %v", f, name, pkg, want)
				}
				if pkg == "thumb" && strings.HasPrefix(path, "net/http") {
					t.Errorf("%s imports %s: HTTP stays out of the libvips package", f, path)
				}
			}
		}
	}
}

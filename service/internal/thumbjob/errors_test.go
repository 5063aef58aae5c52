package thumbjob

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// Errors is the table the cell protocol and the API read: an Err variable
// left out of it would answer 500 in cells mode only.
func TestEveryErrorIsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]*Error{}
	for _, e := range Errors() {
		listed[e.text] = e
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			for _, name := range s.(*ast.ValueSpec).Names {
				if strings.HasPrefix(name.Name, "Err") {
					n++
				}
			}
		}
	}
	if n != len(Errors()) || len(listed) != n {
		t.Errorf("%d Err variables, %d rows in Errors (%d distinct texts)", n, len(Errors()), len(listed))
	}
}

// Each engine error's code is an API code of a client's fault about the
// image (or, for a crop outside it, about the request: the pipeline's
// 400), and no two share one (the wire tells them apart by code).
func TestErrorCodes(t *testing.T) {
	seen := map[apierr.Code]bool{}
	for _, e := range Errors() {
		if !slices.Contains(apierr.Codes(), e.Code) || seen[e.Code] {
			t.Errorf("%q: code %q unknown or repeated", e, e.Code)
		}
		seen[e.Code] = true
		if s := e.Code.Status(); s != http.StatusUnsupportedMediaType && s != http.StatusUnprocessableEntity && e != ErrCropOutside {
			t.Errorf("%q answers %d", e, s)
		}
		if got, ok := ForCode(e.Code); !ok || got != e {
			t.Errorf("ForCode(%q) = %v, %v", e.Code, got, ok)
		}
	}
	if _, ok := ForCode(apierr.Internal); ok {
		t.Error("internal_error is no engine error")
	}
}

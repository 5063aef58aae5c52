package main

import (
	"encoding/json"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

type openAPI struct {
	Paths map[string]map[string]struct {
		Parameters []struct {
			Name   string `json:"name"`
			Schema struct {
				Enum []string `json:"enum"`
			} `json:"schema"`
		} `json:"parameters"`
		Responses map[string]json.RawMessage `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas struct {
			Error struct {
				Properties struct {
					Code struct {
						Enum []string `json:"enum"`
					} `json:"code"`
				} `json:"properties"`
			} `json:"Error"`
		} `json:"schemas"`
	} `json:"components"`
}

// loadOpenAPI reads the document with its parameter $refs resolved, so the
// tests see every operation's parameters whole.
func loadOpenAPI(t *testing.T) openAPI {
	t.Helper()
	var doc openAPI
	if err := json.Unmarshal(resolvedOpenAPI(t), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// resolvedOpenAPI is openapi.json with every local "#/components/parameters/"
// $ref replaced by the object it names; an unknown or foreign one fails.
func resolvedOpenAPI(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	components, _ := doc["components"].(map[string]any)
	shared, _ := components["parameters"].(map[string]any)
	var resolve func(v any) any
	resolve = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				name, isParam := strings.CutPrefix(ref, "#/components/parameters/")
				if !isParam {
					return v // schema refs (Error) stay as they are
				}
				target, ok := shared[name]
				if !ok {
					t.Fatalf("openapi.json: $ref %s names no parameter", ref)
				}
				return target
			}
			for k, x := range v {
				v[k] = resolve(x)
			}
		case []any:
			for i, x := range v {
				v[i] = resolve(x)
			}
		}
		return v
	}
	out, err := json.Marshal(resolve(doc))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A parameter that two operations share is written once, under
// components/parameters, and named by $ref: no inline copy can drift.
func TestOpenAPISharesParametersByRef(t *testing.T) {
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []json.RawMessage `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // inline parameter object -> where
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for _, p := range op.Parameters {
				var probe struct {
					Ref  string `json:"$ref"`
					Name string `json:"name"`
				}
				if err := json.Unmarshal(p, &probe); err != nil {
					t.Fatal(err)
				}
				if probe.Ref != "" {
					continue
				}
				key := probe.Name + " " + string(p)
				if where, dup := seen[key]; dup {
					t.Errorf("%s %s repeats parameter %s of %s inline; put it under components/parameters", method, path, probe.Name, where)
				}
				seen[key] = method + " " + path
			}
		}
	}
	loadOpenAPI(t) // and every $ref resolves
}

// The document lists exactly the routes addRoutes serves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	r := chi.NewRouter()
	addRoutes(r, newTestDeps(t, testConfig(t)))
	var served, documented []string
	chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served = append(served, method+" "+route)
		return nil
	})
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	if !slices.Equal(served, documented) {
		t.Fatalf("served:\n%v\ndocumented:\n%v", served, documented)
	}
}

// Every error code the handlers use is in the document's enum and in
// docs/api.md's error table, and the documented option enums are the ones
// the parser takes.
func TestOpenAPIAndDocsListEveryErrorCode(t *testing.T) {
	doc := loadOpenAPI(t)
	var codes []string
	for _, c := range apierr.Codes() {
		codes = append(codes, string(c))
	}
	enum := doc.Components.Schemas.Error.Properties.Code.Enum
	slices.Sort(enum)
	sorted := slices.Clone(codes)
	slices.Sort(sorted)
	if !slices.Equal(enum, sorted) {
		t.Errorf("error code enum %v, handlers use %v", enum, sorted)
	}
	// docs/api.md's error table (TestDocsErrorTable generates it) has one
	// row per code, with its status.
	apiDoc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(apiDoc), "## Error codes")
	table, _, _ = strings.Cut(table, "\n## ")
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| (\\d{3}) \\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		if _, dup := rows[m[2]]; dup {
			t.Errorf("docs/api.md's error table lists %s twice", m[2])
		}
		rows[m[2]] = m[1]
	}
	for _, c := range apierr.Codes() {
		if got, want := rows[string(c)], strconv.Itoa(c.Status()); got != want {
			t.Errorf("docs/api.md's error table gives %s status %q, the code table %s", c, got, want)
		}
		delete(rows, string(c))
	}
	for c := range rows {
		t.Errorf("docs/api.md's error table lists %s, which the code table does not have", c)
	}
	// The document names each code under its status: in a response of
	// that status "(code)", or in the API's description "STATUS code".
	raw := resolvedOpenAPI(t)
	var descs struct {
		Info  struct{ Description string }
		Paths map[string]map[string]struct {
			Responses map[string]struct{ Description string }
		}
	}
	if err := json.Unmarshal(raw, &descs); err != nil {
		t.Fatal(err)
	}
	for _, c := range apierr.Codes() {
		status := strconv.Itoa(c.Status())
		found := strings.Contains(descs.Info.Description, status+" "+string(c))
		for _, ops := range descs.Paths {
			for _, op := range ops {
				found = found || strings.Contains(op.Responses[status].Description, "("+string(c)+")")
			}
		}
		if !found {
			t.Errorf("openapi.json names %s under no %s response", c, status)
		}
	}
	want := map[string][]string{
		"fit":     strs(thumbjob.Fits()),
		"gravity": strs(thumbjob.Gravities()),
		"format":  strs(append(imagefmt.Outputs(), imagefmt.Auto)),
	}
	for _, method := range []string{"get", "post"} {
		for _, p := range doc.Paths["/thumbnail"][method].Parameters {
			if w, ok := want[p.Name]; ok && !slices.Equal(p.Schema.Enum, w) {
				t.Errorf("%s /thumbnail %s enum %v, parser takes %v", method, p.Name, p.Schema.Enum, w)
			}
		}
		for _, status := range []string{"200", "400", "413", "415", "422", "503", "504"} {
			if _, ok := doc.Paths["/thumbnail"][method].Responses[status]; !ok {
				t.Errorf("%s /thumbnail does not document %s", method, status)
			}
		}
	}
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// Queries are strict: every route that reads its query documents the 400
// it answers for an unknown or repeated parameter.
func TestOpenAPIDocumentsStrictQueries(t *testing.T) {
	doc := loadOpenAPI(t)
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if path == "/metrics" || (path == "/hash" && method == "post") {
				continue
			}
			if _, ok := op.Responses["400"]; !ok {
				t.Errorf("%s %s does not document its 400", method, path)
			}
		}
	}
}

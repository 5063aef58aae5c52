package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// The reference parts of the docs are made from the code they describe
// and checked here, as the settings table is: a block between
// "<!-- begin NAME (generated ...) -->" and "<!-- end NAME -->" must be what
// this file renders. THUMBD_UPDATE_DOCS=1 rewrites the blocks instead:
//
//	THUMBD_UPDATE_DOCS=1 go test ./service -run '^TestDocs'
const updateDocsEnv = "THUMBD_UPDATE_DOCS"

// checkGenerated holds docs/FILE's block name equal to want.
func checkGenerated(t *testing.T, file, name, want string) {
	t.Helper()
	path := "../docs/" + file
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin := "<!-- begin " + name + " (generated: " + updateDocsEnv + "=1 go test ./service -run '^TestDocs' rewrites it) -->\n"
	end := "<!-- end " + name + " -->"
	doc := string(b)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/%s has no block %q: put these two lines where it goes, then run %s=1 go test ./service -run '^TestDocs'\n%s%s", file, name, updateDocsEnv, begin, end)
	}
	got := doc[i+len(begin) : j]
	if got == want {
		return
	}
	if os.Getenv(updateDocsEnv) == "1" {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote docs/%s's %s block", file, name)
		return
	}
	t.Errorf("docs/%s's %s block differs from the code: run %s=1 go test ./service -run '^TestDocs' (and read the diff)\n%s", file, name, updateDocsEnv, lineDiff(got, want))
}

// lineDiff names the first line where got and want part.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d of the block:\n  docs: %s\n  code: %s", i+1, gl, wl)
		}
	}
	return ""
}

// mdCell makes s one Markdown table cell.
func mdCell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// TestDocsAPIReference: docs/api.md's route reference is openapi.json's
// paths, parameters, bodies, answers and schemas.
func TestDocsAPIReference(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	checkGenerated(t, "api.md", "routes", renderAPI(t, raw, resolvedOpenAPI(t)))
}

// TestDocsErrorTable: docs/api.md's error table is apierr's code table.
func TestDocsErrorTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| status | `code` | when |\n|---|---|---|\n")
	for _, c := range apierr.Codes() {
		fmt.Fprintf(&b, "| %d | `%s` | %s |\n", c.Status(), c, c.When())
	}
	checkGenerated(t, "api.md", "errors", b.String())
}

// TestDocsSettingsTables: docs/configuration.md's settings table is
// `thumbd settings`, and docs/observability.md's tracing table is
// `thumbd settings -tracing`.
func TestDocsSettingsTables(t *testing.T) {
	for _, c := range []struct{ file, name, flag string }{
		{"configuration.md", "settings", ""},
		{"observability.md", "tracing-variables", "-tracing"},
	} {
		args := []string{"thumbd", "settings"}
		if c.flag != "" {
			args = append(args, c.flag)
		}
		var out bytes.Buffer
		if err := run(context.Background(), args, envOf(nil), &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if c.flag == "-tracing" && !strings.Contains(out.String(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
			t.Fatalf("thumbd settings -tracing lists no OTLP endpoint:\n%s", out.String())
		}
		checkGenerated(t, c.file, c.name, out.String())
	}
}

// TestDocsREADMENamesRealSettings: the README's short list of settings
// (the full table is docs/configuration.md's) names settings that exist,
// each with its real default.
func TestDocsREADMENamesRealSettings(t *testing.T) {
	// The defaults as the full table writes them (`thumbd settings`).
	defaults := map[string]string{}
	for _, flag := range []string{"", "-tracing"} {
		args := []string{"thumbd", "settings"}
		if flag != "" {
			args = append(args, flag)
		}
		var out bytes.Buffer
		if err := run(context.Background(), args, envOf(nil), &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			cells := strings.Split(line, " | ")
			if env, ok := strings.CutPrefix(cells[0], "| `"); ok && len(cells) >= 2 {
				env = strings.TrimSuffix(env, "`")
				defaults[env] = ""
				if len(cells) == 4 { // env, flag, default, meaning
					defaults[env] = cells[2]
				}
			}
		}
	}
	if len(defaults) < 20 {
		t.Fatalf("thumbd settings gave %d rows: the test is broken", len(defaults))
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`\b(?:THUMBD|OTEL)_[A-Z_]*[A-Z]\b|\bPORT\b`).FindAllString(string(readme), -1)
	if len(names) < 5 {
		t.Fatalf("the README names %d settings: the test is broken", len(names))
	}
	for _, n := range names {
		if _, ok := defaults[n]; !ok {
			t.Errorf("README.md names %s, which is no setting (thumbd settings)", n)
		}
	}
	_, table, _ := strings.Cut(string(readme), "## Main settings")
	table, _, _ = strings.Cut(table, "\n## ")
	rows := 0
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| (.*?) \\| .* \\|$").FindAllStringSubmatch(table, -1) {
		rows++
		if want := defaults[m[1]]; m[2] != want {
			t.Errorf("README.md's main settings give %s the default %q; thumbd settings says %q", m[1], m[2], want)
		}
	}
	if rows < 5 {
		t.Errorf("README.md's main settings table has %d rows: the test is broken", rows)
	}
}

// TestDocsMetrics: docs/observability.md's metric table is every metric
// the service registers, in each engine mode, with its labels and help.
func TestDocsMetrics(t *testing.T) {
	inproc := newTestDeps(t, testConfig(t)).registry
	cells := newCellsServer(t, cellsConfig(t), "").deps.registry
	modes := []struct {
		name string
		reg  *prometheus.Registry
	}{{"in process", inproc}, {"cells", cells}}
	type metric struct {
		help   string
		labels []string
		modes  []string
	}
	all := map[string]*metric{}
	for _, m := range modes {
		descs := describe(t, m.reg)
		// The descriptions are read from Desc.String(), the one public view
		// of a Desc: what the registry gathers must agree with them, so a
		// change of that format fails here rather than emptying the table.
		families, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if !strings.HasPrefix(f.GetName(), "thumbd_") {
				continue // the Go and process collectors: built at the first scrape, they describe nothing
			}
			d, ok := descs[f.GetName()]
			if !ok || d.help != f.GetHelp() {
				t.Fatalf("%s: gathered %s (%q), described %+v: the Desc parser is out of date", m.name, f.GetName(), f.GetHelp(), d)
			}
		}
		for name, d := range descs {
			if !strings.HasPrefix(name, "thumbd_") {
				continue // the Go and process collectors, named in the prose
			}
			e := all[name]
			if e == nil {
				e = &metric{help: d.help}
				all[name] = e
			}
			if e.help != d.help {
				t.Errorf("%s's help differs between engine modes: %q, %q", name, e.help, d.help)
			}
			for _, l := range d.labels {
				if !slices.Contains(e.labels, l) {
					e.labels = append(e.labels, l)
				}
			}
			e.modes = append(e.modes, m.name)
		}
	}
	if len(all) < 20 {
		t.Fatalf("%d thumbd_ metrics registered: the test is broken", len(all))
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| metric | labels | registered | meaning |\n|---|---|---|---|\n")
	for _, n := range names {
		m := all[n]
		labels := ""
		for i, l := range m.labels {
			if i > 0 {
				labels += ", "
			}
			labels += "`" + l + "`"
		}
		registered := "both modes"
		if len(m.modes) < len(modes) {
			registered = strings.Join(m.modes, ", ") + " only"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", n, labels, registered, mdCell(m.help))
	}
	checkGenerated(t, "observability.md", "metrics", b.String())
}

// metricDesc is what a Desc says of a metric.
type metricDesc struct {
	help   string
	labels []string // constant labels' names, then variable labels
}

// describe lists what reg's collectors describe, by metric name; one name
// described twice (a gauge per budget) gets the union of the labels.
func describe(t *testing.T, reg *prometheus.Registry) map[string]metricDesc {
	t.Helper()
	descForm := regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "(?:[^"\\]|\\.)*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)
	constLabel := regexp.MustCompile(`(\w+)="(?:[^"\\]|\\.)*"`)
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	out := map[string]metricDesc{}
	for d := range ch {
		m := descForm.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("a Desc in an unknown form: %s", d)
		}
		name, err1 := strconv.Unquote(m[1])
		help, err2 := strconv.Unquote(m[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", d, err1, err2)
		}
		e := out[name]
		e.help = help
		var labels []string
		for _, l := range constLabel.FindAllStringSubmatch(m[3], -1) {
			labels = append(labels, l[1])
		}
		if m[4] != "" {
			labels = append(labels, strings.Split(m[4], ",")...)
		}
		for _, l := range labels {
			if !slices.Contains(e.labels, l) {
				e.labels = append(e.labels, l)
			}
		}
		out[name] = e
	}
	return out
}

// renderAPI renders openapi.json (raw, for the order of its paths; and
// resolved, its parameters' $refs replaced) as Markdown.
func renderAPI(t *testing.T, raw, resolved []byte) string {
	t.Helper()
	type schema = map[string]any
	var doc struct {
		Paths map[string]map[string]struct {
			Summary     string
			Parameters  []schema
			RequestBody *struct {
				Required bool
				Content  map[string]any
			}
			Responses map[string]struct {
				Description string
				Headers     map[string]schema
				Content     map[string]struct{ Schema schema }
			}
		}
		Components struct{ Schemas map[string]schema }
	}
	if err := json.Unmarshal(resolved, &doc); err != nil {
		t.Fatal(err)
	}
	// The document's own order of paths, then GET before POST.
	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		return bytes.Index(raw, []byte(strconv.Quote(paths[i])+":")) < bytes.Index(raw, []byte(strconv.Quote(paths[j])+":"))
	})
	var b strings.Builder
	for _, p := range paths {
		for _, method := range []string{"get", "post"} {
			op, ok := doc.Paths[p][method]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "### `%s %s`\n\n%s\n\n", strings.ToUpper(method), p, strings.TrimSpace(op.Summary))
			if len(op.Parameters) > 0 {
				b.WriteString("| parameter | in | values | default | meaning |\n|---|---|---|---|---|\n")
				for _, prm := range op.Parameters {
					s, _ := prm["schema"].(schema)
					def := ""
					if v, ok := s["default"]; ok {
						def = "`" + jsonNumber(v) + "`"
					}
					name := fmt.Sprint(prm["name"])
					if req, _ := prm["required"].(bool); req {
						name += " (required)"
					}
					fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", name, prm["in"], schemaValues(s), def, mdCell(fmt.Sprint(prm["description"])))
				}
				b.WriteString("\n")
			}
			if rb := op.RequestBody; rb != nil {
				types := sortedKeys(rb.Content)
				req := "optional"
				if rb.Required {
					req = "required"
				}
				fmt.Fprintf(&b, "Body (%s): `%s`.\n\n", req, strings.Join(types, "`, `"))
			}
			b.WriteString("| status | answer | body |\n|---|---|---|\n")
			statuses := sortedKeys(op.Responses)
			for _, st := range statuses {
				r := op.Responses[st]
				var bodies []string
				for _, ct := range sortedKeys(r.Content) {
					body := "`" + ct + "`"
					if ref, _ := r.Content[ct].Schema["$ref"].(string); ref != "" {
						name := strings.TrimPrefix(ref, "#/components/schemas/")
						body += " ([" + name + "](#" + strings.ToLower(name) + "))"
					}
					bodies = append(bodies, body)
				}
				fmt.Fprintf(&b, "| %s | %s | %s |\n", st, mdCell(r.Description), strings.Join(bodies, ", "))
			}
			b.WriteString("\n")
			for _, st := range statuses {
				h := op.Responses[st].Headers
				if len(h) == 0 {
					continue
				}
				fmt.Fprintf(&b, "Headers of the %s:\n\n| header | meaning |\n|---|---|\n", st)
				for _, name := range sortedKeys(h) {
					desc, _ := h[name]["description"].(string)
					fmt.Fprintf(&b, "| `%s` | %s |\n", name, mdCell(desc))
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("## Schemas\n\n")
	for _, name := range sortedKeys(doc.Components.Schemas) {
		s := doc.Components.Schemas[name]
		fmt.Fprintf(&b, "### %s\n\n| field | values | required | meaning |\n|---|---|---|---|\n", name)
		props, _ := s["properties"].(schema)
		required, _ := s["required"].([]any)
		for _, field := range sortedKeys(props) {
			ps, _ := props[field].(schema)
			req := ""
			if slices.Contains(required, any(field)) {
				req = "yes"
			}
			desc, _ := ps["description"].(string)
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", field, schemaValues(ps), req, mdCell(desc))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// schemaValues says in a few words what a JSON schema allows.
func schemaValues(s map[string]any) string {
	if s == nil {
		return ""
	}
	var parts []string
	if c, ok := s["const"]; ok {
		return "`" + fmt.Sprint(c) + "`"
	}
	if enum, ok := s["enum"].([]any); ok {
		var vs []string
		for _, v := range enum {
			vs = append(vs, "`"+fmt.Sprint(v)+"`")
		}
		return strings.Join(vs, ", ")
	}
	typ := fmt.Sprint(s["type"])
	if items, ok := s["items"].(map[string]any); ok {
		typ = "array of " + schemaValues(items)
	}
	if s["type"] == nil && s["items"] == nil {
		typ = ""
	}
	parts = append(parts, typ)
	lo, hasLo := s["minimum"]
	hi, hasHi := s["maximum"]
	switch {
	case hasLo && hasHi:
		parts = append(parts, jsonNumber(lo)+".."+jsonNumber(hi))
	case hasLo:
		parts = append(parts, "≥ "+jsonNumber(lo))
	case hasHi:
		parts = append(parts, "≤ "+jsonNumber(hi))
	}
	if p, ok := s["pattern"].(string); ok {
		parts = append(parts, "`"+strings.ReplaceAll(p, "|", `\|`)+"`")
	}
	if f, ok := s["format"].(string); ok {
		parts = append(parts, f)
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// jsonNumber writes a JSON value, numbers without an exponent (100000000,
// not 1e+08).
func jsonNumber(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestDocsLinksResolve: every relative link of the README, docs/ and the
// other guides names a file that exists and, with a #fragment, a heading
// in it (GitHub's anchors), so that moving a section breaks no link.
func TestDocsLinksResolve(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md", "../CONTRIBUTING.md", "../k8s/README.md", "../bench/README.md")
	adrs, _ := filepath.Glob("../docs/adr/*.md")
	files = append(files, adrs...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fence := regexp.MustCompile("(?ms)^```.*?^```")
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		b, _ := os.ReadFile(path)
		seen := map[string]int{}
		for _, line := range strings.Split(fence.ReplaceAllString(string(b), ""), "\n") {
			h, ok := strings.CutPrefix(line, "#")
			if !ok {
				continue
			}
			slug := githubAnchor(strings.TrimLeft(h, "#"))
			if n := seen[slug]; n > 0 {
				a[slug+"-"+strconv.Itoa(n)] = true
			} else {
				a[slug] = true
			}
			seen[slug]++
		}
		anchors[path] = a
		return a
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, frag, _ := strings.Cut(target, "#")
			path := f
			if file != "" {
				path = filepath.Join(filepath.Dir(f), file)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s: link %s: no such file", f, target)
				continue
			}
			if frag != "" && !st.IsDir() && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
				t.Errorf("%s: link %s: %s has no heading with that anchor", f, target, path)
			}
		}
	}
	if checked < 50 {
		t.Errorf("%d links checked: the test is broken", checked)
	}
	// docs/README.md is the index: every page of docs/ is in it.
	index, err := os.ReadFile("../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(adrs, files...) {
		rel, ok := strings.CutPrefix(filepath.ToSlash(f), "../docs/")
		if ok && rel != "README.md" && !strings.Contains(string(index), "]("+rel+")") {
			t.Errorf("docs/README.md, the index, has no link to %s: add a row for it", rel)
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

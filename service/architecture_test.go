package main

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import rules of docs/architecture.md: each internal package imports
// only the thumbd packages listed for it, and thumb stays free of HTTP.
func TestPackageImports(t *testing.T) {
	allowed := map[string][]string{
		"params":           {"apierr", "imagefmt", "thumbjob"},
		"imgproxy":         {"apierr", "imagefmt", "params", "thumbjob"},
		"imgproxyendpoint": {"flagenv", "imagefmt", "imgproxy", "pipeline"},
		"lifecycle":        {"params", "pipeline"},
		"source":           {"apierr", "admission", "prefault", "thumbjob"},
		"origin":           {"apierr", "source", "thumbjob"},
		"bucket":           {"apierr"},
		"bucketsource":     {"apierr", "bucket", "source", "thumbjob"},
		"results":          {"source"},
		"resultstore":      {"admission", "apierr", "bucket", "imagefmt", "results", "source"},
		"engines":          {"cell", "cellpool", "glibcmalloc", "memcost", "sandbox", "thumb", "thumbjob"},
		"pipeline":         {"admission", "apierr", "bucketsource", "cell", "imagefmt", "memcost", "memplan", "origin", "params", "plan", "results", "resultstore", "signing", "source", "thumbjob", "video", "videoframe"},
		"flagenv":          {},
		"benchroutes":      {"apierr", "params", "pipeline", "source"},
		"memplan":          {"admission", "imagefmt", "memcost", "memlimit", "thumbjob"},
		"signing":          {"apierr", "imagefmt", "params"},
		"admission":        {},
		"memlimit":         {},
		"memcost":          {"bmp", "imagefmt", "plan", "thumbjob", "video"},
		"plan":             {"imagefmt", "thumbjob"},
		"thumb":            {"bmp", "exifthumb", "glibcmalloc", "imagefmt", "memcost", "plan", "primaries", "thumbhash", "thumbjob", "video", "videodecode", "videoframe"},
		"exifthumb":        {},
		"glibcmalloc":      {},
		"bmp":              {"thumbjob"},
		"thumbhashtest":    {},
		"thumbhash":        {},
		"thumbjob":         {"apierr", "imagefmt"},
		"cell":             {"apierr", "imagefmt", "prefault", "sandbox", "thumbjob"},
		"prefault":         {},
		"cellpool":         {"cell", "sandbox", "thumbjob"},
		"sandbox":          {},
		"celltest":         {"cell", "imagefmt", "sandbox", "thumbjob"},
		"imagefmt":         {},
		"apierr":           {},
		"buildinfo":        {},
		"otlphttp":         {},
		"tracing":          {"flagenv", "httpmetrics", "otlphttp"},
		"requestlog":       {"pipeline", "statuswriter"},
		"httpmetrics":      {"statuswriter"},
		"statuswriter":     {},
		"connlimit":        {},
		"video":            {},
		"videodecode":      {"primaries", "video"},
		"videoframe":       {"thumbjob", "video"},
		"primaries":        {},
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
		for _, path := range packageImports(t, pkg, false) {
			if name, ok := strings.CutPrefix(path, ownPackages); ok && !slices.Contains(want, name) {
				t.Errorf("internal/%s imports %s; it may import only %v", pkg, name, want)
			}
			if pkg == "thumb" && strings.HasPrefix(path, "net/http") {
				t.Errorf("internal/thumb imports %s: HTTP stays out of the libvips package", path)
			}
		}
	}
}

// The parse stage and the cell protocol build and test without cgo
// (CGO_ENABLED=0 go test ./service/internal/params): thumb is the one
// package that uses cgo and libvips, and nothing they import, their tests
// included, leads to it.
func TestParseAndCellProtocolNeedNoCgo(t *testing.T) {
	withoutCgo := []string{"params", "cell", "plan", "thumbjob"}
	dirs, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{} // own packages each imports, tests left out
	for _, d := range dirs {
		pkg := d.Name()
		for _, path := range packageImports(t, pkg, false) {
			own, ok := strings.CutPrefix(path, ownPackages)
			switch {
			case ok:
				imports[pkg] = append(imports[pkg], own)
			case pkg == "videodecode" && path == "C":
				// FFmpeg's decoders (ADR 0008): libavcodec through cgo.
			case pkg != "thumb" && (path == "C" || strings.Contains(path, "govips")):
				t.Errorf("internal/%s imports %s: only thumb uses cgo and libvips", pkg, path)
			}
		}
	}
	for _, root := range withoutCgo {
		// Breadth first from the package and its tests, keeping how each
		// package was reached for the message.
		via := map[string]string{root: ""}
		queue := []string{root}
		for _, path := range packageImports(t, root, true) {
			if own, ok := strings.CutPrefix(path, ownPackages); ok && own != root {
				if _, seen := via[own]; seen {
					continue
				}
				via[own] = root + " (tests)"
				queue = append(queue, own)
			}
		}
		for len(queue) > 0 {
			pkg := queue[0]
			queue = queue[1:]
			if pkg == "thumb" {
				t.Errorf("internal/%s needs cgo: it reaches thumb through %s", root, via[pkg])
				continue
			}
			for _, next := range imports[pkg] {
				if _, seen := via[next]; !seen {
					via[next] = pkg
					queue = append(queue, next)
				}
			}
		}
	}
}

const ownPackages = "github.com/thumbd/thumbd/service/internal/"

// packageImports lists the import paths of internal/pkg's files: its test
// files' only, or the others'.
func packageImports(t *testing.T, pkg string, tests bool) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("internal", pkg, "*.go"))
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") != tests {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			out = append(out, strings.Trim(imp.Path.Value, `"`))
		}
	}
	return out
}

// service/ holds the service: every package under it is one the thumbd
// binary imports, or a test helper named as such (…test). The kit the bench
// shares (launchers, image comparison, /proc, hostile inputs) lives in the
// module root's internal/.
func TestEveryServicePackageIsTheServices(t *testing.T) {
	const module = "github.com/thumbd/thumbd/"
	imports := map[string][]string{} // directory under service/ -> own imports
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		imports[dir] = append(imports[dir], "") // a package, even with no own imports
		for _, imp := range parsed.Imports {
			if own, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module+"service/"); ok {
				imports[dir] = append(imports[dir], own)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{".": true}
	for queue := []string{"."}; len(queue) > 0; queue = queue[1:] {
		for _, next := range imports[queue[0]] {
			if next != "" && !used[next] {
				used[next] = true
				queue = append(queue, next)
			}
		}
	}
	// Packages of an issue in progress, landed before the binary uses them:
	// each named with the issue that wires it, never for good.
	inProgress := map[string]string{}
	for dir := range imports {
		if _, pending := inProgress[dir]; pending {
			continue
		}
		if !used[dir] && !strings.HasSuffix(dir, "test") {
			t.Errorf("service/%s: the thumbd binary does not import it, and it is no test helper (…test); shared kit goes to the module's internal/", dir)
		}
	}
}

// The images' docker build context (.dockerignore) holds every package of
// the module's internal/ that the binary imports: a missing one fails only
// in a docker build, minutes into CI.
func TestDockerContextHoldsTheBinarysPackages(t *testing.T) {
	const shared = "github.com/thumbd/thumbd/internal/"
	ignore, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	needed := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				if pkg, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), shared); ok && !needed[pkg] {
					needed[pkg] = true
					visit(filepath.Join("..", "internal", pkg))
				}
			}
		}
	}
	filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && !strings.HasSuffix(path, "test") {
			visit(path)
		}
		return err
	})
	lines := strings.Split(string(ignore), "\n")
	for pkg := range needed {
		if !slices.Contains(lines, "!internal/"+pkg) && !slices.Contains(lines, "!internal") {
			t.Errorf("the thumbd binary imports internal/%s, which .dockerignore leaves out of the images' build context: add !internal/%s", pkg, pkg)
		}
	}
	if !needed["procfs"] {
		t.Error("the walk found no internal/procfs, which cells import: the test is broken")
	}
	// A module replaced by a directory of the repository (go.mod's
	// replace) is read by `go mod download`, before `COPY . .`.
	var dirs []string
	for _, r := range readGoMod(t).Replace {
		if dir, ok := strings.CutPrefix(r.New.Path, "./"); ok {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		t.Error("go.mod replaces no module by a directory (govips' patched copy): update this test")
	}
	for _, dir := range dirs {
		top, _, _ := strings.Cut(dir, "/")
		if !slices.Contains(lines, "!"+top) {
			t.Errorf("go.mod replaces a module by ./%s, which .dockerignore leaves out of the images' build context: add !%s", dir, top)
		}
		for _, name := range []string{"Dockerfile.scratch", "Dockerfile.slim"} {
			b, err := os.ReadFile(filepath.Join("..", name))
			if err != nil {
				t.Fatal(err)
			}
			df := string(b)
			at, download := strings.Index(df, "COPY "+top+"/ "+top+"/"), strings.Index(df, "RUN go mod download")
			if at < 0 || download < 0 || at > download {
				t.Errorf("%s: COPY %s/ %s/ before RUN go mod download (go.mod replaces a module by ./%s)", name, top, top, dir)
			}
		}
	}
}

// docs/architecture.md's package tables list every package under service/
// and the module's internal/, and nothing else: other work adds packages,
// and the failure names the row to add, with the imports it has today.
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			if pkg, _, ok := strings.Cut(rest, "`"); ok && (pkg == "service" || strings.HasPrefix(pkg, "service/") || strings.HasPrefix(pkg, "internal/")) {
				listed[pkg] = true
			}
		}
	}
	if !listed["service"] || !listed["internal/procfs"] {
		t.Fatalf("docs/architecture.md's tables lost their shape (no service or internal/procfs row): the test is broken")
	}
	tree := map[string]bool{}
	for _, root := range []string{".", "../internal"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") {
				return nil
			}
			dir := filepath.ToSlash(filepath.Dir(path))
			if root == "." {
				dir = strings.TrimSuffix("service/"+dir, "/.")
			} else {
				dir = strings.TrimPrefix(dir, "../")
			}
			tree[dir] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for pkg := range tree {
		if listed[pkg] {
			continue
		}
		if own, ok := strings.CutPrefix(pkg, "service/internal/"); ok {
			var imports []string
			for _, path := range packageImports(t, own, false) {
				if name, ok := strings.CutPrefix(path, ownPackages); ok && !slices.Contains(imports, "`"+name+"`") {
					imports = append(imports, "`"+name+"`")
				}
			}
			slices.Sort(imports)
			may := strings.Join(imports, ", ")
			if may == "" {
				may = "nothing"
			}
			t.Errorf("docs/architecture.md has no row for %s: add to the first package table\n| `%s` | WHAT IT DOES | %s |\nand a row to TestPackageImports' map", pkg, pkg, may)
		} else {
			t.Errorf("docs/architecture.md has no row for %s: add to the table of the module's internal/\n| `%s` | WHAT IT DOES |", pkg, pkg)
		}
	}
	for pkg := range listed {
		if !tree[pkg] {
			t.Errorf("docs/architecture.md lists %s, which is no package of the tree: remove its row", pkg)
		}
	}
}

// The shared kit (the module root's internal/) is for tests and tools: of
// it, the thumbd binary imports procfs alone.
func TestServiceUsesNoKitButProcfs(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(filepath.Dir(path), "test") {
			return err
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range parsed.Imports {
			if pkg, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), "github.com/thumbd/thumbd/internal/"); ok && pkg != "procfs" {
				t.Errorf("service/%s imports internal/%s: the shared kit is for tests and tools", path, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// third_party/govips is govips' release as go.mod requires it and
// thumbd.patch, nothing else (its README.md): the release is fetched
// through the Go module proxy and each copied file diffed against it.
func TestGovipsCopy(t *testing.T) {
	const module = "github.com/davidbyttow/govips/v2"
	mod := readGoMod(t)
	var version, copyDir string
	for _, r := range mod.Require {
		if r.Path == module {
			version = r.Version
		}
	}
	for _, r := range mod.Replace {
		if r.Old.Path == module {
			copyDir = filepath.Join("..", r.New.Path)
		}
	}
	if version == "" || copyDir == "" {
		t.Fatalf("go.mod requires %s at %q and replaces it by %q", module, version, copyDir)
	}
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v", module, version, err)
	}
	var dl struct{ Dir string }
	if err := json.Unmarshal(out, &dl); err != nil || dl.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, out)
	}
	files, err := filepath.Glob(filepath.Join(copyDir, "vips", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s/vips: %v", copyDir, err)
	}
	var diff bytes.Buffer
	for _, ours := range files {
		name := "vips/" + filepath.Base(ours)
		a, b := "a/"+name, "b/"+name
		cmd := exec.Command("diff", "-u", "--label", a, "--label", b, filepath.Join(dl.Dir, name), ours)
		cmd.Stdout = &diff
		if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("diff %s: %v (a file upstream does not have?)", name, err)
		}
	}
	patch, err := os.ReadFile(filepath.Join(copyDir, "thumbd.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if diff.String() != string(patch) {
		t.Errorf("%s differs from %s@%s by more or less than thumbd.patch; the diff:\n%s", copyDir, module, version, diff.String())
	}
	for _, f := range []string{"LICENSE", "go.mod", "README.md"} {
		if _, err := os.Stat(filepath.Join(copyDir, f)); err != nil {
			t.Error(err)
		}
	}
}

// goMod is what the tests read of go.mod, as the go tool parses it.
type goMod struct {
	Require []struct{ Path, Version string }
	Replace []struct{ Old, New struct{ Path string } }
}

// readGoMod is the module's go.mod (`go mod edit -json`).
func readGoMod(t *testing.T) goMod {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", "../go.mod").Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var m goMod
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

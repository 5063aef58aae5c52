package procfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// procfs is the project's one /proc parser (docs/architecture.md): no
// other package's code (tests aside) names a /proc path in a string.
// memlimit reads "proc/..." from a file system given to it, so that its
// tests can give it fixture trees, and parses what it reads here.
func TestOnlyProcfsReadsProc(t *testing.T) {
	literal := regexp.MustCompile("[\"`]/proc[/\"`]")
	root := filepath.Join("..", "..")
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || name == "testdata" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			if path == filepath.Join(root, "internal", "procfs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(line, "//"); literal.MatchString(code) {
				found = append(found, path+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s\n\treads /proc outside internal/procfs: add a reader or parser to procfs and call it", f)
	}
}

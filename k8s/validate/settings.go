package validate

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Settings maps each environment variable the service reads to its default
// ("" where the default is not a literal, such as "CPUs usable").
type Settings map[string]string

// settingRow matches a row of a settings table: | `NAME` | `-flag` | default | meaning |
var settingRow = regexp.MustCompile("^\\|\\s*`([A-Z][A-Z0-9_]*)`\\s*\\|\\s*`-[a-z0-9-]+`\\s*\\|([^|]*)\\|")

var backticked = regexp.MustCompile("`([^`]*)`")

// ReadSettings collects the settings tables of the given Markdown files.
// Missing files are skipped; finding no setting at all is an error.
func ReadSettings(paths ...string) (Settings, error) {
	s := Settings{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			m := settingRow.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			def := ""
			if d := backticked.FindStringSubmatch(m[2]); d != nil {
				def = d[1]
			}
			if _, seen := s[m[1]]; !seen || def != "" {
				s[m[1]] = def
			}
		}
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("no settings table (rows like | `PORT` | `-port` | `8080` | ...) in %s", strings.Join(paths, ", "))
	}
	return s, nil
}

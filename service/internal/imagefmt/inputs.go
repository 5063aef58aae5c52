package imagefmt

import (
	"fmt"
	"slices"
	"strings"
)

// ParseInputs reads THUMBD_INPUTS: input format names, comma-separated
// ("jpeg,png,webp"), each once. Empty means every input format. A name
// that is no input format is an error naming it and the choices.
func ParseInputs(s string) ([]Format, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Format
	for _, name := range strings.Split(s, ",") {
		f := Format(strings.ToLower(strings.TrimSpace(name)))
		spec, ok := Lookup(f)
		switch {
		case !ok || !spec.Input:
			return nil, fmt.Errorf("%q is not an input format; want some of %s", name, FormatList(Inputs()))
		case slices.Contains(out, f):
			return nil, fmt.Errorf("%q is listed twice", name)
		}
		out = append(out, f)
	}
	return out, nil
}

// FormatList is formats as THUMBD_INPUTS spells them: "jpeg,png".
func FormatList(fs []Format) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = string(f)
	}
	return strings.Join(names, ",")
}

package imgproxy

import (
	"fmt"
	"strings"
)

// Presets are named option lists, as imgproxy's IMGPROXY_PRESETS:
// "default" applies to every URL first.
type Presets map[string][]option

// ParsePresets reads imgproxy's syntax: comma-separated NAME=OPTIONS,
// where OPTIONS are path segments NAME:ARGS joined by "/". Each option's
// arguments are read when a URL applies the preset; a preset named twice
// is an error.
func ParsePresets(v string) (Presets, error) {
	p := Presets{}
	if strings.TrimSpace(v) == "" {
		return p, nil
	}
	for _, def := range strings.Split(v, ",") {
		name, opts, ok := strings.Cut(strings.TrimSpace(def), "=")
		if !ok || name == "" || opts == "" {
			return nil, fmt.Errorf("preset %q is not NAME=OPTIONS", def)
		}
		if _, dup := p[name]; dup {
			return nil, fmt.Errorf("preset %q is defined twice", name)
		}
		for _, seg := range strings.Split(strings.Trim(opts, "/"), "/") {
			n, args, isOption := strings.Cut(seg, ":")
			if !isOption || n == "" {
				return nil, fmt.Errorf("preset %q: %q is not an option NAME:ARGS", name, seg)
			}
			p[name] = append(p[name], option{n, strings.Split(args, ":")})
		}
	}
	return p, nil
}

// Check applies every preset once to a fresh URL's options, so that a
// preset that could never be applied is a start-up error, not a 400 on
// each URL that names it.
func (p Presets) Check(c Config) error {
	c.Presets = p
	for name, opts := range p {
		if err := newState().apply(c, opts, []string{name}); err != nil {
			return fmt.Errorf("preset %q: %w", name, err)
		}
	}
	return nil
}

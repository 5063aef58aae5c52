package params

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Presets are named option sets (THUMBD_PRESETS), used as preset=NAME.
type Presets map[string]map[string]string

// ParsePresets reads THUMBD_PRESETS: entries NAME:OPTIONS separated by
// ";", OPTIONS a query of thumbnail options, such as
// "small:w=128&h=128&fit=cover; hero:w=1200&format=webp". Names and
// options are checked here; values, against the max side, by
// Rules.CheckPresets.
func ParsePresets(s string) (Presets, error) {
	presets := Presets{}
	var errs []error
	for _, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, query, ok := strings.Cut(entry, ":")
		name = strings.TrimSpace(name)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("preset %q: want NAME:OPTIONS, such as small:w=128&h=128", entry))
			continue
		case !validPresetName(name):
			errs = append(errs, fmt.Errorf("preset %q: a name is 1 to 32 of a-z, 0-9, - and _", name))
			continue
		case presets[name] != nil:
			errs = append(errs, fmt.Errorf("preset %q is given twice", name))
			continue
		}
		q, err := Query(strings.TrimSpace(query), optionNames...)
		if err != nil {
			errs = append(errs, fmt.Errorf("preset %q: %s", name, apierr.From(err).Message))
			continue
		}
		presets[name] = q
	}
	if len(presets) == 0 {
		return nil, errors.Join(errs...)
	}
	return presets, errors.Join(errs...)
}

func validPresetName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// String writes presets back in THUMBD_PRESETS' syntax, sorted by name.
func (p Presets) String() string {
	var entries []string
	for _, name := range slices.Sorted(maps.Keys(p)) {
		var opts []string
		for _, k := range slices.Sorted(maps.Keys(p[name])) {
			opts = append(opts, k+"="+p[name][k])
		}
		entries = append(entries, name+":"+strings.Join(opts, "&"))
	}
	return strings.Join(entries, ";")
}

// CheckPresets reports every preset whose options are out of range.
func (r Rules) CheckPresets() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.Presets)) {
		a, err := read(r.Presets[name], r.MaxSide)
		if err == nil {
			_, err = r.bounds(a)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("preset %q: %s", name, apierr.From(err).Message))
		}
	}
	return errs
}

// withPreset returns the options a query asks for: those of its preset,
// if it names one, overridden by the options it gives itself. With
// PresetsOnly, a preset is required and no other option is taken.
func (r Rules) withPreset(q map[string]string) (map[string]string, error) {
	name, named := q["preset"]
	if r.PresetsOnly {
		for _, opt := range optionNames {
			if _, ok := q[opt]; ok {
				return nil, bad(opt, "is not taken here: only presets are (%s)", r.presetNames())
			}
		}
		if !named {
			return nil, apierr.New(apierr.BadParameter, "Parameter \"preset\" is required here: only presets are taken (%s).", r.presetNames())
		}
	}
	if !named {
		return q, nil
	}
	preset, ok := r.Presets[name]
	if !ok {
		if len(r.Presets) == 0 {
			return nil, bad("preset", "names no preset: none is configured (THUMBD_PRESETS)")
		}
		return nil, bad("preset", "names no preset; there are %s", r.presetNames())
	}
	merged := maps.Clone(preset)
	if g, ok := q["gravity"]; ok && g != string(thumbjob.GravityFocal) {
		// A preset's focal point belongs to its gravity=focal: a request
		// that names another gravity drops it.
		delete(merged, "fx")
		delete(merged, "fy")
	}
	for _, opt := range optionNames {
		if v, ok := q[opt]; ok {
			merged[opt] = v
		}
	}
	return merged, nil
}

func (r Rules) presetNames() string { return strings.Join(slices.Sorted(maps.Keys(r.Presets)), ", ") }

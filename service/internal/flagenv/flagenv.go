// Package flagenv reads a table of settings: each row an environment
// variable with a flag twin, a default and a meaning, bound to a typed
// field. The table itself is package main's (settings() in
// service/config.go, with the rows a package gives for its own settings);
// this is how any such table is read, shown and documented.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Setting is one row of a settings table: the single source of truth for
// its names, default and meaning.
type Setting struct {
	Env     string `json:"env"`
	Flag    string `json:"flag"`
	Default string `json:"default"` // as the variable would spell it; "" when computed or empty
	// DefaultNote says what the default means or how it is computed.
	DefaultNote string     `json:"-"`
	Meaning     string     `json:"meaning"`
	Value       flag.Value `json:"-"` // the field it sets
}

// Read sets every row's field: its default, then its variable (lookupEnv
// is os.LookupEnv's shape), then its flag in args. It returns which
// settings were given (by variable or flag) and every variable's invalid
// value; a flag's error (or a stray argument) ends the reading at once.
func Read(rows []Setting, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (explicit map[string]bool, invalid []error, err error) {
	fs := flag.NewFlagSet("thumbd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	explicit = map[string]bool{}
	for _, s := range rows {
		if d, ok := s.Value.(computedInt); ok {
			*d.p = d.def
		} else if s.Default == "" {
			// The zero value is the empty default: nothing to parse.
		} else if err := s.Value.Set(s.Default); err != nil {
			panic(fmt.Sprintf("settings table: %s default %q: %v", s.Env, s.Default, err))
		}
		// An empty variable means the default, except for a secret: an
		// empty Kubernetes Secret (a key command that failed) must stop
		// start-up, not turn signing off.
		_, isSecret := s.Value.(secret)
		if v, set := lookupEnv(s.Env); v != "" || set && isSecret {
			explicit[s.Env] = true
			if err := s.Value.Set(v); err != nil {
				if isSecret {
					v = "(not shown)"
				}
				invalid = append(invalid, fmt.Errorf("%s=%q: %w", s.Env, v, err))
			}
		}
		fs.Var(s.Value, s.Flag, s.Meaning+" (env "+s.Env+")")
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		if i := slices.IndexFunc(rows, func(s Setting) bool { return s.Flag == f.Name }); i >= 0 {
			explicit[rows[i].Env] = true
		}
	})
	return explicit, invalid, nil
}

// Markdown renders rows as a Markdown table (docs/configuration.md's).
func Markdown(rows []Setting) string {
	var b strings.Builder
	b.WriteString("| env | flag | default | meaning |\n|---|---|---|---|\n")
	for _, s := range rows {
		def := s.DefaultNote
		if s.Default != "" {
			def = "`" + s.Default + "`"
			if s.DefaultNote != "" {
				def += " (" + s.DefaultNote + ")"
			}
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", s.Env, s.Flag, def, s.Meaning)
	}
	return b.String()
}

// Variables are rows of variables thumbd reads without a flag twin (the
// AWS SDKs' and OpenTelemetry's): only their names and meanings.
func Variables(vars []struct{ Name, Meaning string }) []Setting {
	out := make([]Setting, len(vars))
	for i, v := range vars {
		out[i] = Setting{Env: v.Name, Meaning: v.Meaning}
	}
	return out
}

// VariablesMarkdown renders such rows as a docs table (env, meaning).
func VariablesMarkdown(rows []Setting) string {
	var b strings.Builder
	b.WriteString("| env | meaning |\n|---|---|\n")
	for _, s := range rows {
		fmt.Fprintf(&b, "| `%s` | %s |\n", s.Env, s.Meaning)
	}
	return b.String()
}

// Value is a typed flag.Value bound to a field.
type Value[T any] struct {
	p      *T
	parse  func(string) (T, error)
	format func(T) string
}

// Of binds p, read by parse and shown by format.
func Of[T any](p *T, parse func(string) (T, error), format func(T) string) Value[T] {
	return Value[T]{p, parse, format}
}

func (v Value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err == nil {
		*v.p = x
	}
	return err
}

func (v Value[T]) String() string {
	if v.p == nil {
		return ""
	}
	return v.format(*v.p)
}

// computedInt is an int whose default is computed at start-up.
type computedInt struct {
	Value[int]
	def int
}

// Computed is an int setting whose default, def, is computed at start-up.
func Computed(p *int, def int) flag.Value { return computedInt{Int(p), def} }

var errNotInteger = errors.New("not an integer")

func Int(p *int) Value[int] {
	return Value[int]{p, func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, errNotInteger
		}
		return n, nil
	}, strconv.Itoa}
}

func Int64(p *int64) Value[int64] {
	return Value[int64]{p, func(s string) (int64, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, errNotInteger
		}
		return n, nil
	}, func(n int64) string { return strconv.FormatInt(n, 10) }}
}

func Duration(p *time.Duration) Value[time.Duration] {
	return Value[time.Duration]{p, func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errors.New("not a duration such as 10s or 500ms")
		}
		return d, nil
	}, time.Duration.String}
}

func String(p *string) Value[string] {
	return Value[string]{p, func(s string) (string, error) { return s, nil }, func(s string) string { return s }}
}

// Bool is a boolean flag that may be given without a value (-flag =
// -flag=true).
func Bool(p *bool) flag.Value {
	return boolFlag{Value[bool]{p, func(s string) (bool, error) {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false, errors.New("want true or false")
		}
		return b, nil
	}, strconv.FormatBool}}
}

type boolFlag struct{ Value[bool] }

func (boolFlag) IsBoolFlag() bool { return true }

// secret is a setting whose value is never printed: not in an error, not
// as a flag's default in -help.
type secret struct{ Value[[][]byte] }

// Secret binds keys read by parse, never shown.
func Secret(p *[][]byte, parse func(string) ([][]byte, error)) flag.Value {
	return secret{Value[[][]byte]{p, parse, func([][]byte) string { return "" }}}
}

// Enum takes one of names.
func Enum(p *string, names ...string) Value[string] {
	return Value[string]{p, func(s string) (string, error) {
		if !slices.Contains(names, s) {
			return "", fmt.Errorf("want one of %s", strings.Join(names, ", "))
		}
		return s, nil
	}, func(s string) string { return s }}
}

// Level is a log level: debug, info, warn or error.
func Level(p *slog.Level) Value[slog.Level] {
	return Value[slog.Level]{p, func(s string) (slog.Level, error) {
		var l slog.Level
		if err := l.UnmarshalText([]byte(s)); err != nil {
			return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
		}
		return l, nil
	}, func(l slog.Level) string { return strings.ToLower(l.String()) }}
}

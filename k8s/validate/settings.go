package validate

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Settings maps each environment variable the service reads to its default
// ("" where the default is computed, such as the CPUs usable).
type Settings map[string]string

// ReadSettings reads the service's settings from the output of `thumbd
// settings -json` (the config code's own table: a JSON array of
// {"env","flag","default","meaning"}; the OpenTelemetry and AWS variables
// come with flag ""), so that the manifests are checked
// against what the service reads, not against documentation.
func ReadSettings(path string) (Settings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Env     string  `json:"env"`
		Flag    string  `json:"flag"`
		Default *string `json:"default"`
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, fmt.Errorf("%s: not the output of `thumbd settings -json`: %w", path, err)
	}
	s := Settings{}
	for i, r := range rows {
		// The OpenTelemetry variables (OTEL_*) and object storage's AWS
		// variables (AWS_*) have no flag: they are the SDKs' standard ones,
		// not thumbd's settings.
		if r.Env == "" || r.Flag == "" && !strings.HasPrefix(r.Env, "OTEL_") && !strings.HasPrefix(r.Env, "AWS_") || r.Default == nil {
			return nil, fmt.Errorf("%s: setting %d lacks env, flag or default", path, i+1)
		}
		s[r.Env] = *r.Default
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("%s: no settings", path)
	}
	return s, nil
}

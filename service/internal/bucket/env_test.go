package bucket

import (
	"slices"
	"strings"
	"testing"
)

// EnvVars is what FromEnv reads: no AWS variable read is missing from it
// (k8s/validate would refuse a manifest setting it), none listed is unread.
func TestEnvVarsAreWhatFromEnvReads(t *testing.T) {
	var asked []string
	FromEnv(func(name string) string {
		asked = append(asked, name)
		return ""
	})
	for _, name := range asked {
		if strings.HasPrefix(name, "AWS_") && !slices.ContainsFunc(EnvVars, func(v struct{ Name, Meaning string }) bool { return v.Name == name }) {
			t.Errorf("FromEnv reads %s, which EnvVars does not list", name)
		}
	}
	for _, v := range EnvVars {
		if !slices.Contains(asked, v.Name) {
			t.Errorf("EnvVars lists %s, which FromEnv does not read", v.Name)
		}
	}
}

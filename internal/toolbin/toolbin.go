// Package toolbin finds the binary of a tool a test runs for real (Jaeger,
// versitygw): its path is in an environment variable that scripts/test.sh
// sets from the script that builds and caches it. Outside CI a missing
// variable skips the test, so `go test` works on a bare checkout; in CI it
// fails the test, so a suite that silently tested nothing cannot pass.
package toolbin

import (
	"fmt"
	"os"
	"testing"
)

// Lookup returns the binary named by the variable env, or why there is
// none: skip (outside CI) or fail (CI set). script is the command that
// builds the tool, what the thing the test runs with it.
func Lookup(getenv func(string) string, env, script, what string) (bin string, skip, fail string) {
	if bin = getenv(env); bin != "" {
		return bin, "", ""
	}
	if getenv("CI") != "" {
		return "", "", fmt.Sprintf("CI: %s must name the binary (scripts/test.sh sets it from %s)", env, script)
	}
	return "", fmt.Sprintf("%s is unset: %s=$(%s) runs this test against %s", env, env, script, what), ""
}

// ForTest is Lookup for t, with the process's environment: it returns the
// binary, or skips t, or fails it in CI.
func ForTest(t testing.TB, env, script, what string) string {
	t.Helper()
	bin, skip, fail := Lookup(os.Getenv, env, script, what)
	if fail != "" {
		t.Fatal(fail)
	}
	if skip != "" {
		t.Skip(skip)
	}
	return bin
}

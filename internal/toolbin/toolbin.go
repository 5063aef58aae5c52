// Package toolbin finds the binary of a tool a test runs for real (Jaeger,
// versitygw): its path is in an environment variable that scripts/test.sh
// sets from the script that builds and caches it. Outside CI a missing
// variable skips the test, so `go test` works on a bare checkout; in CI it
// fails the test, so a suite that silently tested nothing cannot pass.
// ByHand is the exception for a reference CI cannot obtain at all.
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

// ByHand is ForTest for a reference that CI cannot obtain: its source is
// not served by the module proxy or Debian here (imgproxy's), so the test
// runs when a person builds it and names it in env, and skips otherwise,
// in CI too, saying so in the skip's message (go test -v prints it, and
// the docs record the last run by hand).
func ByHand(t testing.TB, env, how, what string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		t.Skipf("by hand: %s is unset, and CI cannot build %s (%s); %s names the binary to run this test against it", env, what, how, env)
	}
	return bin
}

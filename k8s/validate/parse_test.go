package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeStrictRejects(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"unknown field":   {"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {portz: []}\n", `unknown field "spec.portz"`},
		"wrong case":      {"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIp: None}\n", `unknown field "spec.clusterIp"`},
		"duplicate key":   {"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  type: ClusterIP\n  type: NodePort\n", "already set in map"},
		"unknown kind":    {"apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n", `unknown kind "Secret"`},
		"wrong type":      {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: two}\n", "cannot unmarshal"},
		"second document": {"apiVersion: v1\nkind: Service\nmetadata: {name: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {A: 1, B: [x]}\n", "document 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeStrict("test.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestDecodeStrictSkipsEmptyDocuments(t *testing.T) {
	ms, err := DecodeStrict("test.yaml", []byte("# a comment\n---\napiVersion: v1\nkind: Service\nmetadata: {name: x}\n---\n"))
	if err != nil || len(ms) != 1 || ms[0].Name != "x" || ms[0].Kind != "Service" {
		t.Fatalf("got %+v, %v", ms, err)
	}
}

func TestReadRoutes(t *testing.T) {
	src := `{"openapi": "3.1.0", "paths": {
		"/health": {"get": {}},
		"/thumbnail": {"post": {}, "parameters": []},
		"/v1/json": {"summary": "x", "get": {}, "head": {}}
	}}`
	path := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	routes, err := ReadRoutes(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		served       bool
	}{
		{"GET", "/health", true}, {"POST", "/health", false},
		{"POST", "/thumbnail", true}, {"GET", "/thumbnail", false}, {"PARAMETERS", "/thumbnail", false},
		{"GET", "/v1/json", true}, {"HEAD", "/v1/json", true}, {"GET", "/json", false},
		{"GET", "/not-a-route", false},
	} {
		if got := routes.Serves(c.method, c.path); got != c.served {
			t.Errorf("Serves(%s %s) = %v, want %v", c.method, c.path, got, c.served)
		}
	}
}

func TestReadRoutesOfNoOpenAPIDocument(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"empty.json": `{"paths": {}}`, "go.json": "package main\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRoutes(path); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ReadRoutes(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file: no error")
	}
}

func TestReadSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	s, err := ReadSettings(write("ok.json", `[
		{"env":"PORT","flag":"-port","default":"8080","meaning":"TCP port"},
		{"env":"THUMBD_CONCURRENCY","flag":"-concurrency","default":"","meaning":"jobs"},
		{"env":"THUMBD_DEADLINE","flag":"-deadline","default":"10s","meaning":"per thumbnail"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{"PORT": "8080", "THUMBD_CONCURRENCY": "", "THUMBD_DEADLINE": "10s"}
	if len(s) != len(want) {
		t.Fatalf("got %v, want %v", s, want)
	}
	for k, v := range want {
		if got, ok := s[k]; !ok || got != v {
			t.Errorf("%s = %q (%v), want %q", k, got, ok, v)
		}
	}
	for name, body := range map[string]string{
		"markdown.json":  "| `PORT` | `-port` | `8080` | TCP port |",
		"empty.json":     "[]",
		"nodefault.json": `[{"env":"PORT","flag":"-port","meaning":"TCP port"}]`,
		"noenv.json":     `[{"flag":"-port","default":"8080"}]`,
	} {
		if _, err := ReadSettings(write(name, body)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ReadSettings(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file: no error")
	}
}

func TestRealSettings(t *testing.T) {
	s := serviceSettings(t)
	for name, def := range map[string]string{"PORT": "8080", "THUMBD_DEADLINE": "10s", "THUMBD_SHUTDOWN_DELAY": "0s", "THUMBD_SHUTDOWN_TIMEOUT": "30s", "THUMBD_CONCURRENCY": ""} {
		if got, ok := s[name]; !ok || got != def {
			t.Errorf("thumbd settings -json: %s default %q (%v), want %q", name, got, ok, def)
		}
	}
}

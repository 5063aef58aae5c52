package validate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository root, two levels above this module.
const root = "../.."

// kubernetesOverlays maps each overlay to the image the images work builds.
var kubernetesOverlays = map[string]string{
	"k8s/overlays/slim":    "thumbd:slim",
	"k8s/overlays/scratch": "thumbd:scratch",
}

func TestEveryManifestDecodesStrictly(t *testing.T) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "k8s"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "validate" {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("found only %d manifests under k8s/: %v", len(files), files)
	}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ms, err := DecodeStrict(rel, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 {
				t.Fatal("no object in the file")
			}
		})
	}
}

func TestKubernetesOverlays(t *testing.T) {
	want := expect(t)
	for dir, image := range kubernetesOverlays {
		t.Run(dir, func(t *testing.T) {
			ms, err := Render(filepath.Join(root, dir))
			if err != nil {
				t.Fatal(err)
			}
			want := want
			want.Image = image
			for _, err := range CheckKubernetes(ms, want) {
				t.Error(err)
			}
		})
	}
}

func TestKubernetesBaseRenders(t *testing.T) {
	ms, err := Render(filepath.Join(root, "k8s/base"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range CheckKubernetes(ms, expect(t)) {
		t.Error(err)
	}
}

func TestKnativeService(t *testing.T) {
	want := expect(t)
	want.Image = "thumbd:scratch"
	data, err := os.ReadFile(filepath.Join(root, "k8s/knative/service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := DecodeStrict("k8s/knative/service.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := Render(filepath.Join(root, "k8s/knative"))
	if err != nil {
		t.Fatal(err)
	}
	for name, ms := range map[string][]Manifest{"service.yaml": decoded, "kustomize build": rendered} {
		for _, err := range CheckKnative(ms, want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// expect reads what the manifests must agree with from the repository: the
// settings tables and, once the service has it, service/routes.go.
func expect(t *testing.T) Expect {
	t.Helper()
	settings, err := ReadSettings(filepath.Join(root, "CONTRIBUTING.md"), filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	routes, err := ReadRoutes(filepath.Join(root, "service/routes.go"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Log("service/routes.go does not exist yet: probe paths are not checked against the routes (TestProbePathsAreServiceRoutes skips)")
		routes = nil
	case err != nil:
		t.Fatal(err)
	}
	return Expect{Settings: settings, Routes: routes}
}

// TestProbePathsAreServiceRoutes names the route cross-check on its own, so a
// skip is visible in the test output while service/routes.go is missing.
func TestProbePathsAreServiceRoutes(t *testing.T) {
	path := filepath.Join(root, "service/routes.go")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		t.Skip("service/routes.go does not exist yet: probe paths cannot be checked against the service's routes")
	}
	routes, err := ReadRoutes(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{healthPath, readyPath} {
		if !routes.Serves("GET", p) {
			t.Errorf("service/routes.go: addRoutes serves no GET %s, which the probes use", p)
		}
	}
	var paths []string
	for p := range routes {
		paths = append(paths, p)
	}
	t.Logf("routes in service/routes.go: %s", strings.Join(paths, " "))
}

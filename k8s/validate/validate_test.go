package validate

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
)

// root is the repository root, two levels above this module.
const root = "../.."

// kubernetesOverlays maps each overlay to the image the images work builds.
var kubernetesOverlays = map[string]string{
	"k8s/overlays/slim":    "thumbd:slim",
	"k8s/overlays/scratch": "thumbd:scratch",
	"k8s/overlays/public":  "thumbd:scratch",
	"k8s/overlays/cells":   "thumbd:scratch",
	"k8s/overlays/traced":  "thumbd:scratch",
	"k8s/overlays/storage": "thumbd:scratch",
}

func TestEveryManifestDecodesStrictly(t *testing.T) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "k8s"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// The chart's templates are manifests only once rendered:
		// TestChartRenderings decodes what they render, strictly.
		if d.IsDir() && (d.Name() == "validate" || d.Name() == "chart") {
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

// TestKnativeWithResultStore: the Knative service with its result store
// (k8s/knative-storage), which keeps thumbnails across scale-to-zero.
func TestKnativeWithResultStore(t *testing.T) {
	want := expect(t)
	want.Image = "thumbd:scratch"
	ms, err := Render(filepath.Join(root, "k8s/knative-storage"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range CheckKnative(ms, want) {
		t.Error(err)
	}
	ksvcs := all[*servingv1.Service](ms)
	if len(ksvcs) != 1 {
		t.Fatalf("%d Knative Services", len(ksvcs))
	}
	c := ksvcs[0].Spec.Template.Spec.Containers[0]
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "THUMBD_RESULT_STORE" && e.Value != "" }) {
		t.Errorf("no THUMBD_RESULT_STORE in %+v", c.Env)
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

// serviceSettings are the settings the service reads, from its config
// code: the `thumbd settings -json` file named by $THUMBD_SETTINGS_JSON
// (scripts/test-k8s.sh writes it), or else `thumbd settings -json` run
// here, once, with thumbdBinary.
func serviceSettings(t *testing.T) Settings {
	t.Helper()
	path := os.Getenv("THUMBD_SETTINGS_JSON")
	if path == "" {
		bin := thumbdBinary(t)
		// Kept beside the binary this test built; a $THUMBD_BIN's
		// directory is not ours to write in.
		path = filepath.Join(t.TempDir(), "settings.json")
		if bin == builtBinary {
			path = filepath.Join(filepath.Dir(bin), "settings.json")
		}
		if _, err := os.Stat(path); err != nil {
			cmd := exec.Command(bin, "settings", "-json")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s settings -json: %v\n%s", bin, err, stderr.String())
			}
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := ReadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// builtBinary is the thumbd binary TestMain built when $THUMBD_BIN names none.
var builtBinary string

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary != "" {
		os.RemoveAll(filepath.Dir(builtBinary))
	}
	os.Exit(code)
}

// thumbdBinary is the service's binary, which the memory check starts
// under each manifest's memory limit: $THUMBD_BIN (scripts/test-k8s.sh
// builds it), or else built here once with `go build ./service`.
func thumbdBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("THUMBD_BIN"); bin != "" {
		return bin
	}
	if builtBinary == "" {
		dir, err := os.MkdirTemp("", "thumbd-validate-")
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "thumbd")
		cmd := exec.Command("go", "build", "-o", bin, "./service")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			t.Fatalf("go build ./service: %v\n%s", err, out)
		}
		builtBinary = bin
	}
	return builtBinary
}

// expect reads what the manifests must agree with from the repository: the
// settings the service reads, its binary and its routes (service/openapi.json,
// which the service's tests hold equal to its router).
func expect(t *testing.T) Expect {
	t.Helper()
	return Expect{Settings: serviceSettings(t), Routes: serviceRoutes(t), Binary: thumbdBinary(t)}
}

func serviceRoutes(t *testing.T) Routes {
	t.Helper()
	routes, err := ReadRoutes(filepath.Join(root, "service/openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	return routes
}

// TestProbePathsAreServiceRoutes names the route cross-check on its own.
func TestProbePathsAreServiceRoutes(t *testing.T) {
	routes := serviceRoutes(t)
	for _, p := range []string{healthPath, readyPath} {
		if !routes.Serves("GET", p) {
			t.Errorf("service/openapi.json: no GET %s, which the probes use", p)
		}
	}
	var paths []string
	for p := range routes {
		paths = append(paths, p)
	}
	t.Logf("routes in service/openapi.json: %s", strings.Join(paths, " "))
}

// TestImagesMatchDockerfiles ties each manifest's image thumbd:FLAVOUR to
// Dockerfile.FLAVOUR, the file the images work builds it from (scripts/images.sh
// tags thumbd:$flavour): same user, same port.
func TestImagesMatchDockerfiles(t *testing.T) {
	pods := map[string]*corev1.PodSpec{}
	for dir := range kubernetesOverlays {
		ms, err := Render(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range all[*appsv1.Deployment](ms) {
			pods[dir] = &d.Spec.Template.Spec
		}
	}
	ms, err := Render(filepath.Join(root, "k8s/knative"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ksvc := range all[*servingv1.Service](ms) {
		pods["k8s/knative"] = &ksvc.Spec.Template.Spec.PodSpec
	}
	for dir, pod := range pods {
		t.Run(dir, func(t *testing.T) {
			image := pod.Containers[0].Image
			flavour, ok := strings.CutPrefix(image, "thumbd:")
			if !ok {
				t.Fatalf("image %q is not thumbd:FLAVOUR", image)
			}
			name := "Dockerfile." + flavour
			data, err := os.ReadFile(filepath.Join(root, name))
			if errors.Is(err, fs.ErrNotExist) {
				t.Skipf("%s does not exist (yet): the image's user and port cannot be compared", name)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range CheckDockerfile(name, data, pod) {
				t.Error(err)
			}
		})
	}
}

func TestCheckDockerfileCatchesMismatches(t *testing.T) {
	uid, gid := int64(65532), int64(65532)
	pod := &corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid},
		Containers:      []corev1.Container{{Name: "thumbd", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
	}
	cases := map[string]struct{ dockerfile, want string }{
		"matching":    {"FROM x AS b\nUSER 0\nFROM scratch\nUSER 65532:65532\nEXPOSE 8080\n", ""},
		"other user":  {"FROM scratch\nUSER 1000:1000\nEXPOSE 8080\n", "USER 1000:1000, but the pod sets runAsUser 65532"},
		"other group": {"FROM scratch\nUSER 65532:1\nEXPOSE 8080\n", "runAsGroup 65532"},
		"no user":     {"FROM x\nUSER 65532\nFROM scratch\nEXPOSE 8080\n", "has no USER"},
		"other port":  {"FROM scratch\nUSER 65532\nEXPOSE 9090/tcp\n", "EXPOSEs 9090"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := CheckDockerfile("Dockerfile.test", []byte(tc.dockerfile), pod)
			if tc.want == "" {
				for _, err := range errs {
					t.Error(err)
				}
				return
			}
			requireComplaint(t, errs, tc.want)
		})
	}
}

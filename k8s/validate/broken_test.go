package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The checks must be able to fail: each case breaks one thing in a copy of the
// manifests and expects the matching complaint.

const fakeRoutes = `package main

func addRoutes(r chi.Router, d deps) {
	r.Get("/health", h)
	r.Get("/ready", h)
	r.Post("/thumbnail", h)
}
`

type breakage struct {
	name     string
	file     string // under k8s/
	old, new string
	want     string // a substring of one of the errors
}

func TestBrokenKubernetesManifestsFail(t *testing.T) {
	cases := []breakage{
		{"unknown field", "base/deployment.yaml", "automountServiceAccountToken: false", "automountServiceAccountToken: false\n      shareProcessNamespaces: true", "unknown field"},
		{"field name in the wrong case", "base/deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true", "unknown field"},
		{"duplicate field", "base/hpa.yaml", "  minReplicas: 2\n", "  minReplicas: 2\n  minReplicas: 3\n", "already defined"},
		{"probe path not a route", "base/deployment.yaml", "path: /ready", "path: /readyz", `"/readyz" is not a GET route`},
		{"liveness on the wrong path", "base/deployment.yaml", "livenessProbe:\n            httpGet:\n              path: /health", "livenessProbe:\n            httpGet:\n              path: /ready", "livenessProbe path \"/ready\""},
		{"latest image", "overlays/scratch/kustomization.yaml", "newTag: scratch", "newTag: latest", "never :latest"},
		{"other flavour's image", "overlays/scratch/kustomization.yaml", "newTag: scratch", "newTag: slim", `want "thumbd:scratch"`},
		{"env var the service does not read", "base/settings.env", "THUMBD_QUEUE=8", "THUMBD_QUEUE=8\nTHUMBD_WORKERS=4", "THUMBD_WORKERS is not a setting of the service"},
		{"grace period too short", "base/deployment.yaml", "terminationGracePeriodSeconds: 40", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds 30 s <"},
		{"delay outgrows the grace period", "base/settings.env", "THUMBD_SHUTDOWN_DELAY=5s", "THUMBD_SHUTDOWN_DELAY=15s", "THUMBD_SHUTDOWN_DELAY 15s"},
		{"privilege escalation", "base/deployment.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation: false"},
		{"root allowed", "base/deployment.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot: true"},
		{"capabilities kept", "base/deployment.yaml", `drop: ["ALL"]`, `drop: ["NET_RAW"]`, "drop ALL capabilities"},
		{"seccomp unconfined", "base/deployment.yaml", "type: RuntimeDefault", "type: Unconfined", "seccompProfile must be RuntimeDefault"},
		{"writable root filesystem", "base/deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem: true"},
		{"host port", "base/deployment.yaml", "containerPort: 8080", "containerPort: 8080\n              hostPort: 8080", "hostPort 8080"},
		{"container port is not PORT", "base/deployment.yaml", "containerPort: 8080", "containerPort: 9090", "no containerPort 8080"},
		{"PORT moved without the container port", "base/settings.env", "THUMBD_QUEUE=8", "THUMBD_QUEUE=8\nPORT=9000", "no containerPort 9000"},
		{"service targets another port", "base/service.yaml", "targetPort: http", "targetPort: 9090", "targets 9090"},
		{"one replica", "base/hpa.yaml", "minReplicas: 2", "minReplicas: 1", "minReplicas must be at least 2"},
		{"service links", "base/deployment.yaml", "enableServiceLinks: false", "enableServiceLinks: true", "enableServiceLinks must be false"},
		{"concurrency above the CPU limit", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=4", "must equal the CPU limit"},
		{"PDB selects nothing", "base/pdb.yaml", "    matchLabels:\n      app.kubernetes.io/name: thumbd", "    matchLabels:\n      app.kubernetes.io/name: other", "PodDisruptionBudget thumbd does not select"},
		{"replicas fixed", "base/deployment.yaml", "  selector:\n", "  replicas: 3\n  selector:\n", "sets replicas"},
		{"cells without their memory", "base/settings.env", "THUMBD_QUEUE=8", "THUMBD_QUEUE=8\nTHUMBD_ENGINE=cells", "cells mode: memory limit 1280Mi is below what the pod may hold"},
	}
	runBreakages(t, cases, "k8s/overlays/scratch", CheckKubernetes)
}

func TestBrokenCellsOverlayFails(t *testing.T) {
	cases := []breakage{
		{"limit below the cells", "overlays/cells/memory.yaml", "memory: 1536Mi", "memory: 1Gi", "cells mode: memory limit 1Gi is below what the pod may hold: supervisor 40 MiB + bodies 10 x 20 MiB + busy cells 2 x max(job peak 470 MiB, THUMBD_CELL_MAX_RSS 128 MiB) + spares 1 x 128 MiB = 1308 MiB"},
		{"cells keep more", "overlays/cells/settings.env", "THUMBD_CELL_MAX_RSS=134217728", "THUMBD_CELL_MAX_RSS=536870912", "memory limit 1536Mi is below what the pod may hold: supervisor 40 MiB + bodies 10 x 20 MiB + busy cells 2 x max(job peak 470 MiB, THUMBD_CELL_MAX_RSS 512 MiB) + spares 1 x 512 MiB = 1776 MiB"},
		{"more spares", "overlays/cells/settings.env", "THUMBD_CELL_SPARES=1", "THUMBD_CELL_SPARES=4", "+ spares 4 x 128 MiB = 1692 MiB"},
		{"larger source budget", "base/settings.env", "THUMBD_SOURCE_BUDGET=209715200", "THUMBD_SOURCE_BUDGET=629145600", "+ bodies 30 x 20 MiB"},
		{"source budget left to its default", "base/settings.env", "THUMBD_SOURCE_BUDGET=209715200\n", "", "+ bodies 32 x 20 MiB"},
		{"larger sources", "overlays/cells/settings.env", "THUMBD_ENGINE=cells", "THUMBD_ENGINE=cells\nTHUMBD_MAX_PIXELS=100000000", "THUMBD_MAX_PIXELS 100000000 is above 40000000, the limit the per-job peak"},
		{"larger outputs", "overlays/cells/settings.env", "THUMBD_ENGINE=cells", "THUMBD_ENGINE=cells\nTHUMBD_MAX_SIDE=8192", "THUMBD_MAX_SIDE 8192 is above 4096"},
		{"request below the pod at rest", "overlays/cells/memory.yaml", "memory: 320Mi", "memory: 64Mi", "memory request 64Mi is below what the pod holds at rest: supervisor 16 MiB + cells 3 x 19 MiB = 73 MiB"},
		{"concurrency left to the CPUs", "base/settings.env", "THUMBD_CONCURRENCY=2\n", "", "THUMBD_CONCURRENCY must be set: the memory limit is sized for that many cells"},
		{"spares not a number", "overlays/cells/settings.env", "THUMBD_CELL_SPARES=1", "THUMBD_CELL_SPARES=one", `THUMBD_CELL_SPARES "one" is not a number`},
	}
	runBreakages(t, cases, "k8s/overlays/cells", CheckKubernetes)
}

func TestBrokenPublicOverlayFails(t *testing.T) {
	cases := []breakage{
		{"no egress policy", "overlays/public/kustomization.yaml", "  - networkpolicy.yaml\n", "", "no NetworkPolicy limits the pods' egress"},
		{"private range let out", "overlays/public/networkpolicy.yaml", "              - 10.0.0.0/8\n", "", "lets the pods reach 10.0.0.1"},
		{"metadata let out", "overlays/public/networkpolicy.yaml", "              - 169.254.0.0/16\n", "", "lets the pods reach 169.254.169.254"},
		{"ULA let out", "overlays/public/networkpolicy.yaml", "              - fc00::/7\n", "", "lets the pods reach fd00::1"},
		{"egress anywhere", "overlays/public/networkpolicy.yaml", "  egress:\n", "  egress:\n    - {}\n", "egress rule to anywhere"},
		{"policy selects nothing", "overlays/public/networkpolicy.yaml", "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: thumbd", "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: other", "NetworkPolicy thumbd-egress does not select"},
		{"env var the service does not read", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_POST=false", "THUMBD_POST is not a setting of the service"},
		{"POST left open", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=true", "with POST open"},
		{"POST left at its default", "overlays/public/settings.env", "THUMBD_UPLOADS=false\n", "", "with POST open"},
		{"benchmark routes left on", "overlays/public/settings.env", "THUMBD_BENCH_ROUTES=false", "THUMBD_BENCH_ROUTES=true", "benchmark routes"},
		{"benchmark routes at their default", "overlays/public/settings.env", "THUMBD_BENCH_ROUTES=false\n", "", "benchmark routes"},
		{"GET unlimited", "overlays/public/kustomization.yaml", "  - path: signing-keys.yaml\n", "", "serves any GET"},
		{"key in the ConfigMap", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nTHUMBD_SIGNING_KEYS=000102030405060708090a0b0c0d0e0f", "must come from a Secret"},
		{"key as a literal", "overlays/public/signing-keys.yaml", "              valueFrom:\n                secretKeyRef:\n                  name: thumbd-signing-keys\n                  key: keys", "              value: 000102030405060708090a0b0c0d0e0f", "must come from a Secret"},
		{"loopback origins let through", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nTHUMBD_ORIGINS_ALLOW_LOOPBACK=true", "development and tests only"},
	}
	runBreakages(t, cases, "k8s/overlays/public", CheckKubernetes)
}

// The public overlay's other way of limiting GETs, presets only without
// signing (k8s/README.md), passes the checks.
func TestPublicOverlayWithPresetsOnly(t *testing.T) {
	tmp := brokenCopy(t, breakage{file: "overlays/public/kustomization.yaml", old: "  - path: signing-keys.yaml\n", new: ""})
	env := filepath.Join(tmp, "k8s/overlays/public/settings.env")
	data, err := os.ReadFile(env)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "THUMBD_PRESETS=small:w=128&h=128;hero:w=1200&format=webp\nTHUMBD_PRESETS_ONLY=true\n"...)
	if err := os.WriteFile(env, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := Render(filepath.Join(tmp, "k8s/overlays/public"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range CheckKubernetes(ms, Expect{Image: "thumbd:scratch", Settings: serviceSettings(t), Routes: routesForTest(t, tmp)}) {
		t.Error(err)
	}
}

func TestBrokenKnativeServiceFails(t *testing.T) {
	cases := []breakage{
		{"unknown field", "knative/service.yaml", "containerConcurrency: 2", "containerConcurency: 2", "unknown field"},
		{"field Knative forbids", "knative/service.yaml", "          image: thumbd:scratch\n", "          image: thumbd:scratch\n          stdin: true\n", "Knative rejects"},
		{"PORT set", "knative/service.yaml", "          env:\n", "          env:\n            - name: PORT\n              value: \"8080\"\n", "Knative rejects"},
		{"concurrency not tied", "knative/service.yaml", "containerConcurrency: 2", "containerConcurrency: 4", "containerConcurrency must equal THUMBD_CONCURRENCY 2"},
		{"concurrency moved alone", "knative/service.yaml", "              value: \"2\"", "              value: \"3\"", "containerConcurrency must equal THUMBD_CONCURRENCY 3"},
		// Only containerConcurrency requests are in the pod: 2 bodies, not
		// the 34 the service's default queue would admit.
		{"cells without their memory", "knative/service.yaml", "          env:\n", "          env:\n            - name: THUMBD_ENGINE\n              value: cells\n", "cells mode: memory limit 1Gi is below what the pod may hold: supervisor 40 MiB + bodies 2 x 20 MiB + busy cells 2 x max(job peak 470 MiB, THUMBD_CELL_MAX_RSS 256 MiB) + spares 1 x 256 MiB = 1276 MiB"},
		{"target not tied", "knative/service.yaml", `autoscaling.knative.dev/target: "2"`, `autoscaling.knative.dev/target: "10"`, "autoscaling.knative.dev/target \"10\""},
		{"no scale to zero", "knative/service.yaml", `min-scale: "0"`, `min-scale: "1"`, "min-scale must be \"0\""},
		{"timeout below the deadline", "knative/service.yaml", "timeoutSeconds: 30", "timeoutSeconds: 10", "timeoutSeconds must exceed THUMBD_DEADLINE 10s"},
		{"startup probe path", "knative/service.yaml", "path: /health", "path: /healthz", "startupProbe path \"/healthz\""},
		{"latest image", "knative/service.yaml", "image: thumbd:scratch", "image: thumbd:latest", "never :latest"},
		{"untagged image", "knative/service.yaml", "image: thumbd:scratch", "image: thumbd", "has no tag"},
		{"root allowed", "knative/service.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot: true"},
		{"env var the service does not read", "knative/service.yaml", "            - name: THUMBD_CONCURRENCY\n", "            - name: GOMAXPROCS\n              value: \"2\"\n            - name: THUMBD_CONCURRENCY\n", "GOMAXPROCS is not a setting of the service"},
	}
	runBreakages(t, cases, "k8s/knative", CheckKnative)
}

// runBreakages renders dir in a broken copy of k8s/ for each case and
// requires check (or the rendering) to complain as the case expects.
func runBreakages(t *testing.T, cases []breakage, dir string, check func([]Manifest, Expect) []error) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp := brokenCopy(t, tc)
			want := Expect{Image: "thumbd:scratch", Settings: serviceSettings(t), Routes: routesForTest(t, tmp)}
			ms, err := Render(filepath.Join(tmp, dir))
			errs := []error{err}
			if err == nil {
				errs = check(ms, want)
			}
			requireComplaint(t, errs, tc.want)
		})
	}
}

// brokenCopy copies k8s/ (without this module) into a temporary directory and
// applies the breakage, which must change something.
func brokenCopy(t *testing.T, tc breakage) string {
	t.Helper()
	tmp := t.TempDir()
	if err := os.CopyFS(filepath.Join(tmp, "k8s"), os.DirFS(filepath.Join(root, "k8s"))); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(tmp, "k8s/validate")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tmp, "k8s", tc.file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), tc.old) {
		t.Fatalf("k8s/%s no longer contains %q: update this case", tc.file, tc.old)
	}
	broken := strings.Replace(string(data), tc.old, tc.new, 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	return tmp
}

func requireComplaint(t *testing.T, errs []error, want string) {
	t.Helper()
	for _, err := range errs {
		if strings.Contains(err.Error(), want) {
			return
		}
	}
	t.Errorf("no error contains %q; got %d:", want, len(errs))
	for _, err := range errs {
		t.Log("  ", err)
	}
}

func routesForTest(t *testing.T, dir string) Routes {
	t.Helper()
	path := filepath.Join(dir, "routes.go")
	if err := os.WriteFile(path, []byte(fakeRoutes), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadRoutes(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

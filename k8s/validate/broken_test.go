package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The checks must be able to fail: each case breaks one thing in a copy of the
// manifests and expects the matching complaint.

const fakeRoutes = `{"paths": {"/health": {"get": {}}, "/ready": {"get": {}}, "/thumbnail": {"post": {}}}}`

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
		{"env var the service does not read", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nTHUMBD_WORKERS=4", "THUMBD_WORKERS is not a setting of the service"},
		{"grace period too short", "base/deployment.yaml", "terminationGracePeriodSeconds: 40", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds 30 s <"},
		{"delay outgrows the grace period", "base/settings.env", "THUMBD_SHUTDOWN_DELAY=5s", "THUMBD_SHUTDOWN_DELAY=15s", "THUMBD_SHUTDOWN_DELAY 15s"},
		{"privilege escalation", "base/deployment.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation: false"},
		{"root allowed", "base/deployment.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot: true"},
		{"capabilities kept", "base/deployment.yaml", `drop: ["ALL"]`, `drop: ["NET_RAW"]`, "drop ALL capabilities"},
		{"seccomp unconfined", "base/deployment.yaml", "type: RuntimeDefault", "type: Unconfined", "seccompProfile must be RuntimeDefault"},
		{"writable root filesystem", "base/deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem: true"},
		{"host port", "base/deployment.yaml", "containerPort: 8080", "containerPort: 8080\n              hostPort: 8080", "hostPort 8080"},
		{"container port is not PORT", "base/deployment.yaml", "containerPort: 8080", "containerPort: 9090", "no containerPort 8080"},
		{"PORT moved without the container port", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nPORT=9000", "no containerPort 9000"},
		{"service targets another port", "base/service.yaml", "targetPort: http", "targetPort: 9090", "targets 9090"},
		{"one replica", "base/hpa.yaml", "minReplicas: 2", "minReplicas: 1", "minReplicas must be at least 2"},
		{"service links", "base/deployment.yaml", "enableServiceLinks: false", "enableServiceLinks: true", "enableServiceLinks must be false"},
		{"concurrency above the CPU limit", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=4", "must equal the CPU limit"},
		{"PDB selects nothing", "base/pdb.yaml", "    matchLabels:\n      app.kubernetes.io/name: thumbd", "    matchLabels:\n      app.kubernetes.io/name: other", "PodDisruptionBudget thumbd does not select"},
		{"replicas fixed", "base/deployment.yaml", "  selector:\n", "  replicas: 3\n  selector:\n", "sets replicas"},
		// Probes and the scrape go to the admin port (THUMBD_ADMIN_PORT).
		{"startup probe on the serving port", "base/deployment.yaml", "              port: admin\n            periodSeconds: 1\n", "              port: http\n            periodSeconds: 1\n", "startupProbe port http is not the admin port (THUMBD_ADMIN_PORT) 8081"},
		{"liveness on the serving port", "base/deployment.yaml", "livenessProbe:\n            httpGet:\n              path: /health\n              port: admin", "livenessProbe:\n            httpGet:\n              path: /health\n              port: 8080", "livenessProbe port 8080 is not the admin port (THUMBD_ADMIN_PORT) 8081"},
		{"admin port not declared", "base/settings.env", "THUMBD_ADMIN_PORT=8081", "THUMBD_ADMIN_PORT=8082", "declares no containerPort 8082, the admin port"},
		{"admin port is PORT", "base/settings.env", "THUMBD_ADMIN_PORT=8081", "THUMBD_ADMIN_PORT=8080", `THUMBD_ADMIN_PORT "8080": want a port 1..65535 other than the serving port 8080`},
		{"admin port off, probes left on it", "base/settings.env", "THUMBD_ADMIN_PORT=8081\n", "", "readinessProbe port admin is not the service's port (PORT) 8080"},
		{"scrape on the serving port", "base/deployment.yaml", `prometheus.io/port: "8081"`, `prometheus.io/port: "8080"`, `prometheus.io/port "8080" is not the admin port (THUMBD_ADMIN_PORT) 8081`},
		{"not scraped", "base/deployment.yaml", "        prometheus.io/scrape: \"true\"\n", "", "the pods need prometheus.io/scrape"},
		{"scrape path", "base/deployment.yaml", "prometheus.io/path: /metrics", "prometheus.io/path: /stats", `prometheus.io/path "/stats", want /metrics`},
		// The memory limit is the one memory knob: what the service derives
		// from it is not written by hand.
		{"queue by hand", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nTHUMBD_QUEUE=8", "sets THUMBD_QUEUE: the service derives its memory settings"},
		{"source budget by hand", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nTHUMBD_SOURCE_BUDGET=209715200", "sets THUMBD_SOURCE_BUDGET: the service derives"},
		{"jobs' budget by hand", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nTHUMBD_MEMORY_BUDGET=536870912", "sets THUMBD_MEMORY_BUDGET: the service derives"},
		{"memory limit as a setting", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nTHUMBD_MEMORY_LIMIT=1342177280", "sets THUMBD_MEMORY_LIMIT: the service derives"},
		{"GOMEMLIMIT by hand", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nGOMEMLIMIT=300MiB", "sets GOMEMLIMIT: the service derives"},
		{"GOGC by hand", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nGOGC=50", "sets GOGC: the service derives"},
		{"no memory limit", "base/deployment.yaml", "              memory: 1280Mi\n", "", "memory request and limit must both be set"},
		{"memory request above the limit", "base/deployment.yaml", "memory: 256Mi", "memory: 2Gi", "memory request 2Gi exceeds its limit 1280Mi"},
		// The binary's own figure: 900 MiB is below what the largest job the
		// default limits allow needs in process (937 MiB).
		{"limit below the largest job", "base/deployment.yaml", "memory: 1280Mi", "memory: 900Mi", "memory limit 900Mi does not serve the largest job the settings allow; thumbd says at start: memory limit 900 MiB: the largest job"},
		{"larger sources than the limit serves", "base/settings.env", "THUMBD_CONCURRENCY=2", "THUMBD_CONCURRENCY=2\nTHUMBD_MAX_PIXELS=200000000", "memory limit 1280Mi does not serve the largest job the settings allow"},
		{"limit the service cannot start under", "base/deployment.yaml", "memory: 1280Mi", "memory: 32Mi", "did not start and log its memory plan"},
		// Who may connect: the ingress controller to the serving port,
		// the monitoring namespace to the admin port, nobody else.
		{"no ingress policy", "base/kustomization.yaml", "  - networkpolicy.yaml\n", "", "no NetworkPolicy limits who may connect to the pods"},
		{"ingress policy selects nothing", "base/networkpolicy.yaml", "      app.kubernetes.io/name: thumbd\n  policyTypes", "      app.kubernetes.io/name: other\n  policyTypes", "NetworkPolicy thumbd-ingress does not select"},
		{"admin port reached by nobody", "base/networkpolicy.yaml", "          port: admin\n", "          port: http\n", "no NetworkPolicy ingress rule lets anyone reach the admin port (THUMBD_ADMIN_PORT) 8081"},
		{"serving port reached by nobody", "base/networkpolicy.yaml", "          port: http\n", "          port: 9999\n", "no NetworkPolicy ingress rule lets anyone reach the serving port (PORT) 8080"},
		{"the controller reaches the admin port", "base/networkpolicy.yaml", "      ports:\n        - protocol: TCP\n          port: http\n", "", "ingress rule 1 lets the same sources reach the serving port 8080 and the admin port 8081"},
		{"ingress from anywhere", "base/networkpolicy.yaml", "    - from:\n        - namespaceSelector:\n            matchLabels:\n              kubernetes.io/metadata.name: ingress-nginx\n      ports:", "    - ports:", "ingress rule 1 lets any source in"},
		{"ingress from every namespace", "base/networkpolicy.yaml", "            matchLabels:\n              kubernetes.io/metadata.name: monitoring\n", "            matchLabels: {}\n", "ingress rule 2 lets every pod of every namespace in"},
	}
	runBreakages(t, cases, "k8s/overlays/scratch", CheckKubernetes)
}

func TestBrokenCellsOverlayFails(t *testing.T) {
	cases := []breakage{
		// The service counts the cells' idle memory: a limit that serves the
		// largest job in process (937 MiB and above) does not in cells mode (983).
		{"limit that holds the job in process only", "base/deployment.yaml", "memory: 1280Mi", "memory: 960Mi", "memory limit 960Mi does not serve the largest job the settings allow"},
		{"more spare cells than the limit serves", "overlays/cells/settings.env", "THUMBD_ENGINE=cells", "THUMBD_ENGINE=cells\nTHUMBD_CELL_SPARES=24", "memory limit 1280Mi does not serve the largest job the settings allow"},
		{"GOMEMLIMIT by hand", "overlays/cells/settings.env", "THUMBD_ENGINE=cells", "THUMBD_ENGINE=cells\nGOMEMLIMIT=300MiB", "sets GOMEMLIMIT: the service derives"},
	}
	runBreakages(t, cases, "k8s/overlays/cells", CheckKubernetes)
}

// A misspelt OpenTelemetry variable is caught like a thumbd setting's: the
// SDK would ignore it, and tracing would silently stay off.
func TestBrokenTracedOverlayFails(t *testing.T) {
	cases := []breakage{
		{"misspelt endpoint", "overlays/traced/settings.env", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_ENDPIONT=", "OTEL_EXPORTER_OTLP_ENDPIONT is not a setting of the service"},
	}
	runBreakages(t, cases, "k8s/overlays/traced", CheckKubernetes)
}

// The limit of the cells case above serves the largest job in process: the
// difference is the cells' memory, which the service counts.
func TestLimitForInProcessOnly(t *testing.T) {
	tmp := brokenCopy(t, breakage{file: "base/deployment.yaml", old: "memory: 1280Mi", new: "memory: 960Mi"})
	ms, err := Render(filepath.Join(tmp, "k8s/overlays/scratch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range CheckKubernetes(ms, Expect{Image: "thumbd:scratch", Settings: serviceSettings(t), Routes: routesForTest(t, tmp), Binary: thumbdBinary(t)}) {
		t.Error(err)
	}
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
		{"unsigned results stored", "overlays/public/kustomization.yaml", "      - settings.env\npatches:\n  - path: signing-keys.yaml\n", "      - settings.env\n    literals:\n      - THUMBD_RESULT_STORE=s3://thumbd-results/thumbs\n", "stores results of unsigned URLs"},
		{"store key in the ConfigMap", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nTHUMBD_RESULT_STORE_KEY=000102030405060708090a0b0c0d0e0f", "THUMBD_RESULT_STORE_KEY must come from a Secret"},
		{"OTLP headers in the ConfigMap", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nOTEL_EXPORTER_OTLP_HEADERS=api-key=abc", "OTEL_EXPORTER_OTLP_HEADERS must come from a Secret"},
		{"loopback origins let through", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nTHUMBD_ORIGINS_ALLOW_LOOPBACK=true", "development and tests only"},
		// imgproxy's keys and salts are secrets, in either spelling, and
		// its endpoint is signed where thumbd's URLs are.
		{"imgproxy key in the ConfigMap", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nTHUMBD_IMGPROXY_KEY=aa", "THUMBD_IMGPROXY_KEY must come from a Secret"},
		{"imgproxy salt in the ConfigMap", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nTHUMBD_IMGPROXY_SALT=bb", "THUMBD_IMGPROXY_SALT must come from a Secret"},
		{"imgproxy keys in the ConfigMap", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nTHUMBD_IMGPROXY_KEYS=aa", "THUMBD_IMGPROXY_KEYS must come from a Secret"},
		{"imgproxy salts as a literal", "overlays/public/signing-keys.yaml", "          env:\n", "          env:\n            - name: THUMBD_IMGPROXY_SALTS\n              value: bb\n", "THUMBD_IMGPROXY_SALTS must come from a Secret"},
		{"imgproxy unsigned beside signed URLs", "overlays/public/settings.env", "THUMBD_UPLOADS=false", "THUMBD_UPLOADS=false\nTHUMBD_IMGPROXY=true", "serves imgproxy's URLs unsigned (THUMBD_IMGPROXY=true without THUMBD_IMGPROXY_KEY) beside signed URLs"},
	}
	runBreakages(t, cases, "k8s/overlays/public", CheckKubernetes)
}

// An imgproxy endpoint beside signed URLs passes when it is signed (its key
// and salt from a Secret) or unsigned on purpose (THUMBD_IMGPROXY_UNSIGNED).
func TestPublicOverlayWithImgproxy(t *testing.T) {
	for name, tc := range map[string]breakage{
		"signed": {file: "overlays/public/signing-keys.yaml", old: "          env:\n", new: "          env:\n" +
			"            - name: THUMBD_IMGPROXY_KEY\n              valueFrom:\n                secretKeyRef:\n                  name: thumbd-imgproxy\n                  key: key\n" +
			"            - name: THUMBD_IMGPROXY_SALT\n              valueFrom:\n                secretKeyRef:\n                  name: thumbd-imgproxy\n                  key: salt\n"},
		"unsigned on purpose": {file: "overlays/public/settings.env", old: "THUMBD_UPLOADS=false", new: "THUMBD_UPLOADS=false\nTHUMBD_IMGPROXY_UNSIGNED=true"},
	} {
		t.Run(name, func(t *testing.T) { publicOverlayPasses(t, tc, "THUMBD_IMGPROXY=true\n") })
	}
}

// The storage overlay's credentials come from a Secret, and its settings
// are the service's.
func TestBrokenStorageOverlayFails(t *testing.T) {
	cases := []breakage{
		{"secret key in the ConfigMap", "overlays/storage/settings.env", "THUMBD_RESULT_STORE_TIMEOUT=200ms", "THUMBD_RESULT_STORE_TIMEOUT=200ms\nAWS_SECRET_ACCESS_KEY=abc", "AWS_SECRET_ACCESS_KEY must come from a Secret"},
		{"session token in the ConfigMap", "overlays/storage/settings.env", "THUMBD_RESULT_STORE_TIMEOUT=200ms", "THUMBD_RESULT_STORE_TIMEOUT=200ms\nAWS_SESSION_TOKEN=abc", "AWS_SESSION_TOKEN must come from a Secret"},
		{"secret key as a literal", "overlays/storage/credentials.yaml", "              valueFrom:\n                secretKeyRef:\n                  name: thumbd-storage\n                  key: secret-access-key", "              value: abc", "AWS_SECRET_ACCESS_KEY must come from a Secret"},
		{"misspelt store", "overlays/storage/settings.env", "THUMBD_RESULT_STORE=", "THUMBD_RESULTS_STORE=", "THUMBD_RESULTS_STORE is not a setting of the service"},
	}
	runBreakages(t, cases, "k8s/overlays/storage", CheckKubernetes)
	runBreakages(t, []breakage{
		{"secret key as a literal", "knative-storage/kustomization.yaml", "          valueFrom:\n            secretKeyRef:\n              name: thumbd-storage\n              key: secret-access-key", "          value: abc", "AWS_SECRET_ACCESS_KEY must come from a Secret"},
	}, "k8s/knative-storage", CheckKnative)
}

// The public overlay's other way of limiting GETs, presets only without
// signing (k8s/README.md), passes the checks.
func TestPublicOverlayWithPresetsOnly(t *testing.T) {
	publicOverlayPasses(t, breakage{file: "overlays/public/kustomization.yaml", old: "  - path: signing-keys.yaml\n", new: ""},
		"THUMBD_PRESETS=small:w=128&h=128;hero:w=1200&format=webp\nTHUMBD_PRESETS_ONLY=true\n")
}

// publicOverlayPasses changes the public overlay in a copy as tc says, adds
// settings to its settings.env, and requires the checks to pass.
func publicOverlayPasses(t *testing.T, tc breakage, settings string) {
	t.Helper()
	tmp := brokenCopy(t, tc)
	env := filepath.Join(tmp, "k8s/overlays/public/settings.env")
	data, err := os.ReadFile(env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(env, append(data, settings...), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := Render(filepath.Join(tmp, "k8s/overlays/public"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range CheckKubernetes(ms, Expect{Image: "thumbd:scratch", Settings: serviceSettings(t), Routes: routesForTest(t, tmp), Binary: thumbdBinary(t)}) {
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
		{"limit below the largest job", "knative/service.yaml", "memory: 1280Mi", "memory: 900Mi", "memory limit 900Mi does not serve the largest job the settings allow"},
		{"cells with many spares", "knative/service.yaml", "          env:\n", "          env:\n            - name: THUMBD_ENGINE\n              value: cells\n            - name: THUMBD_CELL_SPARES\n              value: \"24\"\n", "memory limit 1280Mi does not serve the largest job the settings allow"},
		{"source budget by hand", "knative/service.yaml", "          env:\n", "          env:\n            - name: THUMBD_SOURCE_BUDGET\n              value: \"41943040\"\n", "sets THUMBD_SOURCE_BUDGET: the service derives"},
		{"target not tied", "knative/service.yaml", `autoscaling.knative.dev/target: "2"`, `autoscaling.knative.dev/target: "10"`, "autoscaling.knative.dev/target \"10\""},
		{"no scale to zero", "knative/service.yaml", `min-scale: "0"`, `min-scale: "1"`, "min-scale must be \"0\""},
		{"timeout below the deadline", "knative/service.yaml", "timeoutSeconds: 30", "timeoutSeconds: 10", "timeoutSeconds must exceed THUMBD_DEADLINE 10s"},
		// Knative probes the declared port; only the scrape goes to the admin port.
		{"startup probe on the admin port", "knative/service.yaml", "              path: /health\n              port: 8080\n            periodSeconds: 1", "              path: /health\n              port: 8081\n            periodSeconds: 1", "startupProbe port 8081 is not the serving port (containerPort) 8080"},
		{"admin port the queue-proxy holds", "knative/service.yaml", `value: "8081"`, `value: "9090"`, "THUMBD_ADMIN_PORT 9090 is a port Knative's queue-proxy or profiling holds"},
		{"scrape on the serving port", "knative/service.yaml", `prometheus.io/port: "8081"`, `prometheus.io/port: "8080"`, `prometheus.io/port "8080" is not the admin port (THUMBD_ADMIN_PORT) 8081`},
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
			want := Expect{Image: "thumbd:scratch", Settings: serviceSettings(t), Routes: routesForTest(t, tmp), Binary: thumbdBinary(t)}
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
	path := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(path, []byte(fakeRoutes), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadRoutes(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

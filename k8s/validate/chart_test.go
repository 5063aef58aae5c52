package validate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

const chartDir = "k8s/chart"

// chartRenderings are the chart's values files the tests render (under
// k8s/chart; "" is its defaults), each with the image it must give and
// the kustomize overlay that must render the same pod from the same
// settings ("": none, its values have no overlay of their own).
var chartRenderings = []struct {
	name, values, image, overlay string
}{
	{"defaults", "", "thumbd:slim", "k8s/overlays/slim"},
	{"scratch", "ci/scratch-values.yaml", "thumbd:scratch", "k8s/overlays/scratch"},
	{"cells", "ci/cells-values.yaml", "thumbd:scratch", "k8s/overlays/cells"},
	{"s3 store", "ci/s3-values.yaml", "thumbd:scratch", "k8s/overlays/storage"},
	{"public signed", "ci/public-values.yaml", "thumbd:scratch", "k8s/overlays/public"},
	{"traced", "ci/traced-values.yaml", "thumbd:scratch", "k8s/overlays/traced"},
	{"directories", "ci/directory-values.yaml", "registry.example.com/thumbd:1.4.0-slim", ""},
	{"a released chart", "ci/release-values.yaml", "registry.example.com/thumbd@sha256:" + strings.Repeat("5c", 32), ""},
}

// helmBinary is $THUMBD_HELM (scripts/test-k8s.sh builds it), or else
// scripts/build-helm.sh's binary, built once and cached: never a skip.
func helmBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("THUMBD_HELM"); bin != "" {
		return bin
	}
	cmd := exec.Command("scripts/build-helm.sh")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/build-helm.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

func valuesFiles(chart, values string) []string {
	if values == "" {
		return nil
	}
	return []string{filepath.Join(chart, values)}
}

// TestChartRenderings: `helm lint --strict` passes on each values file, and
// what `helm template` renders passes the checks every kustomize overlay
// passes (CheckKubernetes).
func TestChartRenderings(t *testing.T) {
	helm, want := helmBinary(t), expect(t)
	chart := filepath.Join(root, chartDir)
	for _, r := range chartRenderings {
		t.Run(r.name, func(t *testing.T) {
			if err := LintChart(helm, chart, valuesFiles(chart, r.values)...); err != nil {
				t.Fatal(err)
			}
			ms, err := RenderChart(helm, chart, "thumbd", valuesFiles(chart, r.values)...)
			if err != nil {
				t.Fatal(err)
			}
			want := want
			want.Image = r.image
			for _, err := range CheckKubernetes(ms, want) {
				t.Error(err)
			}
		})
	}
}

// TestChartMatchesKustomize holds the chart to the kustomize base: each
// values file and the overlay of the same settings render the same pod
// (containers, resolved env, probes, limits, security contexts) and the
// same Service, HPA, PDB and NetworkPolicy specs.
func TestChartMatchesKustomize(t *testing.T) {
	helm := helmBinary(t)
	for _, r := range chartRenderings {
		if r.overlay == "" {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			for _, err := range chartDrift(t, helm, root, r.values, r.overlay) {
				t.Error(err)
			}
		})
	}
}

func chartDrift(t *testing.T, helm, dir, values, overlay string) []error {
	t.Helper()
	chart := filepath.Join(dir, chartDir)
	fromChart, err := RenderChart(helm, chart, "thumbd", valuesFiles(chart, values)...)
	if err != nil {
		return []error{err}
	}
	fromKustomize, err := Render(filepath.Join(dir, overlay))
	if err != nil {
		return []error{err}
	}
	return CompareRenderings("the chart", fromChart, overlay, fromKustomize)
}

// The drift test must be able to fail: a change to either side alone is
// named.
func TestChartDriftIsCaught(t *testing.T) {
	helm := helmBinary(t)
	cases := []struct {
		breakage
		values, overlay string
	}{
		{breakage{"chart's liveness timeout", "chart/templates/deployment.yaml", "timeoutSeconds: 2", "timeoutSeconds: 3", "LivenessProbe differs"}, "", "k8s/overlays/slim"},
		{breakage{"base's readiness period", "base/deployment.yaml", "periodSeconds: 2", "periodSeconds: 3", "ReadinessProbe differs"}, "", "k8s/overlays/slim"},
		{breakage{"a setting in the base only", "base/settings.env", "THUMBD_SHUTDOWN_DELAY=5s", "THUMBD_SHUTDOWN_DELAY=7s", "Env THUMBD_SHUTDOWN_DELAY differs"}, "", "k8s/overlays/slim"},
		{breakage{"a cells setting in the overlay only", "overlays/cells/settings.env", "THUMBD_CELL_MAX_RSS=134217728", "THUMBD_CELL_MAX_RSS=100000000", "Env THUMBD_CELL_MAX_RSS differs"}, "ci/cells-values.yaml", "k8s/overlays/cells"},
		{breakage{"the memory limit", "chart/values.yaml", "memory: 1280Mi", "memory: 1300Mi", "Resources limits.memory differs"}, "", "k8s/overlays/slim"},
		{breakage{"the cells' request", "overlays/cells/memory.yaml", "memory: 320Mi", "memory: 300Mi", "Resources requests.memory differs"}, "ci/cells-values.yaml", "k8s/overlays/cells"},
		{breakage{"capabilities", "chart/templates/deployment.yaml", `drop: ["ALL"]`, `drop: ["ALL", "NET_RAW"]`, "SecurityContext differs"}, "", "k8s/overlays/slim"},
		{breakage{"pod user", "chart/templates/deployment.yaml", "runAsUser: 65532", "runAsUser: 65533", "PodSecurityContext differs"}, "", "k8s/overlays/slim"},
		{breakage{"the storage keys' Secret", "overlays/storage/credentials.yaml", "key: secret-access-key", "key: secret", "Env AWS_SECRET_ACCESS_KEY differs"}, "ci/s3-values.yaml", "k8s/overlays/storage"},
		{breakage{"the egress policy", "chart/templates/networkpolicy.yaml", "port: 443", "port: 8443", "NetworkPolicies differs"}, "ci/public-values.yaml", "k8s/overlays/public"},
		{breakage{"the scale-out target", "base/hpa.yaml", "averageUtilization: 70", "averageUtilization: 60", "HPA differs"}, "", "k8s/overlays/slim"},
		{breakage{"the chart's ingress policy", "chart/templates/networkpolicy.yaml", "          port: http\n", "          port: 8080\n", "NetworkPolicies differs"}, "", "k8s/overlays/slim"},
		{breakage{"the base's ingress policy", "base/networkpolicy.yaml", "kubernetes.io/metadata.name: monitoring", "kubernetes.io/metadata.name: prometheus", "NetworkPolicies differs"}, "ci/public-values.yaml", "k8s/overlays/public"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireComplaint(t, chartDrift(t, helm, brokenCopy(t, tc.breakage), tc.values, tc.overlay), tc.want)
		})
	}
}

// TestChartRefuses: values the chart refuses, each with a sentence that
// names the value.
func TestChartRefuses(t *testing.T) {
	helm := helmBinary(t)
	chart := filepath.Join(root, chartDir)
	cases := map[string]struct{ values, want string }{
		"latest":                   {"image: {tag: latest}", "image.tag latest"},
		"unknown flavour":          {"image: {flavour: alpine}", `image.flavour "alpine"`},
		"unknown engine":           {"engine: wasm", `engine "wasm"`},
		"origins without egress":   {"origins: images.example.com", "needs networkPolicy.enabled"},
		"directory without volume": {"resultStore: {location: /srv/thumbs}", "give resultStore.volume"},
		"relative directory":       {"source: {location: images, volume: {emptyDir: {}}}", `source.location "images"`},
		"a key in settings":        {"settings: {AWS_SECRET_ACCESS_KEY: x}", "settings.AWS_SECRET_ACCESS_KEY: secrets come from an existing Secret"},
		"keys without a bucket":    {"s3: {existingSecret: thumbd-storage}", "neither source.location nor resultStore.location"},
		"imgproxy unsigned beside signing": {"signing: {existingSecret: thumbd-signing-keys}\nimgproxy: {enabled: true}",
			"imgproxy.enabled with signing.existingSecret and no imgproxy.existingSecret"},
		"imgproxy unsigned beside signing and settings false": {"signing: {existingSecret: thumbd-signing-keys}\nimgproxy: {enabled: true}\nsettings: {THUMBD_IMGPROXY_UNSIGNED: \"false\"}",
			"imgproxy.enabled with signing.existingSecret and no imgproxy.existingSecret"},
		"an imgproxy key in settings":  {"settings: {THUMBD_IMGPROXY_KEYS: aa}", "settings.THUMBD_IMGPROXY_KEYS: secrets come from an existing Secret"},
		"an imgproxy salt in settings": {"settings: {THUMBD_IMGPROXY_SALT: aa}", "settings.THUMBD_IMGPROXY_SALT: secrets come from an existing Secret"},
		"ingress from no one named":    {"networkPolicy: {ingress: {monitoring: {namespaceLabels: null}}}", "networkPolicy.ingress.monitoring: give namespaceLabels, podLabels or both"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := renderValues(t, helm, chart, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// The ServiceMonitor's check must be able to fail.
func TestChartServiceMonitorChecked(t *testing.T) {
	helm, want := helmBinary(t), expect(t)
	want.Image = "registry.example.com/thumbd:1.4.0-slim"
	for _, tc := range []breakage{
		{"port the Service lacks", "chart/values.yaml", "  enabled: false\n  port: \"\"", "  enabled: false\n  port: metrics", `endpoint port "metrics" is not a port name`},
		{"another path", "chart/templates/servicemonitor.yaml", "path: /metrics", "path: /stats", `endpoint path "/stats"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chart := filepath.Join(brokenCopy(t, tc), chartDir)
			ms, err := RenderChart(helm, chart, "thumbd", filepath.Join(chart, "ci/directory-values.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			requireComplaint(t, CheckKubernetes(ms, want), tc.want)
		})
	}
}

// TestChartInstallLine renders the `helm install` line that README.md and
// k8s/README.md show (the same in both) and puts it through the checks:
// the three documented commands give a valid deployment with an S3 store.
func TestChartInstallLine(t *testing.T) {
	helm, want := helmBinary(t), expect(t)
	var line string
	for _, doc := range []string{"README.md", "k8s/README.md"} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		var found string
		for l := range strings.Lines(string(data)) {
			if strings.HasPrefix(l, "helm install ") {
				found = strings.TrimSpace(l)
			}
		}
		switch {
		case found == "":
			t.Fatalf("%s shows no helm install line", doc)
		case line != "" && found != line:
			t.Fatalf("%s shows %q, README.md %q", doc, found, line)
		}
		line = found
	}
	args := strings.Fields(line)
	args[1] = "template"
	cmd := exec.Command(helm, args[1:]...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	ms, err := DecodeStrict(line, out)
	if err != nil {
		t.Fatal(err)
	}
	want.Image = "registry.example.com/thumbd:1.0.0-slim"
	for _, err := range CheckKubernetes(ms, want) {
		t.Error(err)
	}
	v, err := viewOf(ms)
	if err != nil {
		t.Fatal(err)
	}
	if v.Env["THUMBD_RESULT_STORE"] != "s3://my-bucket/thumbs" || v.Env["AWS_SECRET_ACCESS_KEY"] != "secret thumbd-storage/secret-access-key" {
		t.Errorf("the install line's store: %v", v.Env)
	}
}

// The ingress policy's sources are values, and an imgproxy endpoint beside
// signed URLs renders when signed or unsigned on purpose; each rendering
// passes the checks.
func TestChartNetworkPolicyAndImgproxyValues(t *testing.T) {
	helm, want := helmBinary(t), expect(t)
	chart := filepath.Join(root, chartDir)
	cases := map[string]struct {
		values string
		check  func(*testing.T, []Manifest)
	}{
		"controller's pods in its namespace": {
			"networkPolicy: {ingress: {controller: {namespaceLabels: {kubernetes.io/metadata.name: traefik}, podLabels: {app.kubernetes.io/name: traefik}}}}",
			func(t *testing.T, ms []Manifest) {
				peer := ingressRules(t, ms)[0].From[0]
				if peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "traefik" || peer.PodSelector == nil || peer.PodSelector.MatchLabels["app.kubernetes.io/name"] != "traefik" {
					t.Errorf("controller peer %+v", peer)
				}
			}},
		"monitoring pods in the release's namespace": {
			"networkPolicy: {ingress: {monitoring: {namespaceLabels: null, podLabels: {app: prometheus}}}}",
			func(t *testing.T, ms []Manifest) {
				peer := ingressRules(t, ms)[1].From[0]
				if peer.NamespaceSelector != nil || peer.PodSelector.MatchLabels["app"] != "prometheus" {
					t.Errorf("monitoring peer %+v", peer)
				}
			}},
		"one port: the scrape on the serving port": {
			"adminPort: 0",
			func(t *testing.T, ms []Manifest) {
				if port := ingressRules(t, ms)[1].Ports[0].Port.String(); port != "http" {
					t.Errorf("monitoring reaches port %s", port)
				}
			}},
		"an extra rule": {
			"networkPolicy: {ingress: {extraIngress: [{from: [{podSelector: {matchLabels: {app: shop}}}], ports: [{protocol: TCP, port: http}]}]}}",
			func(t *testing.T, ms []Manifest) {
				if rules := ingressRules(t, ms); len(rules) != 3 || rules[2].From[0].PodSelector.MatchLabels["app"] != "shop" {
					t.Errorf("rules %+v", rules)
				}
			}},
		"imgproxy unsigned on purpose": {
			"signing: {existingSecret: thumbd-signing-keys}\nimgproxy: {enabled: true, unsigned: true}",
			func(t *testing.T, ms []Manifest) {
				if v, err := viewOf(ms); err != nil || v.Env["THUMBD_IMGPROXY_UNSIGNED"] != "true" {
					t.Errorf("%v %v", err, v)
				}
			}},
		"imgproxy signed beside signing": {"signing: {existingSecret: thumbd-signing-keys}\nimgproxy: {enabled: true, existingSecret: thumbd-imgproxy}", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ms, err := renderValues(t, helm, chart, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			want := want
			want.Image = "thumbd:slim"
			for _, err := range CheckKubernetes(ms, want) {
				t.Error(err)
			}
			if tc.check != nil {
				tc.check(t, ms)
			}
		})
	}
}

// ingressRules are the rules of the rendering's one ingress policy.
func ingressRules(t *testing.T, ms []Manifest) []networkingv1.NetworkPolicyIngressRule {
	t.Helper()
	for _, np := range all[*networkingv1.NetworkPolicy](ms) {
		if isolatesIngress(np) {
			return np.Spec.Ingress
		}
	}
	t.Fatal("no ingress NetworkPolicy")
	return nil
}

// renderValues renders the chart with values (YAML) over its defaults.
func renderValues(t *testing.T, helm, chart, values string) ([]Manifest, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return RenderChart(helm, chart, "thumbd", path)
}

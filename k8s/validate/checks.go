package validate

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"knative.dev/pkg/apis"
	"knative.dev/pkg/profiling"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"knative.dev/serving/pkg/networking"
)

// Expect is what rendered manifests must agree with.
type Expect struct {
	Image    string   // the container image, e.g. "thumbd:slim"; "" accepts any tagged image
	Settings Settings // the settings the service reads, with their defaults
	Routes   Routes   // the service's routes; nil skips the probe-path check
	// Binary is a thumbd binary, run to see whether the memory limit serves
	// the largest job the settings allow; "" skips that check.
	Binary string
}

type problems []error

func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Errorf(format, args...))
}

// The probe paths the service's contract names.
const (
	healthPath = "/health"
	readyPath  = "/ready"
	// metricsPath is what a ServiceMonitor scrapes.
	metricsPath = "/metrics"
)

// CheckKubernetes checks the objects rendered from a Kubernetes overlay: one
// Deployment, Service, HorizontalPodAutoscaler, PodDisruptionBudget and
// settings ConfigMap that agree with each other and with the service.
func CheckKubernetes(ms []Manifest, want Expect) []error {
	var p problems
	deploy := only[*appsv1.Deployment](ms, &p)
	svc := only[*corev1.Service](ms, &p)
	hpa := only[*autoscalingv2.HorizontalPodAutoscaler](ms, &p)
	pdb := only[*policyv1.PodDisruptionBudget](ms, &p)
	configMaps := map[string]*corev1.ConfigMap{}
	for _, cm := range all[*corev1.ConfigMap](ms) {
		configMaps[cm.Name] = cm
	}
	if deploy == nil {
		return p
	}
	pod := &deploy.Spec.Template
	if deploy.Spec.Replicas != nil {
		p.addf("Deployment %s sets replicas: the HorizontalPodAutoscaler owns the count", deploy.Name)
	}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		p.addf("Deployment %s: enableServiceLinks must be false (a Service named thumbd injects THUMBD_PORT, THUMBD_SERVICE_HOST, ... into the settings' namespace)", deploy.Name)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		p.addf("Deployment %s: automountServiceAccountToken must be false (the service calls no Kubernetes API)", deploy.Name)
	}
	c, env := checkPod(&pod.Spec, configMaps, want, &p)
	if c == nil {
		return p
	}

	port, err := strconv.Atoi(setting(env, want.Settings, "PORT"))
	if err != nil {
		p.addf("PORT %q is not a number", setting(env, want.Settings, "PORT"))
	}
	if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return int(cp.ContainerPort) == port }) {
		p.addf("container %s declares no containerPort %d, the port the service listens on (PORT)", c.Name, port)
	}
	// The probes and the scrape go to the admin port when there is one.
	admin, adminOn := adminPort(env, want.Settings, port, &p)
	probePort, probeWhat := port, "the service's port (PORT)"
	if adminOn {
		probePort, probeWhat = admin, "the admin port (THUMBD_ADMIN_PORT)"
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return int(cp.ContainerPort) == admin }) {
			p.addf("container %s declares no containerPort %d, the admin port (THUMBD_ADMIN_PORT)", c.Name, admin)
		}
	}
	checkProbes(c, probePort, probeWhat, want.Routes, true, &p)
	checkScrape("Deployment "+deploy.Name, pod.Annotations, probePort, probeWhat, &p)

	delay := durationSetting(env, want.Settings, "THUMBD_SHUTDOWN_DELAY", &p)
	drain := durationSetting(env, want.Settings, "THUMBD_SHUTDOWN_TIMEOUT", &p)
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil {
		p.addf("Deployment %s: terminationGracePeriodSeconds unset; it must cover THUMBD_SHUTDOWN_DELAY + THUMBD_SHUTDOWN_TIMEOUT = %s", deploy.Name, delay+drain)
	} else if time.Duration(*g)*time.Second < delay+drain {
		p.addf("Deployment %s: terminationGracePeriodSeconds %d s < THUMBD_SHUTDOWN_DELAY %s + THUMBD_SHUTDOWN_TIMEOUT %s: the kubelet would SIGKILL admitted requests", deploy.Name, *g, delay, drain)
	}

	if svc != nil {
		if !selects(svc.Spec.Selector, pod.Labels) {
			p.addf("Service %s selector %v does not select the pods (labels %v)", svc.Name, svc.Spec.Selector, pod.Labels)
		}
		for _, sp := range svc.Spec.Ports {
			if target, ok := resolvePort(sp.TargetPort, c); ok && adminOn && target == admin && sp.Name == "admin" {
				continue // the chart's, for a ServiceMonitor: /metrics on the admin port
			}
			if target, ok := resolvePort(sp.TargetPort, c); !ok || target != port {
				p.addf("Service %s port %s targets %s, not the service's port %d", svc.Name, sp.Name, sp.TargetPort.String(), port)
			}
		}
	}
	if hpa != nil {
		ref := hpa.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.Name != deploy.Name || ref.APIVersion != "apps/v1" {
			p.addf("HorizontalPodAutoscaler %s targets %s %s %s, not apps/v1 Deployment %s", hpa.Name, ref.APIVersion, ref.Kind, ref.Name, deploy.Name)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
			p.addf("HorizontalPodAutoscaler %s: minReplicas must be at least 2", hpa.Name)
		}
	}
	if pdb != nil && (pdb.Spec.Selector == nil || !selects(pdb.Spec.Selector.MatchLabels, pod.Labels)) {
		p.addf("PodDisruptionBudget %s does not select the pods (labels %v)", pdb.Name, pod.Labels)
	}
	checkServiceMonitors(all[*monitoringv1.ServiceMonitor](ms), svc, want.Routes, &p)
	fetches := setting(env, want.Settings, "THUMBD_ORIGINS") != ""
	checkEgress(all[*networkingv1.NetworkPolicy](ms), pod.Labels, fetches, &p)
	checkIngress(all[*networkingv1.NetworkPolicy](ms), pod.Labels, c, port, admin, adminOn, &p)
	if fetches {
		checkPublic(c, env, want.Settings, &p)
	}
	return p
}

// checkServiceMonitors: a Prometheus Operator ServiceMonitor selects the
// Service and scrapes /metrics through one of its ports.
func checkServiceMonitors(monitors []*monitoringv1.ServiceMonitor, svc *corev1.Service, routes Routes, p *problems) {
	for _, sm := range monitors {
		if svc == nil || !selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
			p.addf("ServiceMonitor %s does not select the Service", sm.Name)
			continue
		}
		for _, e := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == e.Port }) {
				p.addf("ServiceMonitor %s: endpoint port %q is not a port name of Service %s", sm.Name, e.Port, svc.Name)
			}
			if e.Path != metricsPath || routes != nil && !routes.Serves("GET", e.Path) {
				p.addf("ServiceMonitor %s: endpoint path %q, want %s (a GET route of the service)", sm.Name, e.Path, metricsPath)
			}
		}
	}
}

// checkPublic: a deployment that fetches from origins serves
// GET /thumbnail?url= to whoever reaches it (k8s/overlays/public), so it
// closes POST and the benchmark routes, and limits what a GET may ask for:
// URLs signed with keys from a Secret, or presets only.
func checkPublic(c *corev1.Container, env map[string]string, settings Settings, p *problems) {
	if uploads, err := strconv.ParseBool(setting(env, settings, "THUMBD_UPLOADS")); err != nil || uploads {
		p.addf("container %s fetches from origins (THUMBD_ORIGINS) with POST open: set THUMBD_UPLOADS=false (docs/signing.md, \"Public deployments\")", c.Name)
	}
	if bench, err := strconv.ParseBool(setting(env, settings, "THUMBD_BENCH_ROUTES")); err != nil || bench {
		p.addf("container %s fetches from origins (THUMBD_ORIGINS) with the benchmark routes on (/compute costs CPU unsigned): set THUMBD_BENCH_ROUTES=false", c.Name)
	}
	presetsOnly, _ := strconv.ParseBool(setting(env, settings, "THUMBD_PRESETS_ONLY"))
	if !keysFromSecret(c) && !presetsOnly {
		p.addf("container %s fetches from origins (THUMBD_ORIGINS) and serves any GET: give it signing keys from a Secret (THUMBD_SIGNING_KEYS) or THUMBD_PRESETS_ONLY=true", c.Name)
	}
	checkStoreGrowth(c, env, settings, presetsOnly, p)
}

// checkStoreGrowth: a public deployment that keeps its results in a store
// pays a job, a PUT and an object kept until expiry for every distinct
// answer a client asks (docs/storage.md, "What bounds the store's
// growth"). Signed URLs or presets bound them; unsigned, only the bounded
// unsigned mode's allow-lists do (THUMBD_ALLOWED_WIDTHS,
// THUMBD_ALLOWED_QUALITIES, THUMBD_ALLOWED_TRANSFORMS), and only as far as
// the answers they let a client combine, counted per source.
func checkStoreGrowth(c *corev1.Container, env map[string]string, settings Settings, presetsOnly bool, p *problems) {
	if setting(env, settings, "THUMBD_RESULT_STORE") == "" || keysFromSecret(c) || presetsOnly {
		return
	}
	if setting(env, settings, "THUMBD_ALLOWED_WIDTHS") == "" || setting(env, settings, "THUMBD_ALLOWED_QUALITIES") == "" {
		p.addf("container %s stores results of unsigned URLs (THUMBD_RESULT_STORE) without allow-lists: every width, quality or focal point a client asks is a job, a PUT and an object kept until expiry; sign URLs (THUMBD_SIGNING_KEYS), serve presets only, or set THUMBD_ALLOWED_WIDTHS and THUMBD_ALLOWED_QUALITIES", c.Name)
		return
	}
	if n := answersPerSource(env, settings); n > maxAnswersPerSource {
		p.addf("container %s stores results of unsigned URLs (THUMBD_RESULT_STORE) whose allow-lists let a client make up to %.0f answers of each source, each a job, a PUT and an object kept until expiry (docs/hardening.md, \"Bounded unsigned mode\"), over %d: shorten THUMBD_ALLOWED_WIDTHS, THUMBD_ALLOWED_QUALITIES or THUMBD_ALLOWED_TRANSFORMS, sign URLs (THUMBD_SIGNING_KEYS), or serve presets only", c.Name, n, maxAnswersPerSource)
	}
}

// maxAnswersPerSource is the most answers of one source the allow-lists
// may let anonymous clients store: about 8 times Next.js's defaults (16
// sizes, one quality: 1,220,736), room for a few qualities and transform
// values. Past it the lists hardly bound the bill; sign the URLs instead.
const maxAnswersPerSource = 10_000_000

// answersPerSource is docs/hardening.md's arithmetic of the bounded
// unsigned mode: the distinct answers of one source an unsigned client
// can ask for under the lists (presets' own values left out). A float:
// long transform lists overflow an integer, and only the order matters.
func answersPerSource(env map[string]string, settings Settings) float64 {
	distinct := func(list, sep string) map[string]bool {
		out := map[string]bool{}
		for _, v := range strings.Split(list, sep) {
			if v = strings.TrimSpace(v); v != "" {
				out[v] = true
			}
		}
		return out
	}
	widths := float64(len(distinct(setting(env, settings, "THUMBD_ALLOWED_WIDTHS"), ",")))
	qualities := float64(len(distinct(setting(env, settings, "THUMBD_ALLOWED_QUALITIES"), ",")))
	values := map[string]float64{}
	for entry := range distinct(setting(env, settings, "THUMBD_ALLOWED_TRANSFORMS"), ";") {
		name, _, _ := strings.Cut(entry, "=")
		values[strings.TrimSpace(name)]++
	}
	const (
		fits       = 4  // cover, contain, fill, inside
		gravities  = 11 // centre, attention, entropy, 8 compass points
		formats    = 8  // 4 formats, format=auto's 3 pairs, imgproxy's source format
		animated   = 2  // true or false
		enlargings = 2  // thumbd's default (true) and imgproxy's (false)
	)
	n := (widths + 1) * (widths + 1) * (qualities + 2) * fits * (gravities + values["fx"]*values["fy"]) * formats * animated * enlargings
	for name, v := range values {
		if name != "fx" && name != "fy" && name != "enlarge" {
			n *= v + 1
		}
	}
	return n
}

func keysFromSecret(c *corev1.Container) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "THUMBD_SIGNING_KEYS" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
	})
}

// secretSettings are read only from Secrets: the signing keys, the result
// store's signing keys, imgproxy's keys and salts (either spelling), the
// object store's secret key and session token (THUMBD_RESULT_STORE,
// THUMBD_SOURCE), and the OTLP exporter's headers (a collector's API key).
var secretSettings = []string{"THUMBD_SIGNING_KEYS", "THUMBD_RESULT_STORE_KEY", "THUMBD_IMGPROXY_KEY", "THUMBD_IMGPROXY_SALT", "THUMBD_IMGPROXY_KEYS", "THUMBD_IMGPROXY_SALTS",
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "OTEL_EXPORTER_OTLP_HEADERS"}

// checkSecrets: secrets come from a Secret, never from a ConfigMap or a
// literal in a manifest; loopback origins (a switch for development and
// tests) are never let through.
func checkSecrets(c *corev1.Container, configMaps map[string]*corev1.ConfigMap, env map[string]string, settings Settings, p *problems) {
	for _, name := range secretSettings {
		literal := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == name && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil)
		})
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef == nil || !strings.HasPrefix(name, from.Prefix) {
				continue
			}
			if cm, ok := configMaps[from.ConfigMapRef.Name]; ok {
				_, inMap := cm.Data[strings.TrimPrefix(name, from.Prefix)]
				literal = literal || inMap
			}
		}
		if literal {
			p.addf("container %s: %s must come from a Secret (valueFrom.secretKeyRef), not a ConfigMap or a literal", c.Name, name)
		}
	}
	if on, _ := strconv.ParseBool(setting(env, settings, "THUMBD_ORIGINS_ALLOW_LOOPBACK")); on {
		p.addf("container %s: THUMBD_ORIGINS_ALLOW_LOOPBACK is for development and tests only; a deployment never lets origins on loopback through", c.Name)
	}
	checkImgproxySigned(c, env, settings, p)
}

// checkImgproxySigned: with signing keys, the imgproxy endpoint has keys
// of its own, or says it is unsigned on purpose (THUMBD_IMGPROXY_UNSIGNED),
// as thumbd requires at start (the check is here too because the memory
// check starts thumbd without the Secrets' values).
func checkImgproxySigned(c *corev1.Container, env map[string]string, settings Settings, p *problems) {
	_, signing := env["THUMBD_SIGNING_KEYS"]
	on, _ := strconv.ParseBool(setting(env, settings, "THUMBD_IMGPROXY"))
	unsigned, _ := strconv.ParseBool(setting(env, settings, "THUMBD_IMGPROXY_UNSIGNED"))
	_, key := env["THUMBD_IMGPROXY_KEY"]
	_, keys := env["THUMBD_IMGPROXY_KEYS"]
	if signing && on && !key && !keys && !unsigned {
		p.addf("container %s serves imgproxy's URLs unsigned (THUMBD_IMGPROXY=true without THUMBD_IMGPROXY_KEY) beside signed URLs (THUMBD_SIGNING_KEYS): give it THUMBD_IMGPROXY_KEY and THUMBD_IMGPROXY_SALT from a Secret, or THUMBD_IMGPROXY_UNSIGNED=true if that is meant (thumbd does not start otherwise)", c.Name)
	}
}

// internalAddrs stand for the ranges an origin fetch must never reach:
// private, CGNAT, link-local (cloud metadata), loopback, ULA.
var internalAddrs = []string{"10.0.0.1", "172.16.0.1", "192.168.0.1", "100.64.0.1", "169.254.169.254", "127.0.0.1", "fd00::1", "fe80::1", "::1"}

// checkEgress: every NetworkPolicy selects the pods, and a deployment that
// fetches from origins has one limiting its egress away from internal
// addresses, behind the service's own address guard.
func checkEgress(policies []*networkingv1.NetworkPolicy, podLabels map[string]string, fetches bool, p *problems) {
	limited := false
	for _, np := range policies {
		if !selects(np.Spec.PodSelector.MatchLabels, podLabels) {
			p.addf("NetworkPolicy %s does not select the pods (labels %v)", np.Name, podLabels)
			continue
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			continue
		}
		limited = true
		for _, rule := range np.Spec.Egress {
			if len(rule.To) == 0 {
				p.addf("NetworkPolicy %s has an egress rule to anywhere", np.Name)
			}
			for _, peer := range rule.To {
				if peer.IPBlock == nil {
					continue
				}
				for _, a := range internalAddrs {
					if allowsAddr(peer.IPBlock, netip.MustParseAddr(a)) {
						p.addf("NetworkPolicy %s lets the pods reach %s (ipBlock %s): internal addresses must be in its except list", np.Name, a, peer.IPBlock.CIDR)
					}
				}
			}
		}
	}
	if fetches && !limited {
		p.addf("the service fetches from origins (THUMBD_ORIGINS) but no NetworkPolicy limits the pods' egress")
	}
}

// checkIngress: a NetworkPolicy limits who may connect to the pods and
// lets someone reach the serving port and the admin port (k8s/base: the
// ingress controller the one, the monitoring namespace the other);
// without one, every pod in the cluster reaches both, /metrics included.
// No rule lets in every source, and no rule opens both ports to the same
// sources: the admin port is for probes (the node's, always let in) and
// the scrape.
func checkIngress(policies []*networkingv1.NetworkPolicy, podLabels map[string]string, c *corev1.Container, port, admin int, adminOn bool, p *problems) {
	wanted := map[int]string{port: "the serving port (PORT)"}
	if adminOn {
		wanted[admin] = "the admin port (THUMBD_ADMIN_PORT)"
	}
	reached := map[int]bool{}
	limited := false
	for _, np := range policies {
		if !selects(np.Spec.PodSelector.MatchLabels, podLabels) || !isolatesIngress(np) {
			continue
		}
		limited = true
		for i, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				p.addf("NetworkPolicy %s: ingress rule %d lets any source in (no from)", np.Name, i+1)
			}
			for _, peer := range rule.From {
				if ns := peer.NamespaceSelector; ns != nil && len(ns.MatchLabels) == 0 && len(ns.MatchExpressions) == 0 && peer.PodSelector == nil {
					p.addf("NetworkPolicy %s: ingress rule %d lets every pod of every namespace in (an empty namespaceSelector)", np.Name, i+1)
				}
			}
			opened := 0
			for n := range wanted {
				if opens(rule.Ports, n, c) {
					reached[n] = true
					opened++
				}
			}
			if adminOn && opened == 2 {
				p.addf("NetworkPolicy %s: ingress rule %d lets the same sources reach the serving port %d and the admin port %d: the admin port (/metrics) is for the monitoring namespace, give each port a rule of its own", np.Name, i+1, port, admin)
			}
		}
	}
	if !limited {
		p.addf("no NetworkPolicy limits who may connect to the pods (policyTypes Ingress): every pod in the cluster reaches the serving port and the admin port's /metrics")
		return
	}
	for _, n := range slices.Sorted(maps.Keys(wanted)) {
		if !reached[n] {
			p.addf("no NetworkPolicy ingress rule lets anyone reach %s %d: the ingress controller must reach the serving port, the monitoring namespace the admin port (or the serving port without one)", wanted[n], n)
		}
	}
}

// isolatesIngress: the policy limits ingress (the API defaults an empty
// policyTypes to Ingress).
func isolatesIngress(np *networkingv1.NetworkPolicy) bool {
	return len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

// opens reports whether a rule's ports let TCP connections to port n in
// (no ports: every port).
func opens(ports []networkingv1.NetworkPolicyPort, n int, c *corev1.Container) bool {
	if len(ports) == 0 {
		return true
	}
	for _, pp := range ports {
		if pp.Protocol != nil && *pp.Protocol != corev1.ProtocolTCP {
			continue
		}
		if pp.Port == nil {
			return true
		}
		first, ok := resolvePort(*pp.Port, c)
		last := first
		if pp.EndPort != nil && pp.Port.Type == intstr.Int {
			last = int(*pp.EndPort)
		}
		if ok && first <= n && n <= last {
			return true
		}
	}
	return false
}

func allowsAddr(b *networkingv1.IPBlock, a netip.Addr) bool {
	in := func(cidr string) bool {
		prefix, err := netip.ParsePrefix(cidr)
		return err == nil && prefix.Contains(a)
	}
	if !in(b.CIDR) {
		return false
	}
	return !slices.ContainsFunc(b.Except, in)
}

// CheckKnative checks a Knative Service: Knative's own validation, scale to
// zero, concurrency tied to THUMBD_CONCURRENCY, a timeout above
// THUMBD_DEADLINE, probes, image, settings and the restricted profile.
func CheckKnative(ms []Manifest, want Expect) []error {
	var p problems
	ksvc := only[*servingv1.Service](ms, &p)
	if ksvc == nil {
		return p
	}
	ctx := context.Background()
	defaulted := ksvc.DeepCopy()
	defaulted.SetDefaults(ctx)
	if fe := defaulted.Validate(apis.WithinCreate(ctx)); fe != nil {
		p.addf("Knative rejects Service %s: %v", ksvc.Name, fe)
	}

	tmpl := &ksvc.Spec.Template
	ann := tmpl.Annotations
	if ann["autoscaling.knative.dev/min-scale"] != "0" {
		p.addf("Knative Service %s: autoscaling.knative.dev/min-scale must be \"0\" (scale to zero), is %q", ksvc.Name, ann["autoscaling.knative.dev/min-scale"])
	}
	c, env := checkPod(&tmpl.Spec.PodSpec, nil, want, &p)
	if c == nil {
		return p
	}

	conc, err := strconv.Atoi(env["THUMBD_CONCURRENCY"])
	if err != nil {
		p.addf("Knative Service %s: THUMBD_CONCURRENCY must be set to a number for containerConcurrency to be tied to it (is %q)", ksvc.Name, env["THUMBD_CONCURRENCY"])
	}
	if cc := tmpl.Spec.ContainerConcurrency; cc == nil || int(*cc) != conc {
		p.addf("Knative Service %s: containerConcurrency must equal THUMBD_CONCURRENCY %d", ksvc.Name, conc)
	}
	if target := ann["autoscaling.knative.dev/target"]; target != strconv.Itoa(conc) {
		p.addf("Knative Service %s: autoscaling.knative.dev/target %q must equal THUMBD_CONCURRENCY %d", ksvc.Name, target, conc)
	}
	deadline := durationSetting(env, want.Settings, "THUMBD_DEADLINE", &p)
	if ts := tmpl.Spec.TimeoutSeconds; ts == nil || time.Duration(*ts)*time.Second <= deadline {
		p.addf("Knative Service %s: timeoutSeconds must exceed THUMBD_DEADLINE %s so the service's own 504 comes first", ksvc.Name, deadline)
	}
	if _, set := env["PORT"]; set {
		p.addf("Knative Service %s sets PORT: Knative sets it from containerPort", ksvc.Name)
	}
	port := 0
	if len(c.Ports) == 1 {
		port = int(c.Ports[0].ContainerPort)
	} else {
		p.addf("Knative Service %s: container %s must declare exactly one port", ksvc.Name, c.Name)
	}
	// Knative's runtime contract: the probes go to the one port declared
	// (it rewrites a liveness probe's port to it); only the scrape may go
	// to the admin port, which must not be one the queue-proxy holds.
	checkProbes(c, port, "the serving port (containerPort)", want.Routes, false, &p)
	metricsPort, metricsWhat := port, "the serving port (containerPort)"
	if admin, on := adminPort(env, want.Settings, port, &p); on {
		metricsPort, metricsWhat = admin, "the admin port (THUMBD_ADMIN_PORT)"
		if knativeReserved[int32(admin)] {
			p.addf("Knative Service %s: THUMBD_ADMIN_PORT %d is a port Knative's queue-proxy or profiling holds in the pod", ksvc.Name, admin)
		}
	}
	checkScrape("Knative Service "+ksvc.Name, tmpl.Annotations, metricsPort, metricsWhat, &p)
	return p
}

// knativeReserved are the ports Knative's sidecars hold in a pod (the
// ports its validation refuses as a containerPort).
var knativeReserved = map[int32]bool{
	networking.BackendHTTPPort: true, networking.BackendHTTP2Port: true, networking.BackendHTTPSPort: true,
	networking.QueueAdminPort: true, networking.AutoscalingQueueMetricsPort: true, networking.UserQueueMetricsPort: true,
	profiling.ProfilingPort: true,
}

// adminPort is THUMBD_ADMIN_PORT when set: a port other than PORT (0, a
// free port, cannot be probed).
func adminPort(env map[string]string, settings Settings, port int, p *problems) (int, bool) {
	v := setting(env, settings, "THUMBD_ADMIN_PORT")
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > 65535 || n == port {
		p.addf("THUMBD_ADMIN_PORT %q: want a port 1..65535 other than the serving port %d", v, port)
		return 0, false
	}
	return n, true
}

// checkScrape requires the pod's Prometheus annotations (the
// kubernetes-pods convention) to scrape /metrics on port, where the
// service serves it.
func checkScrape(owner string, ann map[string]string, port int, what string, p *problems) {
	if ann["prometheus.io/scrape"] != "true" {
		p.addf("%s: the pods need prometheus.io/scrape: \"true\"", owner)
		return
	}
	if got := ann["prometheus.io/port"]; got != strconv.Itoa(port) {
		p.addf("%s: prometheus.io/port %q is not %s %d, where /metrics is served", owner, got, what, port)
	}
	if path, ok := ann["prometheus.io/path"]; ok && path != "/metrics" {
		p.addf("%s: prometheus.io/path %q, want /metrics", owner, path)
	}
}

// checkPod checks what Kubernetes and Knative pods share: the restricted
// profile, one container, its image, settings and resources, and a memory
// limit that is the one memory knob and serves the largest job. It returns the
// container and its resolved environment (nil when there is no one container).
func checkPod(spec *corev1.PodSpec, configMaps map[string]*corev1.ConfigMap, want Expect, p *problems) (*corev1.Container, map[string]string) {
	*p = append(*p, CheckRestricted(spec)...)
	if len(spec.Containers) != 1 {
		p.addf("the pod must have exactly one container, has %d", len(spec.Containers))
		return nil, nil
	}
	c := &spec.Containers[0]
	env := containerEnv(c, configMaps, p)
	checkImage(c, want, p)
	checkEnvNames(env, want.Settings, p)
	checkSecrets(c, configMaps, env, want.Settings, p)
	checkResources(c, env, p)
	checkDerivedMemory(c, env, p)
	checkMemoryLimit(c, env, want.Binary, p)
	return c, env
}

// restrictedSysctls are the sysctls the "restricted" and "baseline" profiles allow.
var restrictedSysctls = []string{
	"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
}

// CheckRestricted checks a pod spec against the Kubernetes "restricted" Pod
// Security Standard (which includes "baseline"), plus a read-only root
// filesystem for every container.
func CheckRestricted(spec *corev1.PodSpec) []error {
	var p problems
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		p.addf("restricted: host network, PID and IPC namespaces are not allowed")
	}
	for _, v := range spec.Volumes {
		s := v.VolumeSource
		if s.ConfigMap == nil && s.CSI == nil && s.DownwardAPI == nil && s.EmptyDir == nil && s.Ephemeral == nil &&
			s.PersistentVolumeClaim == nil && s.Projected == nil && s.Secret == nil {
			p.addf("restricted: volume %s is of a type the profile does not allow", v.Name)
		}
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		p.addf("restricted: pod runAsUser must not be 0")
	}
	if psc.SeccompProfile != nil && !allowedSeccomp(psc.SeccompProfile) {
		p.addf("restricted: pod seccompProfile must be RuntimeDefault or Localhost")
	}
	for _, s := range psc.Sysctls {
		if !slices.Contains(restrictedSysctls, s.Name) {
			p.addf("restricted: sysctl %s is not allowed", s.Name)
		}
	}
	if psc.SELinuxOptions != nil && !allowedSELinux(psc.SELinuxOptions) {
		p.addf("restricted: pod seLinuxOptions not allowed")
	}
	if psc.AppArmorProfile != nil && psc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
		p.addf("restricted: pod appArmorProfile Unconfined is not allowed")
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		name := "container " + c.Name
		if sc.Privileged != nil && *sc.Privileged {
			p.addf("restricted: %s must not be privileged", name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			p.addf("restricted: %s must set allowPrivilegeEscalation: false", name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			p.addf("restricted: %s must drop ALL capabilities", name)
		}
		if sc.Capabilities != nil {
			for _, add := range sc.Capabilities.Add {
				if add != "NET_BIND_SERVICE" {
					p.addf("restricted: %s adds capability %s (only NET_BIND_SERVICE is allowed)", name, add)
				}
			}
		}
		nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) ||
			(sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
		if !nonRoot {
			p.addf("restricted: %s must run with runAsNonRoot: true (on the pod or the container)", name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			p.addf("restricted: %s runAsUser must not be 0", name)
		}
		switch {
		case sc.SeccompProfile != nil && !allowedSeccomp(sc.SeccompProfile):
			p.addf("restricted: %s seccompProfile must be RuntimeDefault or Localhost", name)
		case sc.SeccompProfile == nil && psc.SeccompProfile == nil:
			p.addf("restricted: %s has no seccompProfile (RuntimeDefault on the pod or the container)", name)
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			p.addf("restricted: %s procMount must be Default", name)
		}
		if sc.SELinuxOptions != nil && !allowedSELinux(sc.SELinuxOptions) {
			p.addf("restricted: %s seLinuxOptions not allowed", name)
		}
		if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
			p.addf("restricted: %s appArmorProfile Unconfined is not allowed", name)
		}
		for _, cp := range c.Ports {
			if cp.HostPort != 0 {
				p.addf("restricted: %s must not use hostPort %d", name, cp.HostPort)
			}
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			p.addf("hardening: %s must set readOnlyRootFilesystem: true", name)
		}
	}
	return p
}

func allowedSeccomp(s *corev1.SeccompProfile) bool {
	return s.Type == corev1.SeccompProfileTypeRuntimeDefault || s.Type == corev1.SeccompProfileTypeLocalhost
}

func allowedSELinux(o *corev1.SELinuxOptions) bool {
	return o.User == "" && o.Role == "" &&
		slices.Contains([]string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}, o.Type)
}

// checkImage requires the expected image, and a tag or digest that is not latest.
func checkImage(c *corev1.Container, want Expect, p *problems) {
	if want.Image != "" && c.Image != want.Image {
		p.addf("container %s: image %q, want %q", c.Name, c.Image, want.Image)
	}
	last := c.Image[strings.LastIndex(c.Image, "/")+1:]
	_, tag, tagged := strings.Cut(last, ":")
	switch {
	case strings.Contains(last, "@sha256:"):
	case !tagged || tag == "":
		p.addf("container %s: image %q has no tag (that means :latest)", c.Name, c.Image)
	case tag == "latest":
		p.addf("container %s: image %q: never :latest", c.Name, c.Image)
	}
}

// checkEnvNames requires every environment variable to be a setting of the
// service (the memory knobs it derives are checkDerivedMemory's).
func checkEnvNames(env map[string]string, settings Settings, p *problems) {
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if _, ok := settings[name]; !ok && !slices.Contains(derivedMemoryEnv, name) {
			p.addf("environment variable %s is not a setting of the service (`thumbd settings`): the service does not read it", name)
		}
	}
}

// checkResources requires requests and limits, and a thumbnail concurrency
// that matches the CPU limit.
func checkResources(c *corev1.Container, env map[string]string, p *problems) {
	r := c.Resources
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := r.Requests[name]
		lim, hasLim := r.Limits[name]
		if !hasReq || !hasLim {
			p.addf("container %s: %s request and limit must both be set", c.Name, name)
			continue
		}
		if req.Cmp(lim) > 0 {
			p.addf("container %s: %s request %s exceeds its limit %s", c.Name, name, req.String(), lim.String())
		}
	}
	if v, ok := env["THUMBD_CONCURRENCY"]; ok {
		lim, hasLim := r.Limits[corev1.ResourceCPU]
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			p.addf("container %s: THUMBD_CONCURRENCY %q is not a positive number", c.Name, v)
		} else if hasLim && lim.MilliValue() != int64(n)*1000 {
			p.addf("container %s: THUMBD_CONCURRENCY %d must equal the CPU limit %s (one core per libvips job)", c.Name, n, lim.String())
		}
	}
}

// checkProbes requires a startup probe and (for Kubernetes) a liveness probe
// on /health and a readiness probe on /ready, as httpGet on port (what
// names it), at paths the service serves.
func checkProbes(c *corev1.Container, port int, what string, routes Routes, needLiveness bool, p *problems) {
	probes := []struct {
		kind     string
		probe    *corev1.Probe
		path     string
		required bool
	}{
		{"startupProbe", c.StartupProbe, healthPath, true},
		{"livenessProbe", c.LivenessProbe, healthPath, needLiveness},
		{"readinessProbe", c.ReadinessProbe, readyPath, true},
	}
	for _, pr := range probes {
		if pr.probe == nil {
			if pr.required {
				p.addf("container %s: no %s", c.Name, pr.kind)
			}
			continue
		}
		get := pr.probe.HTTPGet
		if get == nil {
			p.addf("container %s: %s must be an httpGet probe (exec [thumbd, health] is the documented alternative)", c.Name, pr.kind)
			continue
		}
		if get.Path != pr.path {
			p.addf("container %s: %s path %q, want %q", c.Name, pr.kind, get.Path, pr.path)
		}
		if routes != nil && !routes.Serves("GET", get.Path) {
			p.addf("container %s: %s path %q is not a GET route of the service (service/openapi.json)", c.Name, pr.kind, get.Path)
		}
		if get.Port.String() != "0" && get.Port.String() != "" {
			if got, ok := resolvePort(get.Port, c); !ok || got != port {
				p.addf("container %s: %s port %s is not %s %d", c.Name, pr.kind, get.Port.String(), what, port)
			}
		}
	}
}

// containerEnv resolves the container's environment: envFrom ConfigMaps,
// then env values and ConfigMap key references.
func containerEnv(c *corev1.Container, configMaps map[string]*corev1.ConfigMap, p *problems) map[string]string {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			p.addf("container %s: envFrom other than a ConfigMap cannot be checked", c.Name)
			continue
		}
		cm, ok := configMaps[from.ConfigMapRef.Name]
		if !ok {
			p.addf("container %s: envFrom ConfigMap %s is not among the manifests", c.Name, from.ConfigMapRef.Name)
			continue
		}
		for k, v := range cm.Data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			if cm, ok := configMaps[ref.Name]; ok {
				env[e.Name] = cm.Data[ref.Key]
			} else {
				p.addf("container %s: env %s refers to ConfigMap %s, not among the manifests", c.Name, e.Name, ref.Name)
			}
		default:
			env[e.Name] = ""
		}
	}
	return env
}

// setting is the value the service sees: the environment's, else the default.
func setting(env map[string]string, settings Settings, name string) string {
	if v, ok := env[name]; ok {
		return v
	}
	return settings[name]
}

func durationSetting(env map[string]string, settings Settings, name string, p *problems) time.Duration {
	v := setting(env, settings, name)
	d, err := time.ParseDuration(v)
	if err != nil {
		p.addf("%s %q is not a duration", name, v)
	}
	return d
}

// resolvePort turns a port number or a container port name into a number.
func resolvePort(port intstr.IntOrString, c *corev1.Container) (int, bool) {
	if port.Type == intstr.Int {
		return port.IntValue(), true
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), true
		}
	}
	return 0, false
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// only returns the one object of type T among ms, or nil with a problem.
func only[T any](ms []Manifest, p *problems) T {
	found := all[T](ms)
	var zero T
	if len(found) != 1 {
		p.addf("want exactly one %T, found %d", zero, len(found))
		return zero
	}
	return found[0]
}

func all[T any](ms []Manifest) []T {
	var out []T
	for _, m := range ms {
		if obj, ok := m.Object.(T); ok {
			out = append(out, obj)
		}
	}
	return out
}

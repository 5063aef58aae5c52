package validate

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// RenderChart renders the Helm chart in dir as release (`helm template`),
// with the values files given (none: the chart's defaults), and decodes
// every object strictly.
func RenderChart(helm, dir, release string, values ...string) ([]Manifest, error) {
	args := []string{"template", release, dir}
	for _, v := range values {
		args = append(args, "--values", v)
	}
	out, err := runHelm(helm, args...)
	if err != nil {
		return nil, err
	}
	return DecodeStrict("helm template "+strings.Join(args[2:], " "), out)
}

// LintChart runs `helm lint --strict` on the chart in dir with the values
// files given.
func LintChart(helm, dir string, values ...string) error {
	args := []string{"lint", "--strict", dir}
	for _, v := range values {
		args = append(args, "--values", v)
	}
	_, err := runHelm(helm, args...)
	return err
}

func runHelm(helm string, args ...string) ([]byte, error) {
	cmd := exec.Command(helm, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.Bytes(), nil
}

// podView is what a rendering's pod and its companions must agree on with
// another rendering of the same settings: the container (image, ports,
// resolved environment, probes, resources, security context, mounts), the
// pod's security and shutdown, the rollout, and the specs of the Service,
// HPA, PDB and NetworkPolicies less their label selectors (the chart's
// carry the release's instance label too; CheckKubernetes checks that
// they select the pods).
type podView struct {
	Image                  string
	Ports                  []corev1.ContainerPort
	Env                    map[string]string // ConfigMaps resolved; a Secret's key as "secret NAME/KEY"
	StartupProbe           *corev1.Probe
	LivenessProbe          *corev1.Probe
	ReadinessProbe         *corev1.Probe
	Resources              map[string]string
	SecurityContext        *corev1.SecurityContext
	VolumeMounts           []corev1.VolumeMount
	PodSecurityContext     *corev1.PodSecurityContext
	TerminationGracePeriod *int64
	AutomountToken         *bool
	ServiceLinks           *bool
	Spread                 []corev1.TopologySpreadConstraint
	Strategy               appsv1.DeploymentStrategy
	Replicas               *int32
	ServicePorts           []corev1.ServicePort
	HPA                    []autoscalingv2.HorizontalPodAutoscalerSpec
	PDB                    []policyv1.PodDisruptionBudgetSpec
	NetworkPolicies        []networkingv1.NetworkPolicySpec
}

// viewOf reads the view of a rendering with one Deployment.
func viewOf(ms []Manifest) (*podView, error) {
	var p problems
	deploy := only[*appsv1.Deployment](ms, &p)
	if deploy == nil || len(deploy.Spec.Template.Spec.Containers) != 1 {
		return nil, fmt.Errorf("want one Deployment of one container: %v", p)
	}
	configMaps := map[string]*corev1.ConfigMap{}
	for _, cm := range all[*corev1.ConfigMap](ms) {
		configMaps[cm.Name] = cm
	}
	pod := deploy.Spec.Template.Spec
	c := pod.Containers[0]
	v := &podView{
		Image: c.Image, Ports: c.Ports, Env: containerEnv(&c, configMaps, &p),
		StartupProbe: c.StartupProbe, LivenessProbe: c.LivenessProbe, ReadinessProbe: c.ReadinessProbe,
		Resources: map[string]string{}, SecurityContext: c.SecurityContext, VolumeMounts: c.VolumeMounts,
		PodSecurityContext: pod.SecurityContext, TerminationGracePeriod: pod.TerminationGracePeriodSeconds,
		AutomountToken: pod.AutomountServiceAccountToken, ServiceLinks: pod.EnableServiceLinks,
		Strategy: deploy.Spec.Strategy, Replicas: deploy.Spec.Replicas,
	}
	if len(p) > 0 {
		return nil, fmt.Errorf("%v", p)
	}
	for _, e := range c.Env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			v.Env[e.Name] = "secret " + ref.SecretKeyRef.Name + "/" + ref.SecretKeyRef.Key
		}
	}
	for name, q := range c.Resources.Requests {
		v.Resources["requests."+string(name)] = q.String()
	}
	for name, q := range c.Resources.Limits {
		v.Resources["limits."+string(name)] = q.String()
	}
	for _, s := range pod.TopologySpreadConstraints {
		s.LabelSelector = nil
		v.Spread = append(v.Spread, s)
	}
	for _, svc := range all[*corev1.Service](ms) {
		v.ServicePorts = append(v.ServicePorts, svc.Spec.Ports...)
	}
	for _, h := range all[*autoscalingv2.HorizontalPodAutoscaler](ms) {
		v.HPA = append(v.HPA, h.Spec)
	}
	for _, b := range all[*policyv1.PodDisruptionBudget](ms) {
		spec := b.Spec
		spec.Selector = nil
		v.PDB = append(v.PDB, spec)
	}
	for _, np := range all[*networkingv1.NetworkPolicy](ms) {
		spec := np.Spec
		spec.PodSelector = metav1.LabelSelector{}
		v.NetworkPolicies = append(v.NetworkPolicies, spec)
	}
	// helm and kustomize order objects of one kind differently: compare
	// the policies in an order of their own.
	slices.SortFunc(v.NetworkPolicies, func(a, b networkingv1.NetworkPolicySpec) int {
		ya, _ := yaml.Marshal(a)
		yb, _ := yaml.Marshal(b)
		return strings.Compare(string(ya), string(yb))
	})
	return v, nil
}

// CompareRenderings reports every part of podView in which rendering a
// (named aName) differs from rendering b: the chart must render the
// kustomize overlay's pod from the same settings.
func CompareRenderings(aName string, a []Manifest, bName string, b []Manifest) []error {
	va, err := viewOf(a)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", aName, err)}
	}
	vb, err := viewOf(b)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", bName, err)}
	}
	ya, _ := yaml.Marshal(va)
	yb, _ := yaml.Marshal(vb)
	fa, fb := fields(ya), fields(yb)
	var errs []error
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range []map[string]string{fa, fb} {
			for k := range m {
				if !seen[k] && !yield(k) {
					return
				}
				seen[k] = true
			}
		}
	}) {
		if fa[name] != fb[name] {
			errs = append(errs, fmt.Errorf("%s differs: %s has %s; %s has %s", name, aName, orNone(fa[name]), bName, orNone(fb[name])))
		}
	}
	return errs
}

// fields splits a view's YAML into its top-level fields, and Env and
// Resources into their entries, so that a difference names the setting.
func fields(y []byte) map[string]string {
	var m map[string]any
	_ = yaml.Unmarshal(y, &m)
	out := map[string]string{}
	for k, v := range m {
		if entries, ok := v.(map[string]any); ok && (k == "Env" || k == "Resources") {
			for name, e := range entries {
				out[k+" "+name] = fmt.Sprint(e)
			}
			continue
		}
		b, _ := yaml.Marshal(v)
		out[k] = strings.TrimSpace(string(b))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return "\n" + s + "\n"
}

package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// Manifest is one YAML document decoded into its Go API type.
type Manifest struct {
	Source     string // file name, or the kustomization it was rendered from
	APIVersion string
	Kind       string
	Name       string
	Object     any // *appsv1.Deployment, *corev1.Service, ...
}

// knownTypes lists every kind the manifests may contain, by "apiVersion kind".
// A document of any other kind is an error: nothing escapes strict decoding.
var knownTypes = map[string]func() any{
	"v1 ConfigMap":                                  func() any { return &corev1.ConfigMap{} },
	"v1 Service":                                    func() any { return &corev1.Service{} },
	"apps/v1 Deployment":                            func() any { return &appsv1.Deployment{} },
	"autoscaling/v2 HorizontalPodAutoscaler":        func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1 PodDisruptionBudget":                 func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1 NetworkPolicy":            func() any { return &networkingv1.NetworkPolicy{} },
	"serving.knative.dev/v1 Service":                func() any { return &servingv1.Service{} },
	"kustomize.config.k8s.io/v1beta1 Kustomization": func() any { return &types.Kustomization{} },
	"monitoring.coreos.com/v1 ServiceMonitor":       func() any { return &monitoringv1.ServiceMonitor{} },
}

// DecodeStrict splits data into YAML documents and decodes each one into the
// Go type of its apiVersion and kind. Unknown fields, duplicate fields and
// unknown kinds are errors.
func DecodeStrict(source string, data []byte) ([]Manifest, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Manifest
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		m, err := decodeDocument(source, doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		if m != nil {
			out = append(out, *m)
		}
	}
}

func decodeDocument(source string, doc []byte) (*Manifest, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	var generic map[string]any
	if err := yaml.Unmarshal(doc, &generic); err != nil {
		return nil, err
	}
	if generic == nil {
		return nil, nil // only comments or blank
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, err
	}
	key := head.APIVersion + " " + head.Kind
	newObject, ok := knownTypes[key]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q (apiVersion %q): add its Go type to knownTypes", head.Kind, head.APIVersion)
	}
	obj := newObject()
	if err := unmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", head.Kind, head.Metadata.Name, err)
	}
	return &Manifest{Source: source, APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name, Object: obj}, nil
}

// unmarshalStrict decodes YAML the way the API server decodes JSON: duplicate
// keys, unknown fields and field names in the wrong case are errors.
// (sigs.k8s.io/yaml's UnmarshalStrict alone goes through encoding/json, which
// matches field names case-insensitively: readOnlyRootFileSystem would pass.)
func unmarshalStrict(doc []byte, obj any) error {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

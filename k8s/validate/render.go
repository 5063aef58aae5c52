package validate

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Render builds the kustomization in dir (as `kubectl apply -k dir` would) and
// decodes every resulting object strictly.
func Render(dir string) ([]Manifest, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []Manifest
	for _, r := range resources.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		ms, err := DecodeStrict("kustomize build "+dir, data)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// Package validate checks thumbd's Kubernetes and Knative manifests without a
// cluster: every manifest decodes strictly into the real API types, the
// kustomizations render, and the rendered objects agree with the service
// (routes in service/openapi.json, the settings `thumbd settings -json` lists)
// and with each other (ports, selectors, images, security, shutdown
// timing); and the thumbd binary, started with a pod's settings under its
// memory limit, finds that limit serves the largest job the settings allow. The Helm chart (k8s/chart) is rendered with helm and held to the same checks and to the overlays' pods (chart.go). It is a module of its own so that k8s.io, Knative and kustomize stay
// out of the service's dependencies. The tests are the entry point:
//
//	cd k8s/validate && go test ./...
package validate

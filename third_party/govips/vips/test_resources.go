package vips

// relative to "/vips/.."
const (
	resources = "../resources/"
)

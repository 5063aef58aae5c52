// Package imagecheck holds the container images' tests (imagecheck_test.go):
// thumbd:slim and thumbd:scratch, as scripts/images.sh builds them, started
// through internal/launch and checked over HTTP, with docker and from /proc.
// They need a docker daemon and the two images, so they run only with
// THUMBD_TEST_IMAGES=1: scripts/test-images.sh (CI) starts dockerd, builds
// the images and runs them.
package imagecheck

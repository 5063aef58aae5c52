//go:build !race

package originload

const raceDetector = false

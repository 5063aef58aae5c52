//go:build race

package originload

// raceDetector is on: hey's requester races with itself (its httptrace
// callbacks for the request written and the first response byte run on
// the transport's two goroutines unsynchronised), which a timed POST load
// trips. scripts/test-images.sh runs `bench origin` without it.
const raceDetector = true

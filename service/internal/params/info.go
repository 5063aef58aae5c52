package params

import "github.com/thumbd/thumbd/service/internal/thumbjob"

// Info is a parsed /info request.
type Info struct {
	Job thumbjob.InfoJob
	// Src and URL name the source of a GET, as Thumbnail's do; both empty
	// for a POST, whose body is the source.
	Src, URL string
}

// The parameters of /info: the source (GET), the signature and
// thumbhash, which is true unless thumbhash=false.
var (
	infoUploadNames = []string{"sig", "exp", "thumbhash"}
	infoGetNames    = append([]string{"src", "url"}, infoUploadNames...)
)

// InfoGetQuery decodes the query of GET /info, strictly; the signature is
// checked on what it returns, before InfoGet reads it.
func InfoGetQuery(raw string) (map[string]string, error) { return Query(raw, infoGetNames...) }

// InfoUploadQuery decodes the query of POST /info, strictly.
func InfoUploadQuery(raw string) (map[string]string, error) { return Query(raw, infoUploadNames...) }

// InfoGet reads a GET /info query decoded by InfoGetQuery.
func InfoGet(q map[string]string) (Info, error) {
	src, u, err := getSource(q, "/info")
	if err != nil {
		return Info{}, err
	}
	job, err := infoJob(q)
	return Info{Job: job, Src: src, URL: u}, err
}

// InfoUpload reads a POST /info query decoded by InfoUploadQuery.
func InfoUpload(q map[string]string) (Info, error) {
	job, err := infoJob(q)
	return Info{Job: job}, err
}

func infoJob(q map[string]string) (thumbjob.InfoJob, error) {
	if _, given := q["thumbhash"]; !given {
		return thumbjob.InfoJob{ThumbHash: true}, nil
	}
	hash, err := boolean(q, "thumbhash")
	return thumbjob.InfoJob{ThumbHash: hash}, err
}

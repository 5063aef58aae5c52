package params

import (
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

func TestInfoQueries(t *testing.T) {
	for _, tc := range []struct {
		post bool
		raw  string
		want Info
		code apierr.Code // "" for no error
	}{
		{false, "src=a.jpg", Info{Src: "a.jpg", Job: hashJob(true)}, ""},
		{false, "url=https://x/a.jpg&thumbhash=false", Info{URL: "https://x/a.jpg", Job: hashJob(false)}, ""},
		{false, "src=a.jpg&thumbhash=true&sig=s&exp=1", Info{Src: "a.jpg", Job: hashJob(true)}, ""},
		{false, "", Info{}, apierr.BadParameter},
		{false, "src=a&url=b", Info{}, apierr.BadParameter},
		{false, "url=", Info{}, apierr.BadURL},
		{false, "src=a.jpg&thumbhash=no", Info{}, apierr.BadParameter},
		{false, "src=a.jpg&thumbhash=true&thumbhash=false", Info{}, apierr.BadParameter},
		{false, "src=a.jpg&w=10", Info{}, apierr.BadParameter}, // a thumbnail's option is unknown here
		{true, "", Info{Job: hashJob(true)}, ""},
		{true, "thumbhash=false", Info{Job: hashJob(false)}, ""},
		{true, "src=a.jpg", Info{}, apierr.BadParameter},
		{true, "thumbhash=", Info{}, apierr.BadParameter},
	} {
		var got Info
		q, err := InfoGetQuery(tc.raw)
		if tc.post {
			q, err = InfoUploadQuery(tc.raw)
		}
		if err == nil {
			if tc.post {
				got, err = InfoUpload(q)
			} else {
				got, err = InfoGet(q)
			}
		}
		switch {
		case tc.code == "" && (err != nil || got != tc.want):
			t.Errorf("post=%t %q: %+v %v, want %+v", tc.post, tc.raw, got, err, tc.want)
		case tc.code != "" && apierr.From(err).Code != tc.code:
			t.Errorf("post=%t %q: %v, want %s", tc.post, tc.raw, err, tc.code)
		}
	}
}

func hashJob(hash bool) thumbjob.InfoJob { return thumbjob.InfoJob{ThumbHash: hash} }

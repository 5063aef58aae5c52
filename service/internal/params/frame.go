package params

import (
	"strings"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// frameOf reads a video's frame: t, seconds ("1.5") or a percentage of
// the duration ("50%"), and keyframe, true to take the keyframe at or
// before it (one frame decoded). Without t the default poster frame is
// made of keyframes already: keyframe alone changes nothing, and is
// dropped so that the job (and its key) is the default's.
func frameOf(q map[string]string) (thumbjob.Frame, error) {
	keyframe, err := boolean(q, "keyframe")
	if err != nil {
		return thumbjob.Frame{}, err
	}
	v, ok := q["t"]
	if !ok {
		return thumbjob.Frame{}, nil
	}
	f := thumbjob.Frame{Given: true, Keyframe: keyframe}
	if p, isPercent := strings.CutSuffix(v, "%"); isPercent {
		f.At, ok = decimal(p)
		f.Percent = true
		if !ok || f.At > 100 {
			return thumbjob.Frame{}, bad("t", "must be seconds from 0 to %d, such as 1.5, or a percentage of the duration from 0%% to 100%%, such as 50%%", thumbjob.MaxFrameSeconds)
		}
		return f, nil
	}
	if f.At, ok = decimal(v); !ok || f.At > thumbjob.MaxFrameSeconds {
		return thumbjob.Frame{}, bad("t", "must be seconds from 0 to %d, such as 1.5, or a percentage of the duration from 0%% to 100%%, such as 50%%", thumbjob.MaxFrameSeconds)
	}
	return f, nil
}

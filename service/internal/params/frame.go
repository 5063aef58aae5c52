package params

import (
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// frameOf reads a video's frame: t, seconds ("1.5") or a percentage of
// the duration ("50%"), and keyframe, true to take the keyframe at or
// before it (one frame decoded); or frames=N, a preview of N frames
// spread over the video, or every=S, a frame every S seconds (at most
// frames, 25 unless given; keyframe then applies to each). Without t or
// frames the default poster frame is made of keyframes already: keyframe
// alone changes nothing, and is dropped so that the job (and its key) is
// the default's; frames=1 is the default too.
func frameOf(q map[string]string) (thumbjob.Frame, error) {
	keyframe, err := boolean(q, "keyframe")
	if err != nil {
		return thumbjob.Frame{}, err
	}
	count, err := previewCount(q)
	if err != nil {
		return thumbjob.Frame{}, err
	}
	every, err := previewEvery(q)
	if err != nil {
		return thumbjob.Frame{}, err
	}
	if every > 0 {
		if _, given := q["frames"]; !given {
			count = thumbjob.MaxPreviewFrames
		} else if count < 2 {
			return thumbjob.Frame{}, bad("frames", "must be from 2 to %d with every: the most frames of the preview", thumbjob.MaxPreviewFrames)
		}
	}
	v, ok := q["t"]
	switch {
	case ok && every > 0:
		return thumbjob.Frame{}, bad("every", "is not taken with t: a preview's frames are spread over the video")
	case ok && count > 1:
		return thumbjob.Frame{}, bad("frames", "is not taken with t: a preview's frames are spread over the whole video")
	case count > 1:
		return thumbjob.Frame{Count: count, Every: every, Keyframe: keyframe}, nil
	case !ok:
		return thumbjob.Frame{}, nil
	}
	f := thumbjob.Frame{Given: true, Keyframe: keyframe}
	if p, isPercent := strings.CutSuffix(v, "%"); isPercent {
		f.At, ok = decimal(p)
		f.Percent = true
		ok = ok && f.At <= 100
	} else {
		f.At, ok = decimal(v)
		ok = ok && f.At <= thumbjob.MaxFrameSeconds
	}
	if !ok {
		return thumbjob.Frame{}, bad("t", "must be seconds from 0 to %d, such as 1.5, or a percentage of the duration from 0%% to 100%%, such as 50%%", thumbjob.MaxFrameSeconds)
	}
	return f, nil
}

// previewEvery reads every: seconds between a preview's frames, 0 when
// absent.
func previewEvery(q map[string]string) (float64, error) {
	v, given := q["every"]
	if !given {
		return 0, nil
	}
	s, ok := decimal(v)
	if !ok || s <= 0 || s > thumbjob.MaxFrameSeconds {
		return 0, bad("every", "must be seconds above 0 and at most %d, such as 2 or 0.5: the time between a preview's frames", thumbjob.MaxFrameSeconds)
	}
	return s, nil
}

// previewCount reads frames: 1 (a poster frame) when absent.
func previewCount(q map[string]string) (int, error) {
	v, ok := q["frames"]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > thumbjob.MaxPreviewFrames || strings.TrimLeft(v, "0123456789") != "" {
		return 0, bad("frames", "must be an integer from 1 to %d: the frames of a video's preview", thumbjob.MaxPreviewFrames)
	}
	return n, nil
}

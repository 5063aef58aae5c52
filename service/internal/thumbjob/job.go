package thumbjob

import "context"

// Job is one engine job, whichever route asked for it: a thumbnail
// (Options) or, when Info is set, a description of the source (/info).
// The pipeline runs both through the same stages, so /info shares the
// result cache and merging with thumbnails.
type Job struct {
	Options Options
	Info    *InfoJob // nil: a thumbnail
}

// Normalised is a canonical text of the job, for the result's key and
// ETag (computed once a request).
func (j Job) Normalised() string {
	if j.Info != nil {
		return j.Info.Normalised()
	}
	return j.Options.Normalised()
}

// Result is a job's outcome: the thumbnail, or the description.
type Result struct {
	Image Image
	Info  *Info // set for an info job
}

// Run runs j with an engine's two kinds of work: every engine mode's Run
// is this one dispatch.
func (j Job) Run(ctx context.Context, src Source,
	thumbnail func(context.Context, Source, Options) (Image, error),
	info func(context.Context, Source, InfoJob) (Info, error)) (Result, error) {
	if j.Info != nil {
		i, err := info(ctx, src, *j.Info)
		return Result{Info: &i}, err
	}
	img, err := thumbnail(ctx, src, j.Options)
	return Result{Image: img}, err
}

// Package thumbjob is a thumbnail job as the engine takes it, without
// libvips: what a job asks (Options), the bounds every job runs within
// (Config), what it gives (Image) and what the engine refuses (the errors,
// each with its API code). It builds without cgo, so that the parse stage
// and the cell protocol build and test without libvips, as imgproxy keeps
// options/ apart from vips/; thumb, the libvips package, reads it.
package thumbjob

import "github.com/thumbd/thumbd/service/internal/apierr"

// Error is a source the engine cannot or will not process. It carries the
// API's code for it, so that both engine modes answer alike: in process
// the error reaches the API as it is, in cells mode its code crosses the
// wire. A job wraps one with a detail for the client ("%w: ...").
type Error struct {
	Code apierr.Code
	text string
}

func (e *Error) Error() string { return e.text }

// The engine's errors. A new one is also a row of Errors.
var (
	ErrUnsupportedFormat = &Error{apierr.UnsupportedFormat, "unsupported image format"}
	ErrTooManyPixels     = &Error{apierr.TooManyPixels, "too many pixels"}
	ErrTooManyFrames     = &Error{apierr.TooManyFrames, "too many frames"}
	// ErrAnimationTooLarge: an animation whose frames x output pixels is
	// over the budget.
	ErrAnimationTooLarge = &Error{apierr.AnimationTooLarge, "animation too large"}
	ErrUndecodable       = &Error{apierr.UnprocessableImage, "image cannot be decoded"}
	// ErrCropOutside: a crop outside the image, found by the engine (the
	// EXIF orientation turned it, or the look could not read the header);
	// the same 400 the pipeline answers when the header shows it.
	ErrCropOutside = &Error{apierr.BadParameter, "parameter \"crop\" is outside the image"}
)

// Errors lists every engine error; a test checks that no Err variable of
// this package is missing.
func Errors() []*Error {
	return []*Error{ErrUnsupportedFormat, ErrTooManyPixels, ErrTooManyFrames, ErrAnimationTooLarge, ErrUndecodable, ErrCropOutside}
}

// ForCode is the engine error with code, for a code that came over the
// wire.
func ForCode(code apierr.Code) (*Error, bool) {
	for _, e := range Errors() {
		if e.Code == code {
			return e, true
		}
	}
	return nil, false
}

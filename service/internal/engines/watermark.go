package engines

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
)

// maxCellWatermark bounds THUMBD_WATERMARK in cells mode: a cell gets it
// in its settings variable (base64 in JSON), and Linux holds one variable
// to 128 KiB (MAX_ARG_STRLEN).
const maxCellWatermark = 90 << 10

// ReadWatermark reads the watermark file at path and checks it as a source
// is checked (size, format, header's pixels) before the engine is given
// it: at most maxBytes (THUMBD_MAX_BODY_BYTES; in cells mode 90 KiB at
// most) and maxPixels (THUMBD_MAX_PIXELS).
func ReadWatermark(path string, maxBytes, maxPixels int64, cells bool) ([]byte, error) {
	limit := maxBytes
	if cells {
		limit = min(limit, maxCellWatermark)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return nil, err
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("more than %d bytes, the most a watermark may have (THUMBD_MAX_BODY_BYTES; in cells mode %d)", limit, maxCellWatermark)
	}
	look, err := memcost.Look(b)
	switch {
	case err != nil && look.Format == "":
		return nil, fmt.Errorf("not a %s image", imagefmt.InputNames())
	case err != nil:
		return nil, fmt.Errorf("its header cannot be read: %v", err)
	case look.Header.Pixels() > maxPixels:
		return nil, fmt.Errorf("%dx%d is more than THUMBD_MAX_PIXELS (%d)", look.Header.Width, look.Header.Height, maxPixels)
	}
	return b, nil
}

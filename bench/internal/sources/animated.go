package sources

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/gif"
)

// animatedGIF draws r's animation: a ball crossing a shifting colour field,
// every frame different (so no encoder merges two), in the 6x6x6 colour cube
// with ordered dithering, as GIFs of natural scenes are made. Integer
// arithmetic only, and Go's own GIF encoder: the same bytes on every machine
// and every run, with no libvips involved.
func animatedGIF(r Recipe) ([]byte, error) {
	if r.Width < 16 || r.Height < 16 || r.Width > 65535 || r.Height > 65535 {
		return nil, fmt.Errorf("source %s: %dx%d, want 16..65535 a side", r.Name, r.Width, r.Height)
	}
	if r.Frames < 2 || r.Delay < 2 {
		return nil, fmt.Errorf("source %s: %d frames of %d cs, want 2 or more of at least 2 cs (browsers and libvips make shorter delays 100 ms)", r.Name, r.Frames, r.Delay)
	}
	pal := make(color.Palette, 0, 216)
	for i := 0; i < 216; i++ {
		pal = append(pal, color.RGBA{uint8(i / 36 * 51), uint8(i / 6 % 6 * 51), uint8(i % 6 * 51), 255})
	}
	g := &gif.GIF{LoopCount: 0, Config: image.Config{ColorModel: pal, Width: r.Width, Height: r.Height}}
	w, h, n := r.Width, r.Height, r.Frames
	radius := h / 8
	bayer := [4][4]int{{0, 8, 2, 10}, {12, 4, 14, 6}, {3, 11, 1, 9}, {15, 7, 13, 5}} // the ordered-dither thresholds
	for f := 0; f < n; f++ {
		img := image.NewPaletted(image.Rect(0, 0, w, h), pal)
		// The ball goes left to right and bounces twice on the way.
		cx := radius + f*(w-2*radius)/(n-1)
		cy := h - radius - triangle(f*4*(h-2*radius)/(n-1), h-2*radius)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				red, green, blue := x*255/w, y*255/h, triangle(2*x+y+8*f, 255)
				if dx, dy := x-cx, y-cy; dx*dx+dy*dy <= radius*radius {
					red, green, blue = 255, 200+dy*50/radius, 40
				}
				t := bayer[y&3][x&3]
				img.Pix[y*img.Stride+x] = uint8(36*dither(red, t) + 6*dither(green, t) + dither(blue, t))
			}
		}
		g.Image = append(g.Image, img)
		g.Delay = append(g.Delay, r.Delay)
		g.Disposal = append(g.Disposal, gif.DisposalNone)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		return nil, fmt.Errorf("source %s: %w", r.Name, err)
	}
	return b.Bytes(), nil
}

// triangle is a triangle wave of t with period 2*top, from 0 up to top.
func triangle(t, top int) int {
	t %= 2 * top
	if t > top {
		return 2*top - t
	}
	return t
}

// dither maps v (0..255) to one of the cube's 6 levels, rounding by the
// pixel's ordered-dither threshold t (0..15).
func dither(v, t int) int {
	return min(max((v*5*16+t*255)/(255*16), 0), 5)
}

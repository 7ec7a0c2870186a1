// thumbnail: FunctionBench's image_processing and thumbnail, a JPEG, PNG
// or GIF body scaled down to fit w by h pixels (query w and h, default
// 128 and 128, each 1 to 4096), its aspect kept, never scaled up. Each
// output pixel is the mean of the source area it covers (a box filter, so
// the image's mean brightness is kept). Answer: image/png (format=png,
// the default) or a greyscale binary PGM (format=pgm, the input the C
// vision kernels read); a body that is no image is a 415.
package main

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	"image/png"

	"faasched/functions/cgi"
)

func main() {
	q := cgi.Query()
	w := cgi.Int(q, "w", 128, 1, 4096)
	h := cgi.Int(q, "h", 128, 1, 4096)
	format := q.Get("format")
	if format == "" {
		format = "png"
	}
	if format != "png" && format != "pgm" {
		cgi.Fail(400, "format must be png or pgm")
	}
	src, _, err := image.Decode(bytes.NewReader(cgi.Body()))
	if err != nil {
		cgi.Fail(415, "the body is not a JPEG, PNG or GIF image: %v", err)
	}
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	// The largest size within w by h of the source's aspect, at most the
	// source's own.
	tw, th := sw, sh
	if tw > w {
		tw, th = w, max(1, sh*w/sw)
	}
	if th > h {
		tw, th = max(1, sw*h/sh), h
	}
	// Channels as floats, grey or red, green, blue.
	channels := 3
	if format == "pgm" {
		channels = 1
	}
	plane := make([]float64, sw*sh*channels)
	for y := 0; y < sh; y++ {
		for x := 0; x < sw; x++ {
			r, g, bl, _ := src.At(b.Min.X+x, b.Min.Y+y).RGBA()
			i := (y*sw + x) * channels
			if channels == 1 {
				plane[i] = (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 257
			} else {
				plane[i], plane[i+1], plane[i+2] = float64(r)/257, float64(g)/257, float64(bl)/257
			}
		}
	}
	out := box(plane, sw, sh, tw, th, channels)
	var body bytes.Buffer
	if format == "pgm" {
		fmt.Fprintf(&body, "P5\n%d %d\n255\n", tw, th)
		for _, v := range out {
			body.WriteByte(clamp(v))
		}
		cgi.Respond("image/x-portable-graymap", body.Bytes())
	}
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))
	for i := 0; i < tw*th; i++ {
		copy(dst.Pix[i*4:], []byte{clamp(out[i*3]), clamp(out[i*3+1]), clamp(out[i*3+2]), 255})
	}
	if err := png.Encode(&body, dst); err != nil {
		cgi.Fail(500, "%v", err)
	}
	cgi.Respond("image/png", body.Bytes())
}

// box scales an sw by sh image of interleaved channels to tw by th, each
// output pixel the area-weighted mean of the source pixels it covers:
// rows first, then columns.
func box(src []float64, sw, sh, tw, th, channels int) []float64 {
	rows := make([]float64, sw*th*channels)
	for ty := 0; ty < th; ty++ {
		span(float64(ty)*float64(sh)/float64(th), float64(ty+1)*float64(sh)/float64(th), func(sy int, weight float64) {
			for x := 0; x < sw*channels; x++ {
				rows[ty*sw*channels+x] += weight * src[sy*sw*channels+x]
			}
		})
	}
	out := make([]float64, tw*th*channels)
	for tx := 0; tx < tw; tx++ {
		span(float64(tx)*float64(sw)/float64(tw), float64(tx+1)*float64(sw)/float64(tw), func(sx int, weight float64) {
			for y := 0; y < th; y++ {
				for c := 0; c < channels; c++ {
					out[(y*tw+tx)*channels+c] += weight * rows[(y*sw+sx)*channels+c]
				}
			}
		})
	}
	return out
}

// span calls f with each source index overlapping [from, to) and the share
// of the span it covers (the shares sum to 1).
func span(from, to float64, f func(int, float64)) {
	for i := int(from); float64(i) < to; i++ {
		lo, hi := max(from, float64(i)), min(to, float64(i+1))
		if hi > lo {
			f(i, (hi-lo)/(to-from))
		}
	}
}

func clamp(v float64) byte {
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	default:
		return byte(v + 0.5)
	}
}

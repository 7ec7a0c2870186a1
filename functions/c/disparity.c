/*
 * disparity: SD-VBS's disparity map, stereo block matching. The body is
 * two binary PGMs of one size back to back, the left view then the right;
 * for each left pixel the disparity d in [0, range] that minimises the
 * sum of squared differences between the window around it and the window
 * d pixels to the left in the right view (edges extended, the smallest d
 * on a tie). As SD-VBS does, each d's squared differences are summed over
 * windows with an integral image, so the cost is W H (range + 1), not
 * times the window too.
 *
 * Query: window (odd, 1 to 31, default 9), range (1 to 128, default 32).
 * Answer: a PGM of the left view's size whose pixels are the disparities
 * (maxval range).
 */
#include "cgi.h"

int main(void) {
    long window = (long)query_int("window", 9, 1, 31);
    long range = (long)query_int("range", 32, 1, 128);
    if (window % 2 == 0) {
        fail(400, "window must be odd");
    }
    size_t len, at = 0;
    unsigned char *body = read_body(&len);
    image left, right;
    if (!pgm_read(body, len, &at, &left) || !pgm_read(body, len, &at, &right)) {
        fail(415, "the body is not two binary PGMs (P5, maxval 255) back to back");
    }
    if (left.w != right.w || left.h != right.h) {
        fail(400, "the two views differ in size");
    }
    int w = left.w, h = left.h, r = (int)window / 2;
    size_t size = (size_t)w * (size_t)h;
    /* The integral image has a zero row and column first. */
    double *sums = malloc((size_t)(w + 1) * (size_t)(h + 1) * sizeof *sums);
    double *best = malloc(size * sizeof *best);
    image out = {w, h, calloc(size, 1)};
    if (sums == NULL || best == NULL || out.pixels == NULL) {
        fail(500, "out of memory");
    }
    for (long d = 0; d <= range; d++) {
        for (int x = 0; x <= w; x++) {
            sums[x] = 0.0;
        }
        for (int y = 0; y < h; y++) {
            double row = 0.0;
            sums[(size_t)(y + 1) * (size_t)(w + 1)] = 0.0;
            for (int x = 0; x < w; x++) {
                double diff = pixel(&left, x, y) - pixel(&right, x - (int)d, y);
                row += diff * diff;
                sums[(size_t)(y + 1) * (size_t)(w + 1) + (size_t)(x + 1)] =
                    sums[(size_t)y * (size_t)(w + 1) + (size_t)(x + 1)] + row;
            }
        }
        for (int y = 0; y < h; y++) {
            int y0 = y - r < 0 ? 0 : y - r, y1 = y + r + 1 > h ? h : y + r + 1;
            for (int x = 0; x < w; x++) {
                int x0 = x - r < 0 ? 0 : x - r, x1 = x + r + 1 > w ? w : x + r + 1;
                size_t stride = (size_t)(w + 1);
                double cost = sums[(size_t)y1 * stride + (size_t)x1] -
                              sums[(size_t)y0 * stride + (size_t)x1] -
                              sums[(size_t)y1 * stride + (size_t)x0] +
                              sums[(size_t)y0 * stride + (size_t)x0];
                size_t i = (size_t)y * (size_t)w + (size_t)x;
                if (d == 0 || cost < best[i]) {
                    best[i] = cost;
                    out.pixels[i] = (unsigned char)d;
                }
            }
        }
    }
    pgm_respond(&out, (int)range);
    return 0;
}

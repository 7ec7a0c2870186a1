/*
 * features: the corner detection SD-VBS's feature tracking starts from,
 * Harris and Stephens' detector. Sobel gradients of the body's greyscale
 * image; their products summed over a 5 by 5 window into the structure
 * tensor M; the response det M - 0.04 (trace M)^2; a feature where the
 * response is above 1% of the image's largest and above its 8 neighbours'
 * (pixels within 3 of the edge are left out).
 *
 * Query: n (default 100, 1 to 10000), the features kept. Body: a binary
 * PGM. Answer: text/plain, a line "X Y RESPONSE" per feature, the
 * strongest first (ties by row, then column).
 */
#include "cgi.h"

typedef struct {
    int x, y;
    double response;
} feature;

static int stronger(const void *a, const void *b) {
    const feature *p = a, *q = b;
    if (p->response != q->response) {
        return p->response > q->response ? -1 : 1;
    }
    return p->y != q->y ? p->y - q->y : p->x - q->x;
}

int main(void) {
    long keep = (long)query_int("n", 100, 1, 10000);
    image img = body_image();
    int w = img.w, h = img.h;
    size_t size = (size_t)w * (size_t)h;
    double *xx = calloc(size, sizeof *xx), *yy = calloc(size, sizeof *yy),
           *xy = calloc(size, sizeof *xy), *response = calloc(size, sizeof *response);
    feature *found = malloc(size * sizeof *found);
    if (xx == NULL || yy == NULL || xy == NULL || response == NULL || found == NULL) {
        fail(500, "out of memory");
    }
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            double gx = (pixel(&img, x + 1, y - 1) + 2.0 * pixel(&img, x + 1, y) +
                         pixel(&img, x + 1, y + 1)) -
                        (pixel(&img, x - 1, y - 1) + 2.0 * pixel(&img, x - 1, y) +
                         pixel(&img, x - 1, y + 1));
            double gy = (pixel(&img, x - 1, y + 1) + 2.0 * pixel(&img, x, y + 1) +
                         pixel(&img, x + 1, y + 1)) -
                        (pixel(&img, x - 1, y - 1) + 2.0 * pixel(&img, x, y - 1) +
                         pixel(&img, x + 1, y - 1));
            size_t i = (size_t)y * (size_t)w + (size_t)x;
            xx[i] = gx * gx;
            yy[i] = gy * gy;
            xy[i] = gx * gy;
        }
    }
    double strongest = 0.0;
    for (int y = 3; y < h - 3; y++) {
        for (int x = 3; x < w - 3; x++) {
            double a = 0.0, b = 0.0, c = 0.0;
            for (int j = -2; j <= 2; j++) {
                for (int i = -2; i <= 2; i++) {
                    size_t k = (size_t)(y + j) * (size_t)w + (size_t)(x + i);
                    a += xx[k];
                    b += yy[k];
                    c += xy[k];
                }
            }
            double r = a * b - c * c - 0.04 * (a + b) * (a + b);
            response[(size_t)y * (size_t)w + (size_t)x] = r;
            if (r > strongest) {
                strongest = r;
            }
        }
    }
    size_t count = 0;
    for (int y = 3; y < h - 3; y++) {
        for (int x = 3; x < w - 3; x++) {
            double r = response[(size_t)y * (size_t)w + (size_t)x];
            if (r <= 0.01 * strongest) {
                continue;
            }
            int peak = 1;
            for (int j = -1; j <= 1 && peak; j++) {
                for (int i = -1; i <= 1; i++) {
                    double other = response[(size_t)(y + j) * (size_t)w + (size_t)(x + i)];
                    /* Of equal neighbours the first in row order wins. */
                    if ((j != 0 || i != 0) &&
                        (other > r || (other == r && (j < 0 || (j == 0 && i < 0))))) {
                        peak = 0;
                        break;
                    }
                }
            }
            if (peak) {
                found[count++] = (feature){x, y, r};
            }
        }
    }
    qsort(found, count, sizeof *found, stronger);
    printf("Content-Type: text/plain\n\n");
    for (size_t i = 0; i < count && i < (size_t)keep; i++) {
        printf("%d %d %.6g\n", found[i].x, found[i].y, found[i].response);
    }
    return 0;
}

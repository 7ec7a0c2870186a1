/*
 * segment: image segmentation, the body's greyscale image split into k
 * classes by k-means on intensity: Lloyd's iterations from centres at the
 * histogram's quantiles, until no pixel changes class or 100 rounds. They
 * run on the histogram, which gives the classes iterating over the pixels
 * would (a pixel's class depends on its level alone), then one pass
 * labels the pixels. A simpler segmentation than SD-VBS's normalised
 * cuts: by intensity alone, not by regions.
 *
 * Query: k (default 4, 2 to 16). Body: a binary PGM. Answer: a PGM of its
 * size whose pixels are the classes, 0 the darkest (maxval k - 1).
 */
#include "cgi.h"

int main(void) {
    int k = (int)query_int("k", 4, 2, 16);
    image img = body_image();
    size_t size = (size_t)img.w * (size_t)img.h;
    size_t histogram[256] = {0};
    for (size_t i = 0; i < size; i++) {
        histogram[img.pixels[i]]++;
    }
    /* Centres at the (c + 1/2) / k quantiles, classes per grey level. */
    double centre[16];
    for (int c = 0, level = 0; c < k; c++) {
        size_t target = (size_t)(((double)c + 0.5) / k * (double)size), seen = 0;
        for (level = 0; level < 255 && seen + histogram[level] <= target; level++) {
            seen += histogram[level];
        }
        centre[c] = level;
    }
    unsigned char class_of[256] = {0};
    for (int round = 0; round < 100; round++) {
        int changed = 0;
        for (int level = 0; level < 256; level++) {
            int best = 0;
            for (int c = 1; c < k; c++) {
                double dc = level - centre[c], db = level - centre[best];
                if (dc * dc < db * db) {
                    best = c;
                }
            }
            if (class_of[level] != best) {
                class_of[level] = (unsigned char)best;
                changed = 1;
            }
        }
        if (round > 0 && !changed) {
            break;
        }
        double sum[16] = {0}, count[16] = {0};
        for (int level = 0; level < 256; level++) {
            sum[class_of[level]] += (double)level * (double)histogram[level];
            count[class_of[level]] += (double)histogram[level];
        }
        for (int c = 0; c < k; c++) {
            if (count[c] > 0) {
                centre[c] = sum[c] / count[c];
            }
        }
    }
    image out = {img.w, img.h, malloc(size)};
    if (out.pixels == NULL) {
        fail(500, "out of memory");
    }
    for (size_t i = 0; i < size; i++) {
        out.pixels[i] = class_of[img.pixels[i]];
    }
    pgm_respond(&out, k - 1);
    return 0;
}

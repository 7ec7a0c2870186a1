/*
 * What every C function of the suite shares: the request as a CGI program
 * sees it (the query in QUERY_STRING, the body on standard input), the
 * response as one writes it, greyscale images as binary PGM, and the
 * generator of the numeric kernels' inputs.
 */
#ifndef FAASCHED_CGI_H
#define FAASCHED_CGI_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Answers a plain-text error of status and ends the program (exit 0: it
 * answered). */
static inline void fail(int status, const char *message) {
    const char *reason = status == 400 ? "Bad Request"
                         : status == 415 ? "Unsupported Media Type"
                                         : "Internal Server Error";
    printf("Status: %d %s\nContent-Type: text/plain\n\n%s\n", status, reason, message);
    exit(0);
}

/* Query key's integer value within [min, max], def if absent; anything
 * else is a 400 naming the key. */
static inline long long query_int(const char *key, long long def, long long min, long long max) {
    const char *query = getenv("QUERY_STRING");
    size_t keylen = strlen(key);
    for (const char *p = query; p != NULL && *p != '\0';) {
        if (strncmp(p, key, keylen) == 0 && p[keylen] == '=') {
            char *end;
            const char *value = p + keylen + 1;
            long long n = strtoll(value, &end, 10);
            if (end == value || (*end != '\0' && *end != '&') || n < min || n > max) {
                char message[160];
                snprintf(message, sizeof message, "%s must be an integer from %lld to %lld", key,
                         min, max);
                fail(400, message);
            }
            return n;
        }
        p = strchr(p, '&');
        if (p != NULL) {
            p++;
        }
    }
    return def;
}

/* The whole body, *len bytes (NUL-terminated for text). */
static inline unsigned char *read_body(size_t *len) {
    size_t cap = 1 << 16, n = 0, got;
    unsigned char *body = malloc(cap + 1);
    while (body != NULL && (got = fread(body + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            body = realloc(body, cap + 1);
        }
    }
    if (body == NULL) {
        fail(500, "out of memory reading the body");
    }
    body[n] = '\0';
    *len = n;
    return body;
}

/* A greyscale image, one byte a pixel, row by row. */
typedef struct {
    int w, h;
    unsigned char *pixels;
} image;

/* Reads a binary PGM (P5, maxval 255) from buf[*at..len] and moves *at
 * past it; returns 0 for anything else. The pixels are copied. */
static inline int pgm_read(const unsigned char *buf, size_t len, size_t *at, image *img) {
    long fields[3];
    size_t i = *at;
    if (len - i < 2 || buf[i] != 'P' || buf[i + 1] != '5') {
        return 0;
    }
    i += 2;
    for (int f = 0; f < 3; f++) {
        while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) {
            i++;
        }
        long v = 0;
        size_t digits = 0;
        while (i < len && buf[i] >= '0' && buf[i] <= '9' && digits < 6) {
            v = v * 10 + (buf[i++] - '0');
            digits++;
        }
        if (digits == 0) {
            return 0;
        }
        fields[f] = v;
    }
    if (i >= len || fields[0] < 1 || fields[1] < 1 || fields[0] > 8192 || fields[1] > 8192 ||
        fields[2] != 255) {
        return 0;
    }
    i++; /* the one whitespace byte before the pixels */
    size_t size = (size_t)fields[0] * (size_t)fields[1];
    if (len - i < size) {
        return 0;
    }
    img->w = (int)fields[0];
    img->h = (int)fields[1];
    img->pixels = malloc(size);
    if (img->pixels == NULL) {
        fail(500, "out of memory");
    }
    memcpy(img->pixels, buf + i, size);
    *at = i + size;
    return 1;
}

/* img's pixel at (x, y), the nearest edge pixel outside it. */
static inline int pixel(const image *img, int x, int y) {
    x = x < 0 ? 0 : x >= img->w ? img->w - 1 : x;
    y = y < 0 ? 0 : y >= img->h ? img->h - 1 : y;
    return img->pixels[(size_t)y * (size_t)img->w + (size_t)x];
}

/* The one PGM a body holds, or a 415. */
static inline image body_image(void) {
    size_t len, at = 0;
    unsigned char *body = read_body(&len);
    image img;
    if (!pgm_read(body, len, &at, &img)) {
        fail(415, "the body is not a binary PGM (P5, maxval 255, at most 8192 by 8192)");
    }
    free(body);
    return img;
}

/* Answers img as a binary PGM of maxval. */
static inline void pgm_respond(const image *img, int maxval) {
    printf("Content-Type: image/x-portable-graymap\n\nP5\n%d %d\n%d\n", img->w, img->h, maxval);
    fwrite(img->pixels, 1, (size_t)img->w * (size_t)img->h, stdout);
}

/* The numeric kernels' inputs: a 64-bit LCG (Knuth's MMIX constants),
 * each draw the top 53 bits as a double in [0, 1). */
static inline double draw(uint64_t *state) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) * (1.0 / 9007199254740992.0);
}

#endif

/* The C API compiled as C (not C++): the header must be valid C, and a C
 * program can run the op and read the status. Exits non-zero on failure. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fbngrad/fbngrad.h"

static int failures = 0;
#define CHECK(cond)                                                   \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                               \
        }                                                             \
    } while (0)

/* Whether this build has the row: a selective build leaves rows out (docs/edge-builds.md). */
static int built(fbngrad_dtype dtype, fbngrad_layout layout, int training) {
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v->dtype == dtype && v->layout == layout && v->is_training == training) return 1;
    }
    return 0;
}

int main(void) {
    /* NHWC [1,2,2,2]: channel 0 has dy = 1,2,3,4 and x = mean (so x - mean = 0). */
    float dy[8] = {1, 10, 2, 20, 3, 30, 4, 40}, x[8] = {5, 0, 5, 0, 5, 0, 5, 0}, xb[8];
    float scale[2] = {2, 1}, mean[2] = {5, 0}, var[2] = {1, 1}, sb[2], ob[2];
    int64_t shape[4] = {1, 2, 2, 2}, c = 2;
    fbngrad_tensor tdy = fbngrad_make_tensor(dy, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    fbngrad_tensor tx = fbngrad_make_tensor(x, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    fbngrad_tensor txb = fbngrad_make_tensor(xb, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    fbngrad_tensor tsc = fbngrad_make_tensor(scale, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_tensor tm = fbngrad_make_tensor(mean, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_tensor tv = fbngrad_make_tensor(var, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_tensor tsb = fbngrad_make_tensor(sb, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_tensor tob = fbngrad_make_tensor(ob, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_attrs attrs;
    fbngrad_status st;
    fbngrad_attrs_init(&attrs);
    CHECK(attrs.epsilon == 0.0001f && attrs.is_training == 1 && attrs.reserve_space_2_is == FBNGRAD_RS2_VARIANCE);
    attrs.epsilon = 0.0f;

    if (built(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1)) {
        CHECK(fbngrad_fused_batch_norm_grad_v2(&tdy, &tx, &tsc, &tm, &tv, &attrs, &txb, &tsb, &tob, &st) == FBNGRAD_OK);
        CHECK(st.code == FBNGRAD_OK && st.message[0] == '\0');
        /* channel 0: sum dy = 10, x - mean = 0 -> scale_backprop 0; x_backprop = 2 * (dy - 2.5) */
        CHECK(ob[0] == 10.0f && sb[0] == 0.0f);
        CHECK(fabsf(xb[0] - (-3.0f)) < 1e-6f && fabsf(xb[6] - 3.0f) < 1e-6f);
        CHECK(ob[1] == 100.0f);
    } else {
        CHECK(fbngrad_fused_batch_norm_grad_v2(&tdy, &tx, &tsc, &tm, &tv, &attrs, &txb, &tsb, &tob, &st) ==
              FBNGRAD_UNIMPLEMENTED);
        CHECK(strstr(st.message, "left out of this build") != NULL);
    }

    shape[3] = 3; /* now x and y_backprop disagree */
    tdy = fbngrad_make_tensor(dy, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    memset(&st, 0, sizeof st);
    CHECK(fbngrad_fused_batch_norm_grad_v2(&tdy, &tx, &tsc, &tm, &tv, NULL, &txb, &tsb, &tob, &st) ==
          FBNGRAD_INVALID_ARGUMENT);
    CHECK(strcmp(st.message,
                 "x and y_backprop must have same shape, but x has shape [1,2,2,2] and y_backprop has shape [1,2,2,3]") == 0);

    CHECK(fbngrad_variant_count() > 0);
    /* Selected exactly where the build has the row; a row left out has none. */
    CHECK((fbngrad_selected_variant(FBNGRAD_BFLOAT16, FBNGRAD_NCHW, 0, FBNGRAD_CPU) != NULL) ==
          built(FBNGRAD_BFLOAT16, FBNGRAD_NCHW, 0));
    CHECK(strcmp(fbngrad_version(), "0.1.0") == 0);
    printf("C API: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

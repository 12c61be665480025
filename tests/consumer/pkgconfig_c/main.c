/* A plain C program built against the installed fbngrad with nothing but
 *   cc main.c $(pkg-config --cflags --libs fbngrad)
 * (pkgconfig_c/build_and_run.sh). It runs the op in NCHW on a problem worked
 * out by hand and checks the version against the pkg-config file's. */
#include <stdio.h>
#include <string.h>

#include "fbngrad/fbngrad.h"

#define STR2(x) #x
#define STR(x) STR2(x)

static int failures = 0;

static void expect(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) ++failures;
}

int main(void) {
    /* Inference, NCHW [1,2,1,2], channel c has scale c+1, mean 1, variance 3.9999
     * (epsilon 0.0001, so 1/sqrt(var+eps) is 0.5 up to rounding) and dy = x = (1, 3):
     *   x_backprop = dy * scale * inv ~ (0.5, 1.5) and (1, 3),
     *   offset_backprop = sum dy = 4, scale_backprop = sum dy*(x-mean)*inv = (0+6)*0.5 = 3. */
    float dy[4] = {1, 3, 1, 3}, x[4] = {1, 3, 1, 3};
    float scale[2] = {1, 2}, mean[2] = {1, 1}, var[2] = {3.9999f, 3.9999f};
    float dx[4] = {0}, dscale[2] = {0}, doffset[2] = {0};
    const int64_t shape4[4] = {1, 2, 1, 2}, shape1[1] = {2};
    fbngrad_tensor tdy = fbngrad_make_tensor(dy, FBNGRAD_FLOAT32, 4, shape4, FBNGRAD_NCHW);
    fbngrad_tensor tx = fbngrad_make_tensor(x, FBNGRAD_FLOAT32, 4, shape4, FBNGRAD_NCHW);
    fbngrad_tensor tscale = fbngrad_make_tensor(scale, FBNGRAD_FLOAT32, 1, shape1, FBNGRAD_NCHW);
    fbngrad_tensor tmean = fbngrad_make_tensor(mean, FBNGRAD_FLOAT32, 1, shape1, FBNGRAD_NCHW);
    fbngrad_tensor tvar = fbngrad_make_tensor(var, FBNGRAD_FLOAT32, 1, shape1, FBNGRAD_NCHW);
    fbngrad_tensor tdx = fbngrad_make_tensor(dx, FBNGRAD_FLOAT32, 4, shape4, FBNGRAD_NCHW);
    fbngrad_tensor tdscale = fbngrad_make_tensor(dscale, FBNGRAD_FLOAT32, 1, shape1, FBNGRAD_NCHW);
    fbngrad_tensor tdoffset = fbngrad_make_tensor(doffset, FBNGRAD_FLOAT32, 1, shape1, FBNGRAD_NCHW);
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.is_training = 0;
    fbngrad_status status;
    fbngrad_code code = fbngrad_fused_batch_norm_grad_v2(&tdy, &tx, &tscale, &tmean, &tvar, &attrs, &tdx, &tdscale,
                                                         &tdoffset, &status);
    printf("status %d \"%s\"\n", (int)code, status.message);
    expect(code == FBNGRAD_OK, "the op succeeds");
    const float want_dx[4] = {0.5f, 1.5f, 1.0f, 3.0f};
    int dx_ok = 1;
    for (int i = 0; i < 4; ++i) {
        float d = dx[i] - want_dx[i];
        if (d < -1e-6f || d > 1e-6f) dx_ok = 0;
        printf("  x_backprop[%d] = %.9g (want %.9g)\n", i, dx[i], want_dx[i]);
    }
    expect(dx_ok, "x_backprop = (0.5, 1.5, 1, 3) within 1e-6");
    expect(doffset[0] == 4.0f && doffset[1] == 4.0f, "offset_backprop = (4, 4)");
    expect(dscale[0] > 2.999999f && dscale[0] < 3.000001f && dscale[1] > 2.999999f && dscale[1] < 3.000001f,
           "scale_backprop = (3, 3) within 1e-6");

    const char *want_version = STR(FBNGRAD_VERSION_MAJOR) "." STR(FBNGRAD_VERSION_MINOR) "." STR(FBNGRAD_VERSION_PATCH);
    printf("fbngrad_version() = %s, header %s, pkg-config %s\n", fbngrad_version(), want_version, EXPECTED_VERSION);
    expect(strcmp(fbngrad_version(), want_version) == 0, "fbngrad_version() matches the header's macros");
    expect(strcmp(fbngrad_version(), EXPECTED_VERSION) == 0, "fbngrad_version() matches the package version (pkg-config --modversion, or find_package)");

    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("consumer_c: all checks passed\n");
    return 0;
}

/* The smallest useful program: one call of the op on float32 NHWC, training
 * then inference. tools/edge/sizes.sh links it against a libfbngrad.a, strips
 * it and reports its size (docs/edge-builds.md); tools/ci/30-edge-aarch64.sh
 * runs it under qemu and holds it to its size budget. It prints a checksum
 * of the outputs so that a run shows the kernels really ran. */
#include <stdio.h>

#include "fbngrad/fbngrad.h"

int main(void) {
    enum { N = 2, H = 3, W = 3, C = 4, SIZE = N * H * W * C };
    const int64_t shape[4] = {N, H, W, C}, channels[1] = {C};
    static float dy[SIZE], x[SIZE], dx[SIZE];
    float scale[C] = {1, 2, 3, 4}, mean[C] = {1, 1, 1, 1}, variance[C] = {2, 2, 2, 2};
    float dscale[C], doffset[C];
    for (int i = 0; i < SIZE; ++i) {
        dy[i] = (float)(i % 5) - 2;
        x[i] = (float)(i % 3);
    }
    fbngrad_tensor t_dy = fbngrad_make_tensor(dy, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    fbngrad_tensor t_x = fbngrad_make_tensor(x, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    fbngrad_tensor t_dx = fbngrad_make_tensor(dx, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    fbngrad_tensor t_scale = fbngrad_make_tensor(scale, FBNGRAD_FLOAT32, 1, channels, FBNGRAD_NHWC);
    fbngrad_tensor t_mean = fbngrad_make_tensor(mean, FBNGRAD_FLOAT32, 1, channels, FBNGRAD_NHWC);
    fbngrad_tensor t_var = fbngrad_make_tensor(variance, FBNGRAD_FLOAT32, 1, channels, FBNGRAD_NHWC);
    fbngrad_tensor t_dscale = fbngrad_make_tensor(dscale, FBNGRAD_FLOAT32, 1, channels, FBNGRAD_NHWC);
    fbngrad_tensor t_doffset = fbngrad_make_tensor(doffset, FBNGRAD_FLOAT32, 1, channels, FBNGRAD_NHWC);
    for (int training = 1; training >= 0; --training) {
        fbngrad_attrs attrs;
        fbngrad_attrs_init(&attrs);
        attrs.is_training = training;
        fbngrad_status status;
        if (fbngrad_fused_batch_norm_grad_v2(&t_dy, &t_x, &t_scale, &t_mean, &t_var, &attrs, &t_dx, &t_dscale,
                                             &t_doffset, &status) != FBNGRAD_OK) {
            fprintf(stderr, "fbngrad: %s\n", status.message);
            return 1;
        }
        double sum = 0;
        for (int i = 0; i < SIZE; ++i) sum += dx[i];
        for (int c = 0; c < C; ++c) sum += dscale[c] + doffset[c];
        printf("%s: checksum %.4f\n", training ? "training" : "inference", sum);
    }
    return 0;
}

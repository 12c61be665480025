/* See fuzz_c_calls.h. */
#include "fuzz_c_calls.h"

const fbngrad_variant_info *fuzz_selected_variant(int32_t dtype, int32_t layout, int32_t is_training, int32_t device) {
    return fbngrad_selected_variant((fbngrad_dtype)dtype, (fbngrad_layout)layout, is_training, (fbngrad_device)device);
}

int32_t fuzz_make_tensor(int32_t rank, const int64_t *shape) {
    /* shape points to FBNGRAD_MAX_RANK values; the function must not read more, whatever the rank. */
    fbngrad_tensor t = fbngrad_make_tensor(0, FBNGRAD_FLOAT32, rank, shape, FBNGRAD_NHWC);
    fbngrad_tensor u = fbngrad_make_tensor(0, FBNGRAD_FLOAT32, rank, 0, FBNGRAD_NCHW);
    return t.rank == rank && u.rank == rank;
}

/* Calls of the C API with enum arguments that hold any int, made from C (where
 * that is well-defined) for the fuzzer, which is C++ (where loading an
 * out-of-range enum is undefined behaviour, and UBSan would report the
 * fuzzer itself). */
#ifndef FBNGRAD_FUZZ_C_CALLS_H
#define FBNGRAD_FUZZ_C_CALLS_H

#include <stdint.h>

#include "fbngrad/fbngrad.h"

#ifdef __cplusplus
extern "C" {
#endif

const fbngrad_variant_info *fuzz_selected_variant(int32_t dtype, int32_t layout, int32_t is_training, int32_t device);

/* fbngrad_make_tensor with any rank (shape: 8 values, and NULL); 1 if the views keep the rank. */
int32_t fuzz_make_tensor(int32_t rank, const int64_t *shape);

#ifdef __cplusplus
}
#endif

#endif

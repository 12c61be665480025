// The product's fused generator (fbng_generator.h holds its definition).
#include "fbng_generator.h"

namespace fbng {
namespace {

class FusedBatchNormGrad : public FusedBatchNormGradT<FusedBatchNormGrad> {};

}  // namespace
}  // namespace fbng

HALIDE_REGISTER_GENERATOR(fbng::FusedBatchNormGrad, fused_batch_norm_grad)

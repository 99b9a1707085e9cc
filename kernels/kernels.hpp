#pragma once
// All compute kernels of gridtrain (see docs/kernels.md for the math and layouts).
#include "kernels/adamw.hpp"
#include "kernels/attention.hpp"
#include "kernels/colsum.hpp"
#include "kernels/crossentropy.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/embedding.hpp"
#include "kernels/fastmath.hpp"
#include "kernels/gelu.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"
#include "kernels/lanes.hpp"

#pragma once
// The layer kernels of the model (see docs/kernels.md for the math and layouts). Not included here, each by
// the code that needs it: kernels/tp_epilogue.hpp (the TP all-reduce epilogues), kernels/adamw_flat.hpp (the
// optimizer's fused passes), and the host-only pieces (GEMM backends, peak measurement, device queries).
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
#include "kernels/linear_gelu.hpp"
#include "kernels/lanes.hpp"
#include "kernels/token_groups.hpp"

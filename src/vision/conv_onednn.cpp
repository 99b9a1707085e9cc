// oneDNN backend of the vision convolutions (oneDNN 2.x API). Activations and weights are described as acdb
// (N,H,W,C and O,H,W,I), so the caller's channels-last buffers are used in place: no reorder, no copy. One
// forward primitive descriptor per shape serves as the hint for both backward passes; the three primitives are
// created on first use and cached per thread, keyed by the shape. oneDNN runs on OpenMP: unless OMP_NUM_THREADS
// says otherwise it gets one thread, because each rank drives one core.
#include <dnnl.hpp>
#include <omp.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <tuple>

#include "src/vision/conv.hpp"

namespace gt::vision::detail {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Key {
  int n, h, w, c, k, r, s, stride, pad;
  bool operator<(const Key& o) const {
    return std::tie(n, h, w, c, k, r, s, stride, pad) <
           std::tie(o.n, o.h, o.w, o.c, o.k, o.r, o.s, o.stride, o.pad);
  }
};

struct Prims {
  dnnl::memory::desc src, wei, dst;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
};

struct Context {
  Context() {
    if (!std::getenv("OMP_NUM_THREADS")) omp_set_num_threads(1);
  }
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::map<Key, std::unique_ptr<Prims>> cache;
};

Context& context() {
  thread_local Context ctx;
  return ctx;
}

std::unique_ptr<Prims> make_prims(const dnnl::engine& eng, const ConvShape& s) {
  auto p = std::make_unique<Prims>();
  p->src = dnnl::memory::desc({s.n, s.c, s.h, s.w}, dt::f32, tag::acdb);
  p->wei = dnnl::memory::desc({s.k, s.c, s.r, s.s}, dt::f32, tag::acdb);
  p->dst = dnnl::memory::desc({s.n, s.k, s.out_h(), s.out_w()}, dt::f32, tag::acdb);
  const dnnl::memory::dims strides = {s.stride, s.stride}, pad = {s.pad, s.pad};
  const auto alg = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc fwd_pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, p->src, p->wei, p->dst, strides, pad,
                                      pad),
      eng);
  const dnnl::convolution_backward_data::primitive_desc bd_pd(
      dnnl::convolution_backward_data::desc(alg, p->src, p->wei, p->dst, strides, pad, pad), eng, fwd_pd);
  const dnnl::convolution_backward_weights::primitive_desc bw_pd(
      dnnl::convolution_backward_weights::desc(alg, p->src, p->wei, p->dst, strides, pad, pad), eng, fwd_pd);
  p->fwd = dnnl::convolution_forward(fwd_pd);
  p->bwd_data = dnnl::convolution_backward_data(bd_pd);
  p->bwd_weights = dnnl::convolution_backward_weights(bw_pd);
  return p;
}

Prims& prims(const ConvShape& s) {
  auto& ctx = context();
  const Key key{s.n, s.h, s.w, s.c, s.k, s.r, s.s, s.stride, s.pad};
  auto it = ctx.cache.find(key);
  if (it == ctx.cache.end()) it = ctx.cache.emplace(key, make_prims(ctx.eng, s)).first;
  return *it->second;
}

// Wraps a caller's buffer (no copy); oneDNN's API takes void* for inputs too and only reads them.
dnnl::memory wrap(const dnnl::memory::desc& d, const float* p) {
  return dnnl::memory(d, context().eng, const_cast<float*>(p));
}

}  // namespace

bool onednn_available() { return true; }

void conv_forward_onednn(const ConvShape& s, const float* x, const float* w, float* y) {
  auto& p = prims(s);
  p.fwd.execute(context().strm, {{DNNL_ARG_SRC, wrap(p.src, x)}, {DNNL_ARG_WEIGHTS, wrap(p.wei, w)},
                                 {DNNL_ARG_DST, wrap(p.dst, y)}});
  context().strm.wait();
}

void conv_backward_data_onednn(const ConvShape& s, const float* dy, const float* w, float* dx) {
  auto& p = prims(s);
  p.bwd_data.execute(context().strm, {{DNNL_ARG_DIFF_DST, wrap(p.dst, dy)}, {DNNL_ARG_WEIGHTS, wrap(p.wei, w)},
                                      {DNNL_ARG_DIFF_SRC, wrap(p.src, dx)}});
  context().strm.wait();
}

void conv_backward_weights_onednn(const ConvShape& s, const float* x, const float* dy, float* dw) {
  auto& p = prims(s);
  p.bwd_weights.execute(context().strm, {{DNNL_ARG_SRC, wrap(p.src, x)}, {DNNL_ARG_DIFF_DST, wrap(p.dst, dy)},
                                         {DNNL_ARG_DIFF_WEIGHTS, wrap(p.wei, dw)}});
  context().strm.wait();
}

}  // namespace gt::vision::detail

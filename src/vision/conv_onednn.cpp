// oneDNN backend of the vision convolutions (oneDNN 2.x API). Activations and weights are described as acdb
// (N,H,W,C and O,H,W,I), so the caller's channels-last activations are used in place. The weights are left to
// the primitive (format any): with O,H,W,I weights oneDNN 2.6 finds no JIT kernel and falls back to its
// reference loops (measured: ~600 ms per 16x28x28x16 3x3 convolution); the weights, small, are reordered to the
// layout each pass wants and the weight gradient back to O,H,W,I. One
// forward primitive descriptor per shape serves as the hint for both backward passes; the three primitives are
// created on first use and cached per thread, keyed by the shape. oneDNN runs on OpenMP: unless OMP_NUM_THREADS
// says otherwise it gets one thread, because each rank drives one core.
#include <dnnl.hpp>
#include <omp.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

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

// Weights in the caller's layout (user) and the one a pass wants: a reorder between them when they differ.
struct WeightsIn {
  bool same = true;
  dnnl::memory buf;
  dnnl::reorder move;
};

struct Prims {
  dnnl::memory::desc src, wei, dst;
  dnnl::memory::desc fwd_scratch, bd_scratch, bw_scratch;  // what each pass needs of the shared scratchpad
  WeightsIn fwd_w, bd_w, bw_dw;
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
  // One scratchpad for every primitive of the thread (scratchpad_mode::user), grown to the largest need and kept:
  // in oneDNN's default (library) mode each execution allocated and freed its own, which on large shapes is a
  // fresh mapping whose pages fault in and are zeroed (~20% of a ResNet-50 step in perf, 2026-12-05).
  std::vector<unsigned char> scratch;
  dnnl::memory scratchpad(const dnnl::memory::desc& d) {
    if (scratch.size() < d.get_size()) scratch.resize(d.get_size());
    return dnnl::memory(d, eng, scratch.data());
  }
};

Context& context() {
  thread_local Context ctx;
  return ctx;
}

// from -> to when to_user is false (user weights into the pass's layout), to -> from otherwise.
WeightsIn weights_in(const dnnl::engine& eng, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                     bool to_user) {
  WeightsIn w;
  w.same = user == want;
  if (w.same) return w;
  w.buf = dnnl::memory(want, eng);
  dnnl::memory u(user, eng, DNNL_MEMORY_NONE);
  w.move = to_user ? dnnl::reorder(w.buf, u) : dnnl::reorder(u, w.buf);
  return w;
}

std::unique_ptr<Prims> make_prims(const dnnl::engine& eng, const ConvShape& s) {
  auto p = std::make_unique<Prims>();
  p->src = dnnl::memory::desc({s.n, s.c, s.h, s.w}, dt::f32, tag::acdb);
  p->wei = dnnl::memory::desc({s.k, s.c, s.r, s.s}, dt::f32, tag::acdb);
  p->dst = dnnl::memory::desc({s.n, s.k, s.out_h(), s.out_w()}, dt::f32, tag::acdb);
  const dnnl::memory::desc any_w({s.k, s.c, s.r, s.s}, dt::f32, tag::any);
  const dnnl::memory::dims strides = {s.stride, s.stride}, pad = {s.pad, s.pad};
  const auto alg = dnnl::algorithm::convolution_direct;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // Context::scratchpad
  const dnnl::convolution_forward::primitive_desc fwd_pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, p->src, any_w, p->dst, strides, pad,
                                      pad),
      attr, eng);
  const dnnl::convolution_backward_data::primitive_desc bd_pd(
      dnnl::convolution_backward_data::desc(alg, p->src, any_w, p->dst, strides, pad, pad), attr, eng, fwd_pd);
  const dnnl::convolution_backward_weights::primitive_desc bw_pd(
      dnnl::convolution_backward_weights::desc(alg, p->src, any_w, p->dst, strides, pad, pad), attr, eng, fwd_pd);
  p->fwd_scratch = fwd_pd.scratchpad_desc();
  p->bd_scratch = bd_pd.scratchpad_desc();
  p->bw_scratch = bw_pd.scratchpad_desc();
  p->fwd_w = weights_in(eng, p->wei, fwd_pd.weights_desc(), false);
  p->bd_w = weights_in(eng, p->wei, bd_pd.weights_desc(), false);
  p->bw_dw = weights_in(eng, p->wei, bw_pd.diff_weights_desc(), true);
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

// The weights as the pass wants them: the caller's buffer, or the reordered copy.
dnnl::memory weights_for(WeightsIn& w, const dnnl::memory::desc& user, const float* p) {
  if (w.same) return wrap(user, p);
  dnnl::memory u = wrap(user, p);
  w.move.execute(context().strm, u, w.buf);
  return w.buf;
}

}  // namespace

bool onednn_available() { return true; }

void conv_forward_onednn(const ConvShape& s, const float* x, const float* w, float* y) {
  auto& p = prims(s);
  p.fwd.execute(context().strm, {{DNNL_ARG_SRC, wrap(p.src, x)}, {DNNL_ARG_WEIGHTS, weights_for(p.fwd_w, p.wei, w)},
                                 {DNNL_ARG_DST, wrap(p.dst, y)},
                                 {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.fwd_scratch)}});
  context().strm.wait();
}

void conv_backward_data_onednn(const ConvShape& s, const float* dy, const float* w, float* dx) {
  auto& p = prims(s);
  const dnnl::memory wm = weights_for(p.bd_w, p.wei, w);
  p.bwd_data.execute(context().strm,
                     {{DNNL_ARG_DIFF_DST, wrap(p.dst, dy)}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, wrap(p.src, dx)},
                      {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.bd_scratch)}});
  context().strm.wait();
}

void conv_backward_weights_onednn(const ConvShape& s, const float* x, const float* dy, float* dw) {
  auto& p = prims(s);
  const dnnl::memory user = wrap(p.wei, dw);
  const dnnl::memory out = p.bw_dw.same ? user : p.bw_dw.buf;
  p.bwd_weights.execute(context().strm,
                        {{DNNL_ARG_SRC, wrap(p.src, x)}, {DNNL_ARG_DIFF_DST, wrap(p.dst, dy)}, {DNNL_ARG_DIFF_WEIGHTS, out},
                         {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.bw_scratch)}});
  if (!p.bw_dw.same) p.bw_dw.move.execute(context().strm, p.bw_dw.buf, const_cast<dnnl::memory&>(user));
  context().strm.wait();
}

}  // namespace gt::vision::detail

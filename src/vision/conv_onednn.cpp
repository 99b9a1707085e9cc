// oneDNN backend of the vision convolutions (oneDNN 2.x API). Activations and weights are described as acdb
// (N,H,W,C and O,H,W,I), so the caller's channels-last activations are used in place. The weights are left to
// the primitive (format any): with O,H,W,I weights oneDNN 2.6 finds no JIT kernel and falls back to its
// reference loops (measured: ~600 ms per 16x28x28x16 3x3 convolution); the weights, small, are reordered to the
// layout each pass wants and the weight gradient back to O,H,W,I. One
// forward primitive descriptor per shape serves as the hint for both backward passes; the three primitives are
// created on first use and cached per thread, keyed by the shape. oneDNN runs on OpenMP: unless OMP_NUM_THREADS
// says otherwise it gets one thread, because each rank drives one core.
// bf16 (ConvShape::bf16): the primitives read bf16 x, w and dy and write fp32 dw, and y and dx in fp32 or (a second
// forward and backward-data primitive) bf16. The fp32-operand forms convert the caller's x and dy by reorders into
// per-shape bf16 buffers; the bf16-operand forms (conv.hpp, what the ResNet uses) read the caller's bf16 x and dy in
// place. The weights' reorder converts and re-lays them in one pass either way.
// Some fp32 passes run as oneDNN's sgemm on the caller's buffers instead (conv_gemm.cpp): both backward passes of
// 1x1 stride-1 convolutions, and backward-weights of 3x3 strided ones with 64 or more input channels.
// Winograd (ConvShape::winograd, fp32 3x3 stride 1): oneDNN 2.6's Winograd kernels (jit_wino_4x3, AVX-512 only)
// take activations only in its blocked layout (nChw16c), so x, y, dy and dx are reordered through two staging
// buffers per thread on each call: ~1 ms at ResNet-50's largest map, against ~19 ms saved per layer (the three
// passes 57.5 -> 38.6 ms at 16 x 56 x 56 x 64 with the reorders, bench/bench_conv.cpp; Zen 5, one thread). Where
// oneDNN has no such kernel (an AVX2 CPU) the shape runs direct, as if Winograd had not been asked for.
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/vision/conv.hpp"

namespace gt::vision::detail {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Key {
  int n, h, w, c, k, r, s, stride, pad;
  bool bf16, winograd;
  bool operator<(const Key& o) const {
    return std::tie(n, h, w, c, k, r, s, stride, pad, bf16, winograd) <
           std::tie(o.n, o.h, o.w, o.c, o.k, o.r, o.s, o.stride, o.pad, o.bf16, o.winograd);
  }
};

// An fp32 activation converted to the primitives' bf16 before use (bf16 only; `needed` false for fp32).
struct Lowered {
  bool needed = false;
  dnnl::memory buf;
  dnnl::reorder move;
};

// Weights in the caller's layout (user) and the one a pass wants: a reorder between them when they differ.
struct WeightsIn {
  bool same = true;
  dnnl::memory buf;
  dnnl::reorder move;
  int strip = 0;  // > 0: the pass's layout is fp32 Acdb<strip>a, which to_strips writes in place of `move`
};

struct Prims {
  dnnl::memory::desc src, wei, dst;  // the caller's fp32 buffers
  dnnl::memory::desc src16, dst16;   // bf16: the caller's bf16 x and dy (conv.hpp's bf16-operand forms)
  Lowered x_in, dy_in;               // bf16: x and dy as the primitives read them
  dnnl::memory::desc fwd_scratch, bd_scratch, bw_scratch;  // what each pass needs of the shared scratchpad
  WeightsIn fwd_w, bd_w, bw_dw, fwd16_w;
  dnnl::convolution_forward fwd;
  dnnl::convolution_forward fwd16;  // bf16: the forward writing y in bf16
  dnnl::memory::desc fwd16_scratch;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_data bwd_data16;  // bf16: backward-data writing dx in bf16
  dnnl::memory::desc bd16_scratch;
  WeightsIn bd16_w;
  dnnl::convolution_backward_weights bwd_weights;
  // Winograd: the passes' blocked layouts of x/dx and y/dy, and the reorders between them and the caller's
  bool wino = false;
  dnnl::memory::desc src_blk, dst_blk;
  dnnl::reorder x_to_blk, y_from_blk, dy_to_blk, dx_from_blk;
  // the blocked layout is nChw16c, which to_blocked16 writes in place of the x and dy reorders
  bool x_blk16 = false, dy_blk16 = false;
};

// A buffer aligned for the JIT kernels' vector loads, grown to the largest need and kept.
struct Staging {
  std::vector<unsigned char> bytes;
  void* at(size_t size) {
    if (bytes.size() < size + 64) bytes.resize(size + 64);
    const auto p = reinterpret_cast<std::uintptr_t>(bytes.data());
    return bytes.data() + ((64 - p % 64) % 64);
  }
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
  // Winograd's activations in its blocked layout: slot 0 holds x or dx, slot 1 y or dy (shared by every shape:
  // the passes run one at a time on the rank's thread).
  Staging stage[2];
  dnnl::memory staged(int slot, const dnnl::memory::desc& d) {
    return dnnl::memory(d, eng, stage[slot].at(d.get_size()));
  }
};

Context& context() {
  thread_local Context ctx;
  return ctx;
}

// The strip width when `want` is fp32 Acdb<B>a for the user's O,H,W,I dims (brgconv's forward weights), else 0.
int strip_width(const dnnl::memory::desc& user, const dnnl::memory::desc& want) {
  const std::pair<int, tag> strips[] = {{16, tag::Acdb16a}, {32, tag::Acdb32a}, {48, tag::Acdb48a}, {64, tag::Acdb64a}};
  for (const auto& [b, t] : strips)
    if (want == dnnl::memory::desc(user.dims(), dt::f32, t)) return b;
  return 0;
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
  if (!to_user) w.strip = strip_width(user, want);
  return w;
}

Lowered lowered(const dnnl::engine& eng, const dnnl::memory::desc& user, dt want) {
  Lowered l;
  l.needed = want != dt::f32;
  if (!l.needed) return l;
  const dnnl::memory::desc d(user.dims(), want, tag::acdb);
  l.buf = dnnl::memory(d, eng);
  l.move = dnnl::reorder(dnnl::memory(user, eng, DNNL_MEMORY_NONE), l.buf);
  return l;
}

// The three passes' descriptors for shape s: inputs (x, w, dy) in `in`, outputs (y, dx, dw) in fp32.
struct PassDescs {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bd;
  dnnl::convolution_backward_weights::primitive_desc bw;
};

dnnl::primitive_attr pass_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // Context::scratchpad
  return attr;
}

// The forward for shape s with y of type `out`: fp32 (the hint of both backward passes), or bf16 with a bf16 shape
// (a primitive of its own: the destination type is part of it).
// wino: Winograd, with the activations' layout left to it (it takes only its blocked one).
dnnl::convolution_forward::primitive_desc forward_desc(const dnnl::engine& eng, const ConvShape& s, dt out,
                                                       bool wino = false) {
  const dt in = s.bf16 ? dt::bf16 : dt::f32;
  const tag act = wino ? tag::any : tag::acdb;
  const dnnl::memory::desc x({s.n, s.c, s.h, s.w}, in, act), w({s.k, s.c, s.r, s.s}, in, tag::any);
  const dnnl::memory::desc y({s.n, s.k, s.out_h(), s.out_w()}, out, act);
  const dnnl::memory::dims strides = {s.stride, s.stride}, pad = {s.pad, s.pad};
  const auto alg = wino ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, x, w, y, strides, pad, pad),
      pass_attr(), eng);
}

// Backward-data for shape s (dy and w of the shape's type) with dx of type `out`: fp32, or bf16 with a bf16 shape
// (a primitive of its own, as the forward's destination type).
dnnl::convolution_backward_data::primitive_desc backward_data_desc(
    const dnnl::engine& eng, const ConvShape& s, dt out, const dnnl::convolution_forward::primitive_desc& hint,
    bool wino = false) {
  const dt in = s.bf16 ? dt::bf16 : dt::f32;
  const tag act = wino ? tag::any : tag::acdb;
  const dnnl::memory::desc dx({s.n, s.c, s.h, s.w}, out, act), w_in({s.k, s.c, s.r, s.s}, in, tag::any);
  const dnnl::memory::desc dy({s.n, s.k, s.out_h(), s.out_w()}, in, act);
  const dnnl::memory::dims strides = {s.stride, s.stride}, pad = {s.pad, s.pad};
  const auto alg = wino ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  return dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(alg, dx, w_in, dy, strides, pad, pad),
      pass_attr(), eng, hint);
}

PassDescs pass_descs(const dnnl::engine& eng, const ConvShape& s, bool wino = false) {
  const dt in = s.bf16 ? dt::bf16 : dt::f32;
  const tag act = wino ? tag::any : tag::acdb;
  const dnnl::memory::desc x({s.n, s.c, s.h, s.w}, in, act);
  const dnnl::memory::desc dy({s.n, s.k, s.out_h(), s.out_w()}, in, act);
  const dnnl::memory::desc dw({s.k, s.c, s.r, s.s}, dt::f32, tag::any);
  const dnnl::memory::dims strides = {s.stride, s.stride}, pad = {s.pad, s.pad};
  const auto alg = wino ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc fwd = forward_desc(eng, s, dt::f32, wino);
  return {fwd, backward_data_desc(eng, s, dt::f32, fwd, wino),
          dnnl::convolution_backward_weights::primitive_desc(
              dnnl::convolution_backward_weights::desc(alg, x, dw, dy, strides, pad, pad), pass_attr(), eng, fwd)};
}

// A JIT kernel, not oneDNN's reference loops (which it picks when the CPU has no kernel for the data type: correct
// but far slower than converting and running fp32).
bool jit(const dnnl::primitive_desc_base& pd) { return std::string(pd.impl_info_str()).rfind("ref", 0) != 0; }

// Winograd's descriptors for s when oneDNN has JIT kernels for all three passes on this CPU, each pass reading and
// writing the activations in one blocked layout (the staging buffers hold one per side); false otherwise.
// Below 64 channels in or out Winograd does not pay: its transformed products are small GEMMs and the transforms
// dominate (a oneDNN-level probe of ResNet-20's 16 and 32 channels at batch 128: 9.2 and 8.5 ms against 8.1 and
// 7.8 ms direct for the three passes; at 64 channels and more bench_conv measures 1.14-1.83x in Winograd's favour;
// Zen 5, one thread, 2026-12-06).
bool winograd_descs(const dnnl::engine& eng, const ConvShape& s, PassDescs& d) {
  if (!s.winograd || s.bf16 || s.r != 3 || s.s != 3 || s.stride != 1 || s.c < 64 || s.k < 64) return false;
  try {
    d = pass_descs(eng, s, true);
  } catch (const dnnl::error&) {
    return false;  // no Winograd implementation for this shape or CPU
  }
  const auto wino = [](const dnnl::primitive_desc_base& pd) {
    return std::string(pd.impl_info_str()).find("wino") != std::string::npos;
  };
  return wino(d.fwd) && wino(d.bd) && wino(d.bw) && d.bd.diff_src_desc() == d.fwd.src_desc() &&
         d.bw.src_desc() == d.fwd.src_desc() && d.bd.diff_dst_desc() == d.fwd.dst_desc() &&
         d.bw.diff_dst_desc() == d.fwd.dst_desc();
}

dnnl::reorder reorder_between(const dnnl::engine& eng, const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to));
}

std::unique_ptr<Prims> make_prims(const dnnl::engine& eng, const ConvShape& s) {
  auto p = std::make_unique<Prims>();
  p->src = dnnl::memory::desc({s.n, s.c, s.h, s.w}, dt::f32, tag::acdb);
  p->wei = dnnl::memory::desc({s.k, s.c, s.r, s.s}, dt::f32, tag::acdb);
  p->dst = dnnl::memory::desc({s.n, s.k, s.out_h(), s.out_w()}, dt::f32, tag::acdb);
  p->src16 = dnnl::memory::desc({s.n, s.c, s.h, s.w}, dt::bf16, tag::acdb);
  p->dst16 = dnnl::memory::desc({s.n, s.k, s.out_h(), s.out_w()}, dt::bf16, tag::acdb);
  PassDescs d;
  p->wino = winograd_descs(eng, s, d);
  if (p->wino) {
    p->src_blk = d.fwd.src_desc();
    p->dst_blk = d.fwd.dst_desc();
    p->x_to_blk = reorder_between(eng, p->src, p->src_blk);
    p->dx_from_blk = reorder_between(eng, p->src_blk, p->src);
    p->dy_to_blk = reorder_between(eng, p->dst, p->dst_blk);
    p->y_from_blk = reorder_between(eng, p->dst_blk, p->dst);
    const auto nchw16c = [](const dnnl::memory::desc& user, const dnnl::memory::desc& blk) {
      return user.dims()[1] % 16 == 0 && blk == dnnl::memory::desc(user.dims(), dt::f32, tag::aBcd16b);
    };
    p->x_blk16 = nchw16c(p->src, p->src_blk);
    p->dy_blk16 = nchw16c(p->dst, p->dst_blk);
  } else {
    d = pass_descs(eng, s);
  }
  const dt in = s.bf16 ? dt::bf16 : dt::f32;
  p->x_in = lowered(eng, p->src, in);
  p->dy_in = lowered(eng, p->dst, in);
  p->fwd_scratch = d.fwd.scratchpad_desc();
  p->bd_scratch = d.bd.scratchpad_desc();
  p->bw_scratch = d.bw.scratchpad_desc();
  p->fwd_w = weights_in(eng, p->wei, d.fwd.weights_desc(), false);
  p->bd_w = weights_in(eng, p->wei, d.bd.weights_desc(), false);
  p->bw_dw = weights_in(eng, p->wei, d.bw.diff_weights_desc(), true);
  p->fwd = dnnl::convolution_forward(d.fwd);
  if (s.bf16) {  // the same forward with a bf16 destination; the backward passes are the same for both
    const dnnl::convolution_forward::primitive_desc f16 = forward_desc(eng, s, dt::bf16);
    p->fwd16_scratch = f16.scratchpad_desc();
    p->fwd16_w = weights_in(eng, p->wei, f16.weights_desc(), false);
    p->fwd16 = dnnl::convolution_forward(f16);
    const dnnl::convolution_backward_data::primitive_desc bd16 = backward_data_desc(eng, s, dt::bf16, d.fwd);
    p->bd16_scratch = bd16.scratchpad_desc();
    p->bd16_w = weights_in(eng, p->wei, bd16.weights_desc(), false);
    p->bwd_data16 = dnnl::convolution_backward_data(bd16);
  }
  p->bwd_data = dnnl::convolution_backward_data(d.bd);
  p->bwd_weights = dnnl::convolution_backward_weights(d.bw);
  return p;
}

Prims& prims(const ConvShape& s) {
  auto& ctx = context();
  const Key key{s.n, s.h, s.w, s.c, s.k, s.r, s.s, s.stride, s.pad, s.bf16, s.winograd};
  auto it = ctx.cache.find(key);
  if (it == ctx.cache.end()) it = ctx.cache.emplace(key, make_prims(ctx.eng, s)).first;
  return *it->second;
}

// Wraps a caller's buffer (no copy); oneDNN's API takes void* for inputs too and only reads them.
template <class T>
dnnl::memory wrap(const dnnl::memory::desc& d, const T* p) {
  return dnnl::memory(d, context().eng, const_cast<T*>(p));
}

// O,H,W,I fp32 weights -> Acdb<B>a: [ceil(O / B)][H][W][I][B], the output channels in strips of B (zeros past O).
// oneDNN 2.6's reorder for this ran at a third of this loop's speed on the large 1x1s (one Zen 5 core: 2048 x 1024
// 4.5 -> 1.5 ms, 512 x 2048 2.2 -> 0.67; ~12 ms of a ResNet-50 step in its verbose log); the same bytes.
void to_strips(const float* __restrict w, float* __restrict out, long O, long I, long HW, int B) {
  const long strips = (O + B - 1) / B;
  for (long sb = 0; sb < strips; ++sb)
    for (long q = 0; q < HW; ++q) {
      float* to = out + (sb * HW + q) * I * B;
      const long filled = std::min<long>(B, O - sb * B);
      for (long i0 = 0; i0 < I; i0 += 16) {  // 16 input channels of every strip row at a time
        const long len = std::min<long>(16, I - i0);
        for (long a = 0; a < filled; ++a) {
          const float* from = w + ((sb * B + a) * HW + q) * I + i0;
          for (long b = 0; b < len; ++b) to[(i0 + b) * B + a] = from[b];
        }
        for (long a = filled; a < B; ++a)
          for (long b = 0; b < len; ++b) to[(i0 + b) * B + a] = 0.f;
      }
    }
}

// The weights as the pass wants them: the caller's buffer, or the reordered copy.
dnnl::memory weights_for(WeightsIn& w, const dnnl::memory::desc& user, const float* p) {
  if (w.same) return wrap(user, p);
  if (w.strip > 0) {
    const dnnl::memory::dims d = user.dims();  // O, I, H, W
    to_strips(p, static_cast<float*>(w.buf.get_data_handle()), d[0], d[1], d[2] * d[3], w.strip);
    return w.buf;
  }
  dnnl::memory u = wrap(user, p);
  w.move.execute(context().strm, u, w.buf);
  return w.buf;
}

// An activation input as the primitive reads it: the caller's buffer, or its bf16 copy.
dnnl::memory input_for(Lowered& l, const dnnl::memory::desc& user, const float* p) {
  dnnl::memory u = wrap(user, p);
  if (!l.needed) return u;
  l.move.execute(context().strm, u, l.buf);
  return l.buf;
}

// N,H,W,C (C = 16 * cb) -> N,C/16,H,W,16: each pixel's channels cut into 16-float runs, one per block. oneDNN
// 2.6's reorder for this pair ran at about half the copy's speed (16 x 56 x 56 x 64, one Zen 5 core, warm:
// 1.12 ms against 0.67 ms; ~2.3 ms cold inside a ResNet-50 step), where the opposite direction's was as fast as a
// loop (0.57 ms), so only this one is ours.
void to_blocked16(const float* __restrict x, float* __restrict blk, long n, long pixels, long c) {
  const long cb = c / 16;
  for (long i = 0; i < n; ++i)
    for (long q = 0; q < pixels; ++q) {
      const float* from = x + (i * pixels + q) * c;
      for (long b = 0; b < cb; ++b) {
        float* to = blk + ((i * cb + b) * pixels + q) * 16;
        for (int l = 0; l < 16; ++l) to[l] = from[b * 16 + l];
      }
    }
}

// Winograd: an fp32 activation (x into slot 0, dy into slot 1) copied into the passes' blocked layout: by
// to_blocked16 when that layout is nChw16c (blk16), by oneDNN's reorder otherwise.
dnnl::memory staged_in(int slot, dnnl::reorder& move, bool blk16, const dnnl::memory::desc& user,
                       const dnnl::memory::desc& blk, const float* p) {
  dnnl::memory m = context().staged(slot, blk);
  if (blk16) {
    const dnnl::memory::dims d = user.dims();  // N, C, H, W
    to_blocked16(p, static_cast<float*>(m.get_data_handle()), d[0], d[2] * d[3], d[1]);
    return m;
  }
  dnnl::memory u = wrap(user, p);
  move.execute(context().strm, u, m);
  return m;
}

// x and dy as the fp32-operand passes read them: the caller's buffer, its bf16 copy, or its blocked copy.
dnnl::memory x_for(Prims& p, const float* x) {
  return p.wino ? staged_in(0, p.x_to_blk, p.x_blk16, p.src, p.src_blk, x) : input_for(p.x_in, p.src, x);
}
dnnl::memory dy_for(Prims& p, const float* dy) {
  return p.wino ? staged_in(1, p.dy_to_blk, p.dy_blk16, p.dst, p.dst_blk, dy) : input_for(p.dy_in, p.dst, dy);
}

}  // namespace

bool onednn_uses_winograd(const ConvShape& s) { return prims(s).wino; }

bool onednn_available() { return true; }

bool onednn_bf16_native() {
  static const bool native = [] {
    try {
      ConvShape s{2, 8, 8, 16, 16, 3, 3, 1, 1, true};
      const PassDescs d = pass_descs(context().eng, s);
      // and the forms writing bf16 (y, dx), each a primitive of its own
      return jit(d.fwd) && jit(d.bd) && jit(d.bw) && jit(forward_desc(context().eng, s, dt::bf16)) &&
             jit(backward_data_desc(context().eng, s, dt::bf16, d.fwd));
    } catch (const dnnl::error&) {
      return false;  // no bf16 convolution at all for this CPU
    }
  }();
  return native;
}

void conv_forward_onednn(const ConvShape& s, const float* x, const float* w, float* y) {
  auto& p = prims(s);
  dnnl::memory out = p.wino ? context().staged(1, p.dst_blk) : wrap(p.dst, y);
  p.fwd.execute(context().strm, {{DNNL_ARG_SRC, x_for(p, x)}, {DNNL_ARG_WEIGHTS, weights_for(p.fwd_w, p.wei, w)},
                                 {DNNL_ARG_DST, out}, {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.fwd_scratch)}});
  if (p.wino) {
    dnnl::memory u = wrap(p.dst, y);
    p.y_from_blk.execute(context().strm, out, u);
  }
  context().strm.wait();
}

namespace {

// The two backward passes on an input gradient the primitives can read as it is (fp32, or bf16 converted once).
// (Winograd: dx is written blocked into slot 0, then reordered into the caller's buffer.)
void backward_data(Prims& p, dnnl::memory& dy, const float* w, float* dx) {
  const dnnl::memory wm = weights_for(p.bd_w, p.wei, w);
  dnnl::memory out = p.wino ? context().staged(0, p.src_blk) : wrap(p.src, dx);
  p.bwd_data.execute(context().strm, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, out},
                                      {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.bd_scratch)}});
  if (p.wino) {
    dnnl::memory u = wrap(p.src, dx);
    p.dx_from_blk.execute(context().strm, out, u);
  }
}

// ... writing dx in bf16 (bf16 shapes only: the primitive exists for them)
void backward_data(Prims& p, dnnl::memory& dy, const float* w, bf16_bits* dx) {
  const dnnl::memory wm = weights_for(p.bd16_w, p.wei, w);
  p.bwd_data16.execute(context().strm, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, wm},
                                        {DNNL_ARG_DIFF_SRC, wrap(p.src16, dx)},
                                        {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.bd16_scratch)}});
}

void backward_weights(Prims& p, const dnnl::memory& x, dnnl::memory& dy, float* dw) {
  const dnnl::memory user = wrap(p.wei, dw);
  const dnnl::memory out = p.bw_dw.same ? user : p.bw_dw.buf;
  p.bwd_weights.execute(context().strm, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy},
                                         {DNNL_ARG_DIFF_WEIGHTS, out},
                                         {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.bw_scratch)}});
  if (!p.bw_dw.same) p.bw_dw.move.execute(context().strm, p.bw_dw.buf, const_cast<dnnl::memory&>(user));
}

}  // namespace

void conv_backward_data_onednn(const ConvShape& s, const float* dy, const float* w, float* dx) {
  if (gemm_backward_data(s)) return conv_backward_data_gemm(s, dy, w, dx);
  auto& p = prims(s);
  dnnl::memory d = dy_for(p, dy);
  backward_data(p, d, w, dx);
  context().strm.wait();
}

void conv_backward_weights_onednn(const ConvShape& s, const float* x, const float* dy, float* dw) {
  if (gemm_backward_weights(s)) return conv_backward_weights_gemm(s, x, dy, dw);
  auto& p = prims(s);
  dnnl::memory d = dy_for(p, dy);
  backward_weights(p, x_for(p, x), d, dw);
  context().strm.wait();
}

void conv_backward_onednn(const ConvShape& s, const float* x, const float* dy, const float* w, float* dx, float* dw) {
  if (gemm_backward_weights(s)) {
    conv_backward_weights_gemm(s, x, dy, dw);
    if (dx) conv_backward_data_onednn(s, dy, w, dx);
    return;
  }
  auto& p = prims(s);
  dnnl::memory d = dy_for(p, dy);  // bf16 or Winograd: converted once, read by both passes
  backward_weights(p, x_for(p, x), d, dw);  // before backward-data: with Winograd its x shares dx's slot
  if (dx) backward_data(p, d, w, dx);
  context().strm.wait();
}

// The bf16-operand forms: the caller's bf16 x and dy are read in place, nothing is converted but the weights.
void conv_forward_onednn(const ConvShape& s, const bf16_bits* xb, const float* w, float* y) {
  auto& p = prims(s);
  p.fwd.execute(context().strm, {{DNNL_ARG_SRC, wrap(p.src16, xb)}, {DNNL_ARG_WEIGHTS, weights_for(p.fwd_w, p.wei, w)},
                                 {DNNL_ARG_DST, wrap(p.dst, y)},
                                 {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.fwd_scratch)}});
  context().strm.wait();
}

void conv_forward_onednn(const ConvShape& s, const bf16_bits* xb, const float* w, bf16_bits* yb) {
  auto& p = prims(s);
  p.fwd16.execute(context().strm,
                  {{DNNL_ARG_SRC, wrap(p.src16, xb)}, {DNNL_ARG_WEIGHTS, weights_for(p.fwd16_w, p.wei, w)},
                   {DNNL_ARG_DST, wrap(p.dst16, yb)}, {DNNL_ARG_SCRATCHPAD, context().scratchpad(p.fwd16_scratch)}});
  context().strm.wait();
}

void conv_backward_onednn(const ConvShape& s, const bf16_bits* xb, const bf16_bits* dyb, const float* w, float* dx,
                          float* dw) {
  auto& p = prims(s);
  dnnl::memory d = wrap(p.dst16, dyb);
  backward_weights(p, wrap(p.src16, xb), d, dw);
  if (dx) backward_data(p, d, w, dx);
  context().strm.wait();
}

void conv_backward_onednn(const ConvShape& s, const bf16_bits* xb, const bf16_bits* dyb, const float* w,
                          bf16_bits* dxb, float* dw) {
  auto& p = prims(s);
  dnnl::memory d = wrap(p.dst16, dyb);
  backward_weights(p, wrap(p.src16, xb), d, dw);
  backward_data(p, d, w, dxb);
  context().strm.wait();
}

}  // namespace gt::vision::detail

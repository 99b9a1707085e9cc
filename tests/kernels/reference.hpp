#pragma once
// Naive reference implementations in double, written from the math (not from the kernels): plain loops,
// std:: functions, no blocking, no tricks. Vectors are row-major like the kernels.
#include <cmath>
#include <cstdint>
#include <vector>

namespace ref {

using Vec = std::vector<double>;

inline void embedding_forward(Vec& out, const std::vector<int32_t>& tok, const Vec& wte, const Vec* wpe, int BT,
                              int T, int C, int v0, int Vl) {
  out.assign(static_cast<size_t>(BT) * C, 0.0);
  for (int i = 0; i < BT; ++i)
    for (int c = 0; c < C; ++c) {
      double v = 0.0;
      if (tok[i] >= v0 && tok[i] < v0 + Vl) v += wte[static_cast<size_t>(tok[i] - v0) * C + c];
      if (wpe) v += (*wpe)[static_cast<size_t>(i % T) * C + c];
      out[static_cast<size_t>(i) * C + c] = v;
    }
}

// dwte, dwpe accumulate
inline void embedding_backward(Vec& dwte, Vec* dwpe, const Vec& dout, const std::vector<int32_t>& tok, int BT,
                               int T, int C, int v0, int Vl) {
  for (int i = 0; i < BT; ++i)
    for (int c = 0; c < C; ++c) {
      const double g = dout[static_cast<size_t>(i) * C + c];
      if (tok[i] >= v0 && tok[i] < v0 + Vl) dwte[static_cast<size_t>(tok[i] - v0) * C + c] += g;
      if (dwpe) (*dwpe)[static_cast<size_t>(i % T) * C + c] += g;
    }
}

inline void layernorm_forward(Vec& out, Vec& mean, Vec& rstd, const Vec& x, const Vec& w, const Vec& b, int N,
                              int C) {
  out.assign(static_cast<size_t>(N) * C, 0.0);
  mean.assign(N, 0.0);
  rstd.assign(N, 0.0);
  for (int i = 0; i < N; ++i) {
    double m = 0.0;
    for (int c = 0; c < C; ++c) m += x[static_cast<size_t>(i) * C + c];
    m /= C;
    double var = 0.0;
    for (int c = 0; c < C; ++c) {
      const double d = x[static_cast<size_t>(i) * C + c] - m;
      var += d * d;
    }
    var /= C;
    const double s = 1.0 / std::sqrt(var + 1e-5);
    for (int c = 0; c < C; ++c)
      out[static_cast<size_t>(i) * C + c] = (x[static_cast<size_t>(i) * C + c] - m) * s * w[c] + b[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

// Through the explicit Jacobian of the normalisation, d n_c / d x_j = rstd (delta_cj - 1/C - n_c n_j / C),
// O(C^2) per row: a different route from the kernel's closed form. dx, dw, db accumulate.
inline void layernorm_backward(Vec& dx, Vec& dw, Vec& db, const Vec& dout, const Vec& x, const Vec& w, int N,
                               int C) {
  Vec out, mean, rstd;
  Vec bias(C, 0.0);
  layernorm_forward(out, mean, rstd, x, w, bias, N, C);
  for (int i = 0; i < N; ++i) {
    const double* xi = &x[static_cast<size_t>(i) * C];
    const double* gi = &dout[static_cast<size_t>(i) * C];
    std::vector<double> n(C);
    for (int c = 0; c < C; ++c) n[c] = (xi[c] - mean[i]) * rstd[i];
    for (int j = 0; j < C; ++j) {
      double acc = 0.0;
      for (int c = 0; c < C; ++c) {
        const double jac = rstd[i] * ((c == j ? 1.0 : 0.0) - 1.0 / C - n[c] * n[j] / C);
        acc += gi[c] * w[c] * jac;
      }
      dx[static_cast<size_t>(i) * C + j] += acc;
    }
    for (int c = 0; c < C; ++c) {
      dw[c] += gi[c] * n[c];
      db[c] += gi[c];
    }
  }
}

inline void linear_forward(Vec& out, const Vec& x, const Vec& w, const Vec* b, int N, int IN, int OUT) {
  out.assign(static_cast<size_t>(N) * OUT, 0.0);
  for (int i = 0; i < N; ++i)
    for (int o = 0; o < OUT; ++o) {
      double acc = b ? (*b)[o] : 0.0;
      for (int k = 0; k < IN; ++k) acc += x[static_cast<size_t>(i) * IN + k] * w[static_cast<size_t>(o) * IN + k];
      out[static_cast<size_t>(i) * OUT + o] = acc;
    }
}

// dx set; dw, db accumulate
inline void linear_backward(Vec& dx, Vec& dw, Vec* db, const Vec& dout, const Vec& x, const Vec& w, int N, int IN,
                            int OUT) {
  dx.assign(static_cast<size_t>(N) * IN, 0.0);
  for (int i = 0; i < N; ++i)
    for (int o = 0; o < OUT; ++o) {
      const double g = dout[static_cast<size_t>(i) * OUT + o];
      for (int k = 0; k < IN; ++k) {
        dx[static_cast<size_t>(i) * IN + k] += g * w[static_cast<size_t>(o) * IN + k];
        dw[static_cast<size_t>(o) * IN + k] += g * x[static_cast<size_t>(i) * IN + k];
      }
      if (db) (*db)[o] += g;
    }
}

// qkv (B,T,3C) -> att (B,NH,T,T), out (B,T,C); C = NH*hd
inline void attention_forward(Vec& out, Vec& att, const Vec& qkv, int B, int T, int NH, int hd) {
  const int C = NH * hd;
  out.assign(static_cast<size_t>(B) * T * C, 0.0);
  att.assign(static_cast<size_t>(B) * NH * T * T, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  auto q = [&](int b, int t, int h, int d) { return qkv[(static_cast<size_t>(b) * T + t) * 3 * C + h * hd + d]; };
  auto k = [&](int b, int t, int h, int d) { return qkv[(static_cast<size_t>(b) * T + t) * 3 * C + C + h * hd + d]; };
  auto v = [&](int b, int t, int h, int d) { return qkv[(static_cast<size_t>(b) * T + t) * 3 * C + 2 * C + h * hd + d]; };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        double* a = &att[((static_cast<size_t>(b) * NH + h) * T + t) * T];
        double mx = -INFINITY;
        for (int s = 0; s <= t; ++s) {
          double dot = 0.0;
          for (int d = 0; d < hd; ++d) dot += q(b, t, h, d) * k(b, s, h, d);
          a[s] = dot * scale;
          mx = std::max(mx, a[s]);
        }
        double sum = 0.0;
        for (int s = 0; s <= t; ++s) {
          a[s] = std::exp(a[s] - mx);
          sum += a[s];
        }
        for (int s = 0; s <= t; ++s) a[s] /= sum;
        for (int d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (int s = 0; s <= t; ++s) acc += a[s] * v(b, s, h, d);
          out[(static_cast<size_t>(b) * T + t) * C + h * hd + d] = acc;
        }
      }
}

// dqkv set, from the chain rule written element by element
inline void attention_backward(Vec& dqkv, const Vec& dout, const Vec& qkv, int B, int T, int NH, int hd) {
  const int C = NH * hd;
  Vec out, att;
  attention_forward(out, att, qkv, B, T, NH, hd);
  dqkv.assign(qkv.size(), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  auto idx = [&](int b, int t, int part, int h, int d) {
    return (static_cast<size_t>(b) * T + t) * 3 * C + part * C + h * hd + d;
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const double* a = &att[((static_cast<size_t>(b) * NH + h) * T + t) * T];
        const double* g = &dout[(static_cast<size_t>(b) * T + t) * C + h * hd];
        std::vector<double> da(t + 1, 0.0);
        for (int s = 0; s <= t; ++s)
          for (int d = 0; d < hd; ++d) {
            da[s] += g[d] * qkv[idx(b, s, 2, h, d)];
            dqkv[idx(b, s, 2, h, d)] += a[s] * g[d];
          }
        for (int s = 0; s <= t; ++s) {
          // d softmax: dpre_s = sum_r da_r * a_r (delta_rs - a_s)
          double dpre = 0.0;
          for (int r = 0; r <= t; ++r) dpre += da[r] * a[r] * ((r == s ? 1.0 : 0.0) - a[s]);
          for (int d = 0; d < hd; ++d) {
            dqkv[idx(b, t, 0, h, d)] += dpre * scale * qkv[idx(b, s, 1, h, d)];
            dqkv[idx(b, s, 1, h, d)] += dpre * scale * qkv[idx(b, t, 0, h, d)];
          }
        }
      }
}

inline double gelu(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
inline double gelu_grad(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  const double u = k * (x + 0.044715 * x * x * x);
  const double th = std::tanh(u);
  return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// Elementwise: y = gelu(x), dx = gelu'(x) * dout.
inline void gelu_forward_backward(Vec& y, Vec& dx, const Vec& x, const Vec& dout) {
  y.resize(x.size());
  dx.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = gelu(x[i]);
    dx[i] = gelu_grad(x[i]) * dout[i];
  }
}

// The MLP's fc layer with its GELU: pre = x W^T (+ b), out = gelu(pre), dpre = gelu'(pre) * dout.
inline void linear_gelu(Vec& pre, Vec& out, Vec& dpre, const Vec& x, const Vec& w, const Vec* b, const Vec& dout,
                        int N, int IN, int OUT) {
  linear_forward(pre, x, w, b, N, IN, OUT);
  gelu_forward_backward(out, dpre, pre, dout);
}

// Full-vocabulary cross-entropy: loss (N) and dlogits (N,V) = scale * (softmax - onehot)
inline void crossentropy(Vec& loss, Vec& dlogits, const Vec& logits, const std::vector<int32_t>& tgt, int N, int V,
                         double scale) {
  loss.assign(N, 0.0);
  dlogits.assign(static_cast<size_t>(N) * V, 0.0);
  for (int i = 0; i < N; ++i) {
    const double* l = &logits[static_cast<size_t>(i) * V];
    double mx = -INFINITY;
    for (int j = 0; j < V; ++j) mx = std::max(mx, l[j]);
    double sum = 0.0;
    for (int j = 0; j < V; ++j) sum += std::exp(l[j] - mx);
    const double lse = std::log(sum) + mx;
    loss[i] = lse - l[tgt[i]];
    for (int j = 0; j < V; ++j)
      dlogits[static_cast<size_t>(i) * V + j] = scale * (std::exp(l[j] - lse) - (j == tgt[i] ? 1.0 : 0.0));
  }
}

inline void adamw(Vec& p, const Vec& g, Vec& m, Vec& v, double lr, double b1, double b2, double eps, double wd,
                  int step, double g_scale) {
  for (size_t i = 0; i < p.size(); ++i) {
    const double gi = g[i] * g_scale;
    m[i] = b1 * m[i] + (1.0 - b1) * gi;
    v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
    const double mhat = m[i] / (1.0 - std::pow(b1, step));
    const double vhat = v[i] / (1.0 - std::pow(b2, step));
    p[i] = p[i] - lr * (mhat / (std::sqrt(vhat) + eps) + wd * p[i]);
  }
}

}  // namespace ref

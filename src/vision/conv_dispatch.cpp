// Chooses the convolution backend: oneDNN when the build has it, the loop nest otherwise or when asked.
#include "src/core/error.hpp"
#include "src/vision/conv.hpp"

namespace gt::vision {
namespace detail {
#ifndef GRIDTRAIN_HAVE_ONEDNN
// Without oneDNN the oneDNN entry points exist only so that the dispatch links; they are never called.
bool onednn_available() { return false; }
void conv_forward_onednn(const ConvShape&, const float*, const float*, float*) {}
void conv_backward_data_onednn(const ConvShape&, const float*, const float*, float*) {}
void conv_backward_weights_onednn(const ConvShape&, const float*, const float*, float*) {}
#endif
}  // namespace detail

namespace {
// The process's choice. One per process (not per model): the backend is a property of the build and the run.
ConvBackend& chosen() {
  static ConvBackend b = detail::onednn_available() ? ConvBackend::onednn : ConvBackend::naive;
  return b;
}
}  // namespace

ConvBackend conv_backend() { return chosen(); }

void set_conv_backend(ConvBackend b) {
  if (b == ConvBackend::onednn && !detail::onednn_available())
    throw Error("the convolution backend onednn is not in this build (Debian: apt-get install libdnnl-dev)");
  chosen() = b;
}

std::string conv_backend_name(ConvBackend b) { return b == ConvBackend::onednn ? "onednn" : "naive"; }

void conv_forward(const ConvShape& s, const float* x, const float* w, float* y) {
  if (chosen() == ConvBackend::onednn) detail::conv_forward_onednn(s, x, w, y);
  else detail::conv_forward_naive(s, x, w, y);
}

void conv_backward_data(const ConvShape& s, const float* dy, const float* w, float* dx) {
  if (chosen() == ConvBackend::onednn) detail::conv_backward_data_onednn(s, dy, w, dx);
  else detail::conv_backward_data_naive(s, dy, w, dx);
}

void conv_backward_weights(const ConvShape& s, const float* x, const float* dy, float* dw) {
  if (chosen() == ConvBackend::onednn) detail::conv_backward_weights_onednn(s, x, dy, dw);
  else detail::conv_backward_weights_naive(s, x, dy, dw);
}

}  // namespace gt::vision

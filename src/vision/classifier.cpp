// The head: the vision code's entry points onto kernels/classifier.hpp.
#include "src/vision/classifier.hpp"

#include "kernels/classifier.hpp"
#include "src/vision/buffer.hpp"

namespace gt::vision {

void linear_forward(int batch, int features, int classes, const float* x, const float* w, const float* b,
                    float* logits) {
  gt::fc_forward(logits, x, w, b, batch, features, classes);
}

void linear_backward(int batch, int features, int classes, const float* x, const float* w, const float* dlogits,
                     float* dx, float* dw, float* db, HeadScratch& scratch) {
  float* partials = detail::room_for(scratch.partials, gt::fc_backward_partials(batch, classes));
  gt::fc_backward(dx, dw, db, partials, x, w, dlogits, batch, features, classes);
}

// The rows' losses added in row order (the order a single loop over the batch adds them). labels: where the
// kernels read (a Buffer of the network's).
double softmax_xent(int batch, int classes, const float* logits, const int* labels, float* dlogits,
                    int* correct, HeadScratch& scratch) {
  double* loss = detail::room_for(scratch.row_loss, batch);
  int* hit = detail::room_for(scratch.row_hit, batch);
  gt::softmax_xent_rows(dlogits, loss, hit, logits, labels, batch, classes);
  device_fence();
  double sum = 0.0;
  for (int n = 0; n < batch; ++n) {
    sum += loss[n];
    if (correct) *correct += hit[n];
  }
  return sum / batch;
}

}  // namespace gt::vision

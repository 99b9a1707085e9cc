#pragma once
// The ResNet head and its loss: a fully connected layer (logits = x W^T + b, W is classes x features) and softmax
// cross-entropy averaged over the batch. (The blocks' ReLUs are fused into their BatchNorms: batchnorm.hpp.)

#include "src/vision/buffer.hpp"

namespace gt::vision {

// The head's per-step scratch, kept by the caller between steps: on device builds a Buffer is CUDA managed
// memory, and one allocated per step costs a cudaMallocManaged and a cudaFree, which waits for the device.
struct HeadScratch {
  Buffer<double> row_loss;  // softmax_xent: each row's loss, added on the host in row order
  Buffer<int> row_hit;      // ... and whether its arg-max is its label
  Buffer<float> partials;   // linear_backward: db's column sums on the device split (empty on the host's)
};


void linear_forward(int batch, int features, int classes, const float* x, const float* w, const float* b,
                    float* logits);
// dx overwritten; dw and db overwritten.
void linear_backward(int batch, int features, int classes, const float* x, const float* w, const float* dlogits,
                     float* dx, float* dw, float* db, HeadScratch& scratch);

// Mean over the batch of -log softmax(logits)[label]; dlogits (overwritten) is its gradient. Returns the loss
// and counts the rows whose arg-max equals the label into *correct when it is not null.
double softmax_xent(int batch, int classes, const float* logits, const int* labels, float* dlogits,
                    int* correct, HeadScratch& scratch);

}  // namespace gt::vision

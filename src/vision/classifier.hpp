#pragma once
// The ResNet head and its loss: a fully connected layer (logits = x W^T + b, W is classes x features) and softmax
// cross-entropy averaged over the batch; plus ReLU, which the blocks use between convolutions.

namespace gt::vision {

void relu_forward(long n, const float* x, float* y);
// dx = dy where the forward input was positive (y > 0 is the same test and lets x be overwritten in place).
void relu_backward(long n, const float* y, const float* dy, float* dx);

void linear_forward(int batch, int features, int classes, const float* x, const float* w, const float* b,
                    float* logits);
// dx overwritten; dw and db overwritten.
void linear_backward(int batch, int features, int classes, const float* x, const float* w, const float* dlogits,
                     float* dx, float* dw, float* db);

// Mean over the batch of -log softmax(logits)[label]; dlogits (overwritten) is its gradient. Returns the loss
// and counts the rows whose arg-max equals the label into *correct when it is not null.
double softmax_xent(int batch, int classes, const float* logits, const int* labels, float* dlogits,
                    int* correct);

}  // namespace gt::vision

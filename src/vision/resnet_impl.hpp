#pragma once
// The ResNet's layers and its last training forward's activations (the pimpl of resnet.hpp), shared by
// resnet.cpp (layout, initialisation) and resnet_step.cpp (forward, backward). Internal.
#include <vector>

#include "src/vision/classifier.hpp"
#include "src/vision/resnet.hpp"
#include "src/vision/resnet_layers.hpp"

namespace gt::vision {

struct ResNet::Impl {
  detail::ConvLayer stem;
  detail::BatchNormLayer stem_bn;
  std::vector<detail::ResBlock> blocks;
  long fc_w = 0, fc_b = 0;
  int features = 0;
  // the last training forward's activations that backward needs
  detail::Dims in_dims, stem_dims, pool_dims;  // pool_dims: after the ImageNet stem's max pool
  const float* images = nullptr;
  detail::ConvOut stem_a;
  Buffer<float> stem_out, stem_pooled, pooled, logits, dlogits;
  Buffer<long> stem_argmax;  // the max pool's winners
  Buffer<int> labels;        // the batch's, where the loss kernel reads them
  Buffer<float> g_pooled, g_x, g_next, g_stem;  // backward's gradients, kept between steps (see ResBlock)
  HeadScratch head;  // the loss's and the head's per-step scratch (classifier.hpp)
  int batch = 0;
  // every convolution: the stem's, then each block's chain and its projection (whether used or not)
  std::vector<detail::ConvLayer*> convs() {
    std::vector<detail::ConvLayer*> out{&stem};
    for (detail::ResBlock& blk : blocks) {
      for (detail::ConvLayer& c : blk.convs) out.push_back(&c);
      out.push_back(&blk.proj);
    }
    return out;
  }
};

}  // namespace gt::vision

// The ResNet's forward pass (stem, [max pool,] blocks, global average pool, classifier, loss) and its backward
// pass, side by side.
#include <cstring>

#include "kernels/elementwise.hpp"
#include "src/core/error.hpp"
#include "src/vision/classifier.hpp"
#include "src/vision/pool.hpp"
#include "src/vision/resnet_impl.hpp"

namespace gt::vision {

using detail::Dims;

namespace {
// The ImageNet stem's max pool: 3x3, stride 2, pad 1 (224 -> 112 -> 56).
PoolShape stem_pool(const Dims& d) { return {d.n, d.h, d.w, d.c, 3, 2, 1}; }
}  // namespace

float* ResNet::forward_features(bool train) {
  auto& m = *impl_;
  const float* p = p_;
  detail::unit_conv_forward(m.stem, m.stem_bn, m.in_dims, p, m.images, m.stem_a, train);
  m.stem_dims = m.stem.out(m.in_dims);
  m.stem_a.visit([&](const auto* a) { m.stem_bn.forward(m.stem_dims, p, a, m.stem_out, train); });  // and ReLU
  const float* x = m.stem_out.data();
  Dims d = m.stem_dims;
  if (cfg_.stem == ResNetStem::ImageNet) {  // the 3x3 stride-2 max pool after the 7x7 stem
    const PoolShape ps = stem_pool(d);
    m.stem_pooled.resize(ps.out_size());
    maxpool_forward(ps, x, m.stem_pooled.data(), m.stem_argmax);
    m.pool_dims = d = {d.n, ps.out_h(), ps.out_w(), d.c};
    x = m.stem_pooled.data();
  }
  for (auto& blk : m.blocks) {
    blk.forward(d, p, x, train);
    d = blk.mid;
    x = blk.out.data();
  }
  return m.blocks.back().out.data();
}

StepResult ResNet::forward(int batch, const float* images, const int* labels, bool train) {
  auto& m = *impl_;
  for (int i = 0; i < batch; ++i)
    if (labels[i] < 0 || labels[i] >= cfg_.classes)
      throw Error("resnet: label " + std::to_string(labels[i]) + " out of range [0, " +
                  std::to_string(cfg_.classes) + ")");
  m.batch = batch;
  m.images = images;
  m.labels.assign(labels, labels + batch);
  m.in_dims = {batch, cfg_.height, cfg_.width, cfg_.channels};
  const float* feat = forward_features(train);
  const Dims last = m.blocks.back().mid;
  const PoolShape gap{batch, last.h, last.w, last.c, last.h, 1, 0};  // the global average (square maps)
  m.pooled.resize(gap.out_size());
  avgpool_forward(gap, feat, m.pooled.data());
  m.logits.resize(long(batch) * cfg_.classes);
  m.dlogits.resize(m.logits.size());
  linear_forward(batch, m.features, cfg_.classes, m.pooled.data(), p_ + m.fc_w,
                 p_ + m.fc_b, m.logits.data());
  StepResult r;
  r.loss = softmax_xent(batch, cfg_.classes, m.logits.data(), m.labels.data(), m.dlogits.data(), &r.correct,
                        m.head);
  return r;
}

void ResNet::backward(const std::function<void(int)>& unit_done, float grad_scale) {
  auto done = [&unit_done](int u) {
    if (unit_done) unit_done(u);
  };
  auto& m = *impl_;
  const float* p = p_;
  float* g = g_;
  const Dims last = m.blocks.back().mid;
  Buffer<float>&dpooled = m.g_pooled, &dx = m.g_x, &dnext = m.g_next;
  dpooled.resize(m.pooled.size());
  detail::room_for(dx, last.size());  // dx and dnext trade places at every block: sizes differ (resnet_layers.hpp)
  if (grad_scale != 1.f) gt::scale_inplace(m.dlogits.data(), long(m.dlogits.size()), grad_scale);
  linear_backward(m.batch, m.features, cfg_.classes, m.pooled.data(), p + m.fc_w, m.dlogits.data(),
                  dpooled.data(), g + m.fc_w, g + m.fc_b, m.head);
  done(int(m.blocks.size()) + 1);  // the classifier
  avgpool_backward({m.batch, last.h, last.w, last.c, last.h, 1, 0}, dpooled.data(), dx.data());
  for (size_t i = m.blocks.size(); i-- > 0;) {
    m.blocks[i].backward(p, dx.data(), g, dnext);
    dx.swap(dnext);
    done(int(i) + 1);
  }
  Buffer<float>& da = m.g_stem;
  if (cfg_.stem == ResNetStem::ImageNet) {  // back through the max pool to the stem's full map
    detail::room_for(dnext, m.stem_dims.size());  // maxpool_backward sets every element
    maxpool_backward(stem_pool(m.stem_dims), dx.data(), m.stem_argmax, dnext.data());
    dx.swap(dnext);
  }
  m.stem_a.visit([&](const auto* a) {  // BN with its ReLU's mask, then the stem conv
    Buffer<float>* no_dx = nullptr;  // the images need no gradient
    detail::unit_backward(m.stem, m.in_dims, m.stem_bn, p, a, m.images, dx.data(), g, da, no_dx);
  });
  done(0);
}

}  // namespace gt::vision

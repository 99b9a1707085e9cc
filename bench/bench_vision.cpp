// bench_vision, two modes (issue 21; the trainer seam for ResNets is not built yet, so both run the model here):
//  - Fashion-MNIST (default): a short single-process ResNet-20 training run straight from the idx files, with SGD +
//    momentum, augmentation and a step-decayed learning rate. Prints training img/s (excluding evaluation) and the
//    test split's top-1 accuracy and loss.
//  - --synthetic: training-step throughput of a preset (--model resnet50, --image 224) on synthetic ImageNet-shaped
//    images (normal noise, labels i mod classes, deterministic): --steps timed steps after one untimed warm-up
//    step (first-touch of every buffer and oneDNN's primitive creation), each step forward, backward and SGD.
//    scripts/bench_torchvision.py is the PyTorch peer of this mode; scripts/bench_vision_peer.sh alternates them.
// Both write their figures to --out (JSON).
//   bench_vision [--dir /usr/share/datasets/fashion-mnist] [--steps 300] [--batch 128] [--lr 0.1]
//                [--eval-images 10000] [--out bench_vision.json]
//   bench_vision --synthetic 1 [--model resnet50] [--image 224] [--classes 1000] [--batch 16] [--steps 5]
//                [--bf16 1]   (--bf16: the convolutions multiply in bf16, ResNetConfig::bf16; both modes)
//                [--winograd 1]  (fp32 3x3 stride-1 convolutions as Winograd where oneDNN has it: model.conv_algorithm)
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "bench/bench_util.hpp"
#include "src/core/error.hpp"
#include "src/vision/augment.hpp"
#include "src/vision/conv.hpp"
#include "src/vision/idx_reader.hpp"
#include "src/vision/resnet.hpp"
#include "src/vision/sgd.hpp"

using namespace gt::vision;

namespace {

struct Options {
  std::string dir = "/usr/share/datasets/fashion-mnist", out = "bench_vision.json", model = "resnet50";
  int steps = 300, batch = 128, eval_images = 10000, image = 224, classes = 1000;
  bool synthetic = false, bf16 = false, winograd = false;
  float lr = 0.1f;
};

constexpr const char* kOptions =
    "--dir --out --steps --batch --eval-images --lr --synthetic --bf16 --winograd --model --image --classes";

// Options come in pairs; a lone word (--help among them) is refused with the list instead of being ignored, which
// used to start a full training run.
Options parse(int argc, char** argv) {
  Options o;
  if (argc % 2 == 0)
    throw gt::Error(std::string("bench_vision: ") + argv[argc - 1] + " needs a value (options, each with one: " +
                    kOptions + ")");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") o.dir = v;
    else if (k == "--out") o.out = v;
    else if (k == "--steps") o.steps = std::atoi(v.c_str());
    else if (k == "--batch") o.batch = std::atoi(v.c_str());
    else if (k == "--eval-images") o.eval_images = std::atoi(v.c_str());
    else if (k == "--lr") o.lr = float(std::atof(v.c_str()));
    else if (k == "--synthetic") o.synthetic = v != "0";
    else if (k == "--bf16") o.bf16 = v != "0";
    else if (k == "--winograd") o.winograd = v != "0";
    else if (k == "--model") o.model = v;
    else if (k == "--image") o.image = std::atoi(v.c_str());
    else if (k == "--classes") o.classes = std::atoi(v.c_str());
    else throw gt::Error("bench_vision: unknown option " + k + " (options: " + kOptions + ")");
  }
  return o;
}

// Fills a batch: sample indices from a per-epoch permutation-free stride walk (deterministic), augmented.
void fill(const IdxImages& img, const std::vector<std::uint8_t>& lab, const AugmentParams& aug, bool train,
          long first, int batch, std::vector<float>& x, std::vector<int>& y) {
  const long px = long(img.rows) * img.cols;
  x.resize(batch * px);
  y.resize(batch);
  for (int b = 0; b < batch; ++b) {
    const long g = first + b, epoch = g / img.count;
    // a fixed odd multiplier walks every index once per epoch in a scrambled order
    const long idx = train ? (g % img.count * 7919 + epoch * 104729) % img.count : g % img.count;
    augment_image(aug, train, epoch, idx, img.rows, img.cols, 1, img.pixels.data() + idx * px, x.data() + b * px);
    y[b] = lab[idx];
  }
}

double evaluate(ResNet& net, const IdxImages& img, const std::vector<std::uint8_t>& lab, const AugmentParams& aug,
                int n, double* loss) {
  std::vector<float> x;
  std::vector<int> y;
  int correct = 0;
  double total = 0.0;
  const int b = 250;
  for (int first = 0; first < n; first += b) {
    const int cur = std::min(b, n - first);
    fill(img, lab, aug, false, first, cur, x, y);
    const StepResult r = net.forward(cur, x.data(), y.data(), false);
    correct += r.correct;
    total += r.loss * cur;
  }
  *loss = total / n;
  return double(correct) / n;
}

// One training step on the batch (x, y): forward, backward, SGD with momentum per tensor; returns the loss.
double train_step(ResNet& net, int batch, const std::vector<float>& x, const std::vector<int>& y,
                  const SgdParams& sgd, std::vector<float>& velocity) {
  const double loss = net.forward(batch, x.data(), y.data(), true).loss;
  net.backward();
  for (const auto& t : net.tensors())
    sgd_step(sgd, t.decay, t.size, net.params().data() + t.offset, net.grads().data() + t.offset,
             velocity.data() + t.offset);
  return loss;
}

// The convolutions' backend as the run used it: "onednn", "onednn-bf16", "onednn-winograd" (where oneDNN has it).
std::string backend_name(const Options& o) {
  std::string b = conv_backend_name(conv_backend());
  if (o.bf16) b += conv_bf16_native() ? "-bf16" : "-bf16-emulated";
  if (o.winograd && !o.bf16)
    b += conv_uses_winograd(ConvShape{2, 8, 8, 64, 64, 3, 3, 1, 1, false, true}) ? "-winograd" : "-winograd-unavailable";
  return b;
}

// --synthetic: img/s of the training step of a preset on ImageNet-shaped noise (see the header).
int run_synthetic(const Options& o) {
  ResNetConfig cfg = resnet_preset(o.model, o.image, o.image, 3, o.classes);
  cfg.bf16 = o.bf16;
  cfg.winograd = o.winograd;
  ResNet net(cfg);
  std::mt19937 gen(17);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(long(o.batch) * o.image * o.image * 3), velocity(net.params().size(), 0.f);
  for (auto& v : x) v = nd(gen);
  std::vector<int> y(o.batch);
  for (int i = 0; i < o.batch; ++i) y[i] = i % o.classes;
  // a small rate: noise has nothing to learn, and 0.1 on it diverges (values out of range, where a CPU may slow)
  const SgdParams sgd{1e-3f, 0.9f, 1e-4f};
  std::vector<double> step_s, cpu_s;  // wall and process CPU time (robust on a shared machine with one thread)
  double loss = 0.0;
  auto cpu_now = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };
  for (int step = 0; step <= o.steps; ++step) {  // step 0: the warm-up, not timed
    const double c0 = cpu_now();
    const auto t0 = std::chrono::steady_clock::now();
    loss = train_step(net, o.batch, x, y, sgd, velocity);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double c = cpu_now() - c0;
    if (step > 0) {
      step_s.push_back(s);
      cpu_s.push_back(c);
    }
    std::printf("step %d: %.3f s (CPU %.3f s) loss %.4f\n", step, s, c, loss);
  }
  auto median_of = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double median = median_of(step_s), cpu_median = median_of(cpu_s);
  const std::string backend = backend_name(o);
  std::printf("%s %dx%dx3 synthetic, batch %d: median step %.3f s, %.2f img/s (%d timed steps, conv %s, %zu parameters)\n",
              o.model.c_str(), o.image, o.image, o.batch, median, o.batch / median, o.steps, backend.c_str(),
              net.params().size());
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"model\": \"%s\", \"image\": %d, \"batch\": %d, \"steps\": %d, \"median_step_s\": %.5f, "
                "\"img_per_s\": %.3f, \"median_cpu_step_s\": %.5f, \"img_per_cpu_s\": %.3f, \"conv_backend\": \"%s\", "
                "\"parameters\": %zu}\n",
                o.model.c_str(), o.image, o.batch, o.steps, median, o.batch / median, cpu_median, o.batch / cpu_median,
                backend.c_str(), net.params().size());
  gt::bench::write_text(o.out, buf, "bench_vision");
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Kokkos::ScopeGuard kokkos(argc, argv);  // the model's passes over activations are Kokkos kernels
  const Options o = parse(argc, argv);
  if (o.synthetic) return run_synthetic(o);
  const IdxImages train = read_idx_images(o.dir + "/train-images-idx3-ubyte.gz");
  const auto train_lab = read_idx_labels(o.dir + "/train-labels-idx1-ubyte.gz");
  const IdxImages test = read_idx_images(o.dir + "/t10k-images-idx3-ubyte.gz");
  const auto test_lab = read_idx_labels(o.dir + "/t10k-labels-idx1-ubyte.gz");
  ResNetConfig cfg;  // ResNet-20 for 28x28x1, 10 classes
  cfg.bf16 = o.bf16;
  cfg.winograd = o.winograd;
  ResNet net(cfg);
  AugmentParams aug;
  std::vector<float> velocity(net.params().size(), 0.f), x;
  std::vector<int> y;
  double train_s = 0.0, last_loss = 0.0;
  for (int step = 0; step < o.steps; ++step) {
    // lr: linear warmup over the first 5% of steps, then /10 at 50% and 75% (the ResNet paper's shape)
    SgdParams sgd{o.lr, 0.9f, 5e-4f};
    const int warm = std::max(1, o.steps / 20);
    if (step < warm) sgd.lr = o.lr * float(step + 1) / warm;
    if (step >= o.steps / 2) sgd.lr *= 0.1f;
    if (step >= o.steps * 3 / 4) sgd.lr *= 0.1f;
    fill(train, train_lab, aug, true, long(step) * o.batch, o.batch, x, y);
    const auto t0 = std::chrono::steady_clock::now();
    last_loss = train_step(net, o.batch, x, y, sgd, velocity);
    train_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (step % 50 == 0) std::printf("step %d loss %.4f lr %.4f\n", step, last_loss, sgd.lr);
  }
  double test_loss = 0.0;
  const int n_eval = std::min(o.eval_images, test.count);
  const double acc = evaluate(net, test, test_lab, aug, n_eval, &test_loss);
  const double ips = double(o.steps) * o.batch / train_s;
  const std::string backend = backend_name(o);
  std::printf("resnet20 (%zu parameters) fashion-mnist: %d steps x %d images, %.1f img/s (train step, conv %s), test top-1 %.4f "
              "loss %.4f on %d images, final train loss %.4f\n",
              net.params().size(), o.steps, o.batch, ips, backend.c_str(), acc, test_loss, n_eval, last_loss);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"model\": \"resnet20\", \"steps\": %d, \"batch\": %d, \"lr\": %g, \"img_per_s\": %.2f, "
                "\"conv_backend\": \"%s\", \"test_top1\": %.5f, \"test_loss\": %.5f, \"eval_images\": %d}\n",
                o.steps, o.batch, o.lr, ips, backend.c_str(), acc, test_loss, n_eval);
  gt::bench::write_text(o.out, buf, "bench_vision");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gridtrain: error: %s\n", e.what());
  return 1;
}

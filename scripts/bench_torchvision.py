#!/usr/bin/env python3
"""The PyTorch peer of `bench_vision --synthetic` (issue 21): torchvision's ResNet (same preset names, same shapes and
parameter count) training on the same kind of synthetic ImageNet-shaped batch, forward + backward + SGD with
momentum, one thread. As fast as PyTorch 1.13 honestly gets on a CPU: channels-last tensors (oneDNN's blocked
convolutions without layout conversions at every layer; --layout contiguous to compare), no autograd anomaly
checks, gradients set to None instead of zeroed, one untimed warm-up step (oneDNN primitive creation, first
touch). --bf16: the forward under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's mixed precision for
CPUs (convolutions and the classifier in bf16, fp32 weights and optimizer), the peer of gridtrain's
train.precision = "bf16". Prints one JSON line (medians of wall and process CPU time per timed step) and appends
it to --out.

--device cuda (the GPU check's vision stage, scripts/gpu_check.sh): the same step on the GPU, autocast("cuda") for
bf16, synchronised around each timed step, and the energy of the timed steps from NVML's total-energy counter
(nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver loaded, Volta and newer; read through ctypes from
the driver's libnvidia-ml.so.1, no Python package needed) as joules per image and images per joule: the seed's
img/J. Without NVML the energy is "n/a (...)", never an estimate.

  /usr/bin/python3 scripts/bench_torchvision.py --model resnet50 --image 224 --batch 16 --steps 5 --threads 1
  python3 scripts/bench_torchvision.py --device cuda --model resnet50 --batch 128 --steps 20 --bf16
"""
import argparse, ctypes, json, statistics, time


class NvmlEnergy:
    """The GPU's total-energy counter in joules, or why there is none (self.why)."""

    def __init__(self, index=0):
        self.why, self.lib, self.handle = "", None, ctypes.c_void_p()
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            self.why = f"no NVML ({e})"
            return
        rc = self.lib.nvmlInit_v2()
        if rc == 0:
            rc = self.lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(self.handle))
        if rc != 0:
            self.why = f"NVML error {rc}"
        elif self.joules() is None:
            self.why = "NVML has no energy counter for this GPU"

    def joules(self):
        if self.lib is None or self.why:
            return None
        mj = ctypes.c_ulonglong()
        if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(mj)) != 0:
            return None
        return mj.value / 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--layout", choices=["channels_last", "contiguous"], default="channels_last")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    import contextlib
    import torch, torchvision
    torch.set_num_threads(a.threads)
    torch.manual_seed(17)
    dev = torch.device(a.device)
    gpu = a.device == "cuda"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    if gpu:  # cuDNN's autotuner picks each convolution's fastest algorithm in the warm-up step (as fast as it gets)
        torch.backends.cudnn.benchmark = True
    model = getattr(torchvision.models, a.model)(num_classes=a.classes)
    fmt = torch.channels_last if a.layout == "channels_last" else torch.contiguous_format
    model = model.to(device=dev, memory_format=fmt).train()
    x = torch.randn(a.batch, 3, a.image, a.image, device=dev).to(memory_format=fmt)
    y = torch.arange(a.batch, device=dev) % a.classes
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    energy = NvmlEnergy() if gpu else None
    wall, cpu = [], []
    for step in range(a.steps + 1):  # step 0: the warm-up, not timed
        if step == 1:
            sync()
            j0, e0 = (energy.joules() if energy else None), time.perf_counter()
        c0, t0 = time.process_time(), time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with (torch.autocast(a.device, dtype=torch.bfloat16) if a.bf16 else contextlib.nullcontext()):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        sync()
        if step > 0:
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    j1, e1 = (energy.joules() if energy else None), time.perf_counter()
    params = sum(p.numel() for p in model.parameters())
    w, c = statistics.median(wall), statistics.median(cpu)
    line = {"peer": f"torch {torch.__version__} torchvision {torchvision.__version__}", "model": a.model,
            "device": torch.cuda.get_device_name() if gpu else "cpu",
            "image": a.image, "batch": a.batch, "steps": a.steps, "threads": a.threads, "layout": a.layout,
            "precision": "bf16 autocast" if a.bf16 else "fp32",
            "parameters": params, "median_step_s": w, "img_per_s": a.batch / w, "median_cpu_step_s": c,
            "img_per_cpu_s": a.batch / c}
    if gpu:  # fp32 convolutions run in TF32 unless PyTorch is told otherwise: say which; then the timed steps' energy
        line["tf32_convolutions"] = bool(torch.backends.cudnn.allow_tf32)
        if j0 is not None and j1 is not None and j1 > j0:
            images = a.batch * a.steps
            line.update({"energy_j": j1 - j0, "j_per_img": (j1 - j0) / images, "img_per_j": images / (j1 - j0),
                         "avg_power_w": (j1 - j0) / (e1 - e0)})
        else:
            line["energy"] = "n/a (" + (energy.why or "the counter did not advance") + ")"
    print(json.dumps(line))
    if a.out:
        with open(a.out, "a") as f:
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()

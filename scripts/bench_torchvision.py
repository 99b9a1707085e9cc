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

  /usr/bin/python3 scripts/bench_torchvision.py --model resnet50 --image 224 --batch 16 --steps 5 --threads 1
"""
import argparse, json, statistics, time


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
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    import contextlib
    import torch, torchvision
    torch.set_num_threads(a.threads)
    torch.manual_seed(17)
    model = getattr(torchvision.models, a.model)(num_classes=a.classes)
    fmt = torch.channels_last if a.layout == "channels_last" else torch.contiguous_format
    model = model.to(memory_format=fmt).train()
    x = torch.randn(a.batch, 3, a.image, a.image).to(memory_format=fmt)
    y = torch.arange(a.batch) % a.classes
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    wall, cpu = [], []
    for step in range(a.steps + 1):  # step 0: the warm-up, not timed
        c0, t0 = time.process_time(), time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with (torch.autocast("cpu", dtype=torch.bfloat16) if a.bf16 else contextlib.nullcontext()):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step > 0:
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    params = sum(p.numel() for p in model.parameters())
    w, c = statistics.median(wall), statistics.median(cpu)
    line = {"peer": f"torch {torch.__version__} torchvision {torchvision.__version__}", "model": a.model,
            "image": a.image, "batch": a.batch, "steps": a.steps, "threads": a.threads, "layout": a.layout,
            "precision": "bf16 autocast" if a.bf16 else "fp32",
            "parameters": params, "median_step_s": w, "img_per_s": a.batch / w, "median_cpu_step_s": c,
            "img_per_cpu_s": a.batch / c}
    print(json.dumps(line))
    if a.out:
        with open(a.out, "a") as f:
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()

"""The PyTorch GPT-2 peer model shared by the CPU and GPU benchmark scripts (scripts/bench_pytorch.py,
scripts/bench_torch_gpu.py), so both time the same model as gridtrain: pre-LayerNorm blocks, tanh GELU, learned
positions, the head tied to wte. Not part of the test suite.
"""
import math
import os


def read_preset(name):
    """inputs/NAME.toml as a flat {"section.key": "value"} dict (the presets are flat TOML: no tables in tables)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inputs", name + ".toml")
    cfg, sec = {}, ""
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line:
            continue
        if line.startswith("["):
            sec = line.strip("[]")
            continue
        k, v = [x.strip() for x in line.split("=", 1)]
        cfg[sec + "." + k] = v.strip('"')
    return cfg


def build_gpt(torch, L, C, H, T, V, attention, dev="cpu"):
    """attention: "math" (mask, then softmax: the (B, H, T, T) probabilities materialised), "fused_mask" (scale and
    causal mask inside one baddbmm: the fastest CPU form measured, docs/benchmarks.md) or "sdpa" (torch's
    scaled_dot_product_attention, a fused flash kernel on Hopper)."""
    nn, F = torch.nn, torch.nn.functional
    # plain attributes, not buffers: DDP broadcasts buffers and gloo cannot send bool tensors
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=dev))
    bias = torch.full((T, T), float("-inf"), device=dev).triu(1)  # 0 on and below the diagonal

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def attend(self, q, k, v):  # q, k, v: (B, H, T, hd) -> (B, H, T, hd)
            B, hd = q.shape[0], C // H
            if attention == "sdpa":
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            if attention == "fused_mask":  # att = bias + scale * q k^T
                q3, k3 = q.reshape(B * H, T, hd), k.reshape(B * H, T, hd)
                att = torch.baddbmm(bias.to(q.dtype), q3, k3.transpose(1, 2), alpha=1.0 / math.sqrt(hd))
                return att.softmax(dim=-1).view(B, H, T, T) @ v
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            return att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v

        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
            q, k, v = [t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v)]
            y = self.attend(q, k, v)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.fcproj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)
            self.register_buffer("pos", torch.arange(T), persistent=False)

        def forward(self, idx, tgt):
            x = self.wte(idx) + self.wpe(self.pos)
            for b in self.blocks:
                x = b(x)
            logits = self.ln_f(x) @ self.wte.weight.t()
            # fp32 loss under autocast (a no-op for fp32 logits)
            return F.cross_entropy(logits.view(-1, V).float(), tgt.view(-1))

    return GPT().to(dev)

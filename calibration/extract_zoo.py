"""Regenerate `calibration/data/zoo_tensors.json` from the real model definitions (needs torch).

    python -m calibration.extract_zoo [-o calibration/data/zoo_tensors.json]
    python -m calibration.extract_zoo --analytic   # the layer-table models below, without torch

For each buildable model it builds the module on PyTorch's `meta` device (shapes only, no
memory), then records
- the element count of every trainable parameter tensor in registration order (DDP buckets
  are formed from these in reverse order, see `calibration.zoo.ddp_buckets`);
- training FLOPs per sample (forward + backward, counted by `torch.utils.flop_counter`);
- activation bytes per sample (the bytes of tensors autograd saves for backward, counted by a
  saved-tensors hook), the batch-proportional part of the training memory footprint.
Counts are taken at batch 2 and divided by 2. Where a count fails on `meta` the field is
left out and `calibration.zoo` falls back to its analytic formula.
This is run once by a developer; the result is committed (small numbers, no weights).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from calibration import torch_models

log = logging.getLogger(__name__)
OUT = Path(__file__).resolve().parent / "data" / "zoo_tensors.json"


def _bark(size: str):
    import transformers

    h, layers, heads = (768, 12, 12) if size == "small" else (1024, 24, 16)
    sub = dict(hidden_size=h, num_layers=layers, num_heads=heads)
    cfg = transformers.BarkConfig(semantic_config=sub, coarse_acoustics_config=sub, fine_acoustics_config=sub)
    return transformers.BarkModel(cfg)


def extract(name: str) -> dict:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    rec: dict = {}
    with torch.device("meta"):
        if name.startswith("bark"):
            module = _bark("small" if name == "bark_small" else "normal")
            built = None
        else:
            built = torch_models.build(name)
            module = built.module
    rec["tensor_numel"] = [int(p.numel()) for p in module.parameters() if p.requires_grad]
    if built is None:
        return rec
    module.train()
    b = 2
    try:
        args, tgt = built.make_batch(b, "meta")
        saved = [0]

        def pack(t):
            if isinstance(t, torch.Tensor):
                saved[0] += t.numel() * t.element_size()
            return t

        counter = FlopCounterMode(display=False)
        with counter, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = module(*args)
            loss = built.loss(out, tgt)
            loss.backward()
        rec["train_flops_per_sample"] = float(counter.get_total_flops()) / b
        rec["activation_bytes_per_sample"] = float(saved[0]) / b
    except Exception as exc:  # noqa: BLE001 - record and fall back to the analytic estimate
        log.warning("%s: counting on meta failed (%s); zoo uses its analytic estimate", name, exc)
    return rec


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", default=str(OUT))
    ap.add_argument("--analytic", action="store_true",
                    help="only (re)write the analytic entries (ANALYTIC; no torch needed) into --out")
    ap.add_argument("models", nargs="*")
    ns = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    if ns.analytic:
        from cosim.atomic import write_text

        cur = json.loads(Path(ns.out).read_text()) if Path(ns.out).exists() else {}
        for n in ANALYTIC:
            if not n.endswith("_analytic"):
                cur[n] = analytic(n)
        write_text(json.dumps(cur, indent=None, separators=(",", ":"), sort_keys=True) + "\n", ns.out)
        return
    names = ns.models or [n for n in torch_models.buildable() if n != "tiny_mlp"] + ["bark", "bark_small"]
    out = {}
    for n in names:
        log.info("extracting %s", n)
        out[n] = extract(n)
        log.info("  %s: %d tensors, %.1fM params", n, len(out[n]["tensor_numel"]), sum(out[n]["tensor_numel"]) / 1e6)
    from cosim.atomic import write_text

    write_text(json.dumps(out, indent=None, separators=(",", ":"), sort_keys=True) + "\n", ns.out)



# ------------------------------------------------------------------ analytic conv nets (no torch)
# The CIFAR-10 variants the ONES trace trains (32×32 input, 10 classes: kuangliu/pytorch-cifar's
# layouts, the usual definitions) and torchvision's ImageNet ResNet-18 are counted here from their
# published layer tables, so they need no torch. A conv layer (k, cin, cout, side) with bias
# and/or BatchNorm contributes its tensors in registration order, 2·k²·cin·cout·side² forward
# FLOPs (×3 for forward + backward, as `torch.utils.flop_counter` counts training) and the
# tensors autograd saves: the conv input, the BN input and the ReLU output (fp32), plus the
# weights over the batch of 2 the torch count runs at (conv and linear save their weight for the
# input gradient, so `extract` counts each weight once per 2 samples; kept for consistency with
# its entries). The counter reproduces the torch-extracted CIFAR ResNet-18 tensor list exactly,
# its FLOPs to 0.1 % and its activation bytes to a few % (tests/calibration/test_zoo.py).


def _conv(k: int, cin: int, cout: int, side: int, bias: bool, bn: bool) -> tuple[list[int], float, float]:
    tensors = [k * k * cin * cout] + ([cout] if bias else []) + ([cout, cout] if bn else [])
    flops = 3.0 * 2.0 * k * k * cin * cout * side * side
    saved = 4.0 * side * side * (cin + cout * (2 if bn else 1))
    return tensors, flops, saved


def _linear(cin: int, cout: int) -> tuple[list[int], float, float]:
    return [cin * cout, cout], 3.0 * 2.0 * cin * cout, 4.0 * (cin + cout)


def _sum(parts: list[tuple[list[int], float, float]]) -> dict:
    numel = [n for p in parts for n in p[0]]
    weights = sum(p[0][0] for p in parts)  # the saved weight of each conv / linear
    return {"tensor_numel": numel, "train_flops_per_sample": sum(p[1] for p in parts),
            "activation_bytes_per_sample": sum(p[2] for p in parts) + 4.0 * weights / 2.0}


def resnet18_layers(stem: str, classes: int) -> list[tuple[list[int], float, float]]:
    """ResNet-18 (He et al. 2016, BasicBlock [2, 2, 2, 2]): ``stem="cifar"`` a 3×3 stride-1 conv on
    32×32 (kuangliu); ``"imagenet"`` torchvision's 7×7 stride-2 conv + max-pool on 224×224."""
    parts = [_conv(3, 3, 64, 32, False, True)] if stem == "cifar" else [_conv(7, 3, 64, 112, False, True)]
    side, cin = (32, 64) if stem == "cifar" else (56, 64)
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for blk in range(2):
            s = stride if blk == 0 else 1
            out_side = side // s
            parts += [_conv(3, cin, cout, out_side, False, True), _conv(3, cout, cout, out_side, False, True)]
            if s != 1 or cin != cout:
                parts.append(_conv(1, cin, cout, out_side, False, True))
            side, cin = out_side, cout
    return parts + [_linear(512, classes)]


def vgg16_cifar_layers() -> list[tuple[list[int], float, float]]:
    """VGG-16 (configuration D, Simonyan & Zisserman 2015) for CIFAR-10: 13 biased 3×3 convs with
    BatchNorm, max-pool after each stage, one Linear(512, 10) (kuangliu/pytorch-cifar)."""
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    parts, cin, side = [], 3, 32
    for c in cfg:
        if c == "M":
            side //= 2
            continue
        parts.append(_conv(3, cin, int(c), side, True, True))
        cin = int(c)
    return parts + [_linear(512, 10)]


def googlenet_cifar_layers() -> list[tuple[list[int], float, float]]:
    """GoogLeNet (Szegedy et al. 2015, inception 3a–5b of its Table 1) for CIFAR-10: a 3×3 conv
    to 192 channels on 32×32, no stem down-sampling, every conv biased with BatchNorm, the 5×5
    branch as two 3×3 convs, one Linear(1024, 10) (kuangliu/pytorch-cifar)."""
    parts = [_conv(3, 3, 192, 32, True, True)]
    blocks = [((192, 64, 96, 128, 16, 32, 32), 32), ((256, 128, 128, 192, 32, 96, 64), 32),
              ((480, 192, 96, 208, 16, 48, 64), 16), ((512, 160, 112, 224, 24, 64, 64), 16),
              ((512, 128, 128, 256, 24, 64, 64), 16), ((512, 112, 144, 288, 32, 64, 64), 16),
              ((528, 256, 160, 320, 32, 128, 128), 16), ((832, 256, 160, 320, 32, 128, 128), 8),
              ((832, 384, 192, 384, 48, 128, 128), 8)]
    for (cin, n1, n3r, n3, n5r, n5, pool), s in blocks:
        parts += [_conv(1, cin, n1, s, True, True),
                  _conv(1, cin, n3r, s, True, True), _conv(3, n3r, n3, s, True, True),
                  _conv(1, cin, n5r, s, True, True), _conv(3, n5r, n5, s, True, True),
                  _conv(3, n5, n5, s, True, True),
                  _conv(1, cin, pool, s, True, True)]
    return parts + [_linear(1024, 10)]


#: zoo name → analytic layer table (entries written by `analytic()`).
ANALYTIC = {
    "resnet18": lambda: resnet18_layers("imagenet", 1000),
    "resnet18_cifar_analytic": lambda: resnet18_layers("cifar", 10),  # cross-check of the counter only
    "vgg16_cifar": vgg16_cifar_layers,
    "googlenet_cifar": googlenet_cifar_layers,
}


def analytic(name: str) -> dict:
    """The zoo_tensors entry of an `ANALYTIC` model (`method` says where it came from)."""
    rec = _sum(ANALYTIC[name]())
    rec["method"] = "analytic: calibration.extract_zoo." + name
    return rec


if __name__ == "__main__":
    main()

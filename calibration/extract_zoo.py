"""Regenerate `calibration/data/zoo_tensors.json` from the real model definitions (needs torch).

    python -m calibration.extract_zoo [-o calibration/data/zoo_tensors.json]

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
    ap.add_argument("models", nargs="*")
    ns = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    names = ns.models or [n for n in torch_models.buildable() if n != "tiny_mlp"] + ["bark", "bark_small"]
    out = {}
    for n in names:
        log.info("extracting %s", n)
        out[n] = extract(n)
        log.info("  %s: %d tensors, %.1fM params", n, len(out[n]["tensor_numel"]), sum(out[n]["tensor_numel"]) / 1e6)
    from cosim.atomic import write_text

    write_text(json.dumps(out, indent=None, separators=(",", ":"), sort_keys=True) + "\n", ns.out)


if __name__ == "__main__":
    main()

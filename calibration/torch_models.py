"""Real model definitions for measurement (`cosim calibrate compute`) and zoo extraction.

torch is optional (`cosim[gpu]`); this module imports it at call time. Models that
torchvision / transformers ship are taken from there (the same code the papers trained);
the ones they do not ship are written here from their papers' architecture descriptions:

- `resnet18_cifar`: the CIFAR-10 ResNet-18 used by Pollux/Sia's `cifar10` job (3x3 stem, no
  max-pool, 32x32 inputs; He et al. 2016 sec. 4.2 adapted as in the common CIFAR variant).
- `yolov3`: Darknet-53 backbone + three-scale detection head (Redmon & Farhadi 2018),
  416x416 inputs, 20 classes (PASCAL VOC as in Pollux's `yolov3`).
- `deepspeech2`: two 2-D convolutions + five bidirectional LSTM layers of 1024 units
  (summed directions) + a 29-symbol output (Amodei et al. 2016, the deepspeech.pytorch shape
  used by the Pollux example), 161 spectrogram bins.
- `neumf`: GMF + MLP neural collaborative filtering (He et al. 2017) on MovieLens-1M sizes.
- Gavel's extra jobs: `transformer` (Vaswani et al., base size, Multi30k-sized vocab),
  `lstm_lm` (2-layer word LSTM on WikiText-2), `autoencoder_rec` (ML-20M autoencoder),
  `a3c` (Atari actor-critic), `cyclegan` (two ResNet-9 generators + two PatchGAN critics).

`build(name)` returns a `Built` with the module, a function making a synthetic batch of a
given size on a device, and a loss function, so the timing loop is the same for all models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

TORCH_HINT = "this command needs PyTorch: pip install 'cosim[gpu]' (or pip install torch torchvision transformers)"


def require_torch():
    """Import torch or raise a one-line error saying what to install."""
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the environment
        from cosim.errors import CosimError

        raise CosimError(TORCH_HINT) from exc
    return torch


@dataclass
class Built:
    module: Any
    make_batch: Callable[[int, Any], tuple]  # (batch, device) -> args for forward + target
    loss: Callable[[Any, Any], Any]  # (output, target) -> scalar
    optimizer: str  # "sgd" or "adam"


# ---------------------------------------------------------------- own definitions
def _own_defs():
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.short = nn.Sequential()
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(self.b2(self.c2(y)) + self.short(x))

    class CifarResNet18(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            y = self.layers(self.stem(x))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))

    def cbl(cin, cout, k, s=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.1))

    class DarkRes(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.a, self.b = cbl(c, c // 2, 1), cbl(c // 2, c, 3)

        def forward(self, x):
            return x + self.b(self.a(x))

    class YoloV3(nn.Module):
        def __init__(self, classes=20):
            super().__init__()
            out = 3 * (5 + classes)
            self.stem = cbl(3, 32, 3)
            stages, cin = [], 32
            for cout, n in ((64, 1), (128, 2), (256, 8), (512, 8), (1024, 4)):
                stages.append(nn.Sequential(cbl(cin, cout, 3, 2), *[DarkRes(cout) for _ in range(n)]))
                cin = cout
            self.stages = nn.ModuleList(stages)

            def head_convs(cin, c):
                return nn.Sequential(cbl(cin, c, 1), cbl(c, 2 * c, 3), cbl(2 * c, c, 1), cbl(c, 2 * c, 3), cbl(2 * c, c, 1))

            self.h1, self.o1 = head_convs(1024, 512), nn.Sequential(cbl(512, 1024, 3), nn.Conv2d(1024, out, 1))
            self.r1 = cbl(512, 256, 1)
            self.h2, self.o2 = head_convs(768, 256), nn.Sequential(cbl(256, 512, 3), nn.Conv2d(512, out, 1))
            self.r2 = cbl(256, 128, 1)
            self.h3, self.o3 = head_convs(384, 128), nn.Sequential(cbl(128, 256, 3), nn.Conv2d(256, out, 1))

        def forward(self, x):
            x = self.stem(x)
            feats = []
            for st in self.stages:
                x = st(x)
                feats.append(x)
            up = nn.functional.interpolate
            a = self.h1(feats[4])
            b = self.h2(torch.cat([up(self.r1(a), scale_factor=2), feats[3]], 1))
            c = self.h3(torch.cat([up(self.r2(b), scale_factor=2), feats[2]], 1))
            return torch.cat([self.o1(a).flatten(1), self.o2(b).flatten(1), self.o3(c).flatten(1)], 1)

    class DeepSpeech2(nn.Module):
        def __init__(self, freq=161, hidden=1024, layers=5, symbols=29):
            super().__init__()
            self.conv = nn.Sequential(
                nn.Conv2d(1, 32, (41, 11), (2, 2), (20, 5)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20),
                nn.Conv2d(32, 32, (21, 11), (2, 1), (10, 5)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20),
            )
            f = (freq + 40 - 41) // 2 + 1
            f = (f + 20 - 21) // 2 + 1
            self.rnns = nn.ModuleList()
            self.norms = nn.ModuleList()
            cin = 32 * f
            for i in range(layers):
                self.norms.append(nn.BatchNorm1d(cin) if i > 0 else nn.Identity())
                self.rnns.append(nn.LSTM(cin, hidden, bidirectional=True, batch_first=True))
                cin = hidden
            self.hidden = hidden
            self.fc = nn.Sequential(nn.BatchNorm1d(hidden), nn.Linear(hidden, symbols, bias=False))

        def forward(self, x):  # x: (B, 1, freq, T)
            y = self.conv(x)
            b, c, f, t = y.shape
            y = y.reshape(b, c * f, t).transpose(1, 2)
            for norm, rnn in zip(self.norms, self.rnns):
                if not isinstance(norm, nn.Identity):
                    y = norm(y.transpose(1, 2)).transpose(1, 2)
                y, _ = rnn(y)
                y = y[..., : self.hidden] + y[..., self.hidden:]
            return self.fc[1](self.fc[0](y.transpose(1, 2)).transpose(1, 2))

    class NeuMF(nn.Module):
        def __init__(self, users=6040, items=3706, factor=8, mlp_layers=3):
            super().__init__()
            emb = factor * 2 ** (mlp_layers - 1)
            self.gu, self.gi = nn.Embedding(users, factor), nn.Embedding(items, factor)
            self.mu, self.mi = nn.Embedding(users, emb), nn.Embedding(items, emb)
            mods, cin = [], 2 * emb
            for _ in range(mlp_layers):
                mods += [nn.Linear(cin, cin // 2), nn.ReLU()]
                cin //= 2
            self.mlp = nn.Sequential(*mods)
            self.out = nn.Linear(factor + cin, 1)

        def forward(self, u, i):
            g = self.gu(u) * self.gi(i)
            m = self.mlp(torch.cat([self.mu(u), self.mi(i)], -1))
            return self.out(torch.cat([g, m], -1)).squeeze(-1)

    class Seq2SeqTransformer(nn.Module):
        def __init__(self, vocab=10000, d=512):
            super().__init__()
            self.src, self.tgt = nn.Embedding(vocab, d), nn.Embedding(vocab, d)
            self.core = nn.Transformer(d, 8, 6, 6, 2048, batch_first=True)
            self.gen = nn.Linear(d, vocab)

        def forward(self, s, t):
            return self.gen(self.core(self.src(s), self.tgt(t)))

    class LstmLM(nn.Module):
        def __init__(self, vocab=33278, d=200):
            super().__init__()
            self.emb, self.rnn, self.dec = nn.Embedding(vocab, d), nn.LSTM(d, d, 2, batch_first=True), nn.Linear(d, vocab)

        def forward(self, x):
            return self.dec(self.rnn(self.emb(x))[0])

    class AutoEncoderRec(nn.Module):
        def __init__(self, items=26744, dims=(512, 512, 1024)):
            super().__init__()
            enc, cin = [], items
            for d in dims:
                enc += [nn.Linear(cin, d), nn.SELU()]
                cin = d
            dec = []
            for d in list(dims[-2::-1]) + [items]:
                dec += [nn.Linear(cin, d), nn.SELU()]
                cin = d
            self.net = nn.Sequential(*enc, nn.Dropout(0.8), *dec[:-1])

        def forward(self, x):
            return self.net(x)

    class A3C(nn.Module):
        def __init__(self, actions=6):
            super().__init__()
            self.conv = nn.Sequential(*[m for i in range(4) for m in (nn.Conv2d(1 if i == 0 else 32, 32, 3, 2, 1), nn.ELU())])
            self.lstm = nn.LSTMCell(32 * 3 * 3, 256)
            self.actor, self.critic = nn.Linear(256, actions), nn.Linear(256, 1)

        def forward(self, x):
            h, _ = self.lstm(self.conv(x).flatten(1))
            return torch.cat([self.actor(h), self.critic(h)], 1)

    def resnet_generator():
        def res(c):
            return nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3), nn.InstanceNorm2d(c), nn.ReLU(),
                                 nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3), nn.InstanceNorm2d(c))

        class Res(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.b = res(c)

            def forward(self, x):
                return x + self.b(x)

        mods = [nn.ReflectionPad2d(3), nn.Conv2d(3, 64, 7), nn.InstanceNorm2d(64), nn.ReLU()]
        for cin in (64, 128):
            mods += [nn.Conv2d(cin, 2 * cin, 3, 2, 1), nn.InstanceNorm2d(2 * cin), nn.ReLU()]
        mods += [Res(256) for _ in range(9)]
        for cin in (256, 128):
            mods += [nn.ConvTranspose2d(cin, cin // 2, 3, 2, 1, 1), nn.InstanceNorm2d(cin // 2), nn.ReLU()]
        mods += [nn.ReflectionPad2d(3), nn.Conv2d(64, 3, 7), nn.Tanh()]
        return nn.Sequential(*mods)

    def patch_disc():
        mods, cin = [nn.Conv2d(3, 64, 4, 2, 1), nn.LeakyReLU(0.2)], 64
        for cout, s in ((128, 2), (256, 2), (512, 1)):
            mods += [nn.Conv2d(cin, cout, 4, s, 1), nn.InstanceNorm2d(cout), nn.LeakyReLU(0.2)]
            cin = cout
        mods.append(nn.Conv2d(512, 1, 4, 1, 1))
        return nn.Sequential(*mods)

    class CycleGAN(nn.Module):
        def __init__(self):
            super().__init__()
            self.g_ab, self.g_ba, self.d_a, self.d_b = resnet_generator(), resnet_generator(), patch_disc(), patch_disc()

        def forward(self, a, b):
            fb, fa = self.g_ab(a), self.g_ba(b)
            return torch.cat([self.d_b(fb).flatten(1), self.d_a(fa).flatten(1),
                              (self.g_ba(fb) - a).abs().flatten(1).mean(1, keepdim=True),
                              (self.g_ab(fa) - b).abs().flatten(1).mean(1, keepdim=True)], 1)

    return dict(CifarResNet18=CifarResNet18, YoloV3=YoloV3, DeepSpeech2=DeepSpeech2, NeuMF=NeuMF,
                Seq2SeqTransformer=Seq2SeqTransformer, LstmLM=LstmLM, AutoEncoderRec=AutoEncoderRec,
                A3C=A3C, CycleGAN=CycleGAN)


# ---------------------------------------------------------------- builders
_HF = {  # canonical name -> (transformers config class, kwargs, sequence length, head)
    "bert_base": ("BertConfig", {}, 384, "qa"),
    "bert_large": ("BertConfig", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                      intermediate_size=4096), 384, "qa"),
    "gpt2": ("GPT2Config", {}, 1024, "lm"),
    "gpt2_medium": ("GPT2Config", dict(n_embd=1024, n_layer=24, n_head=16), 1024, "lm"),
    "gpt2_large": ("GPT2Config", dict(n_embd=1280, n_layer=36, n_head=20), 1024, "lm"),
    "gpt_neo_1.3b": ("GPTNeoConfig", dict(hidden_size=2048, num_layers=24, num_heads=16,
                                         attention_types=[[["global", "local"], 12]]), 2048, "lm"),
    "gpt_neo_2.7b": ("GPTNeoConfig", dict(hidden_size=2560, num_layers=32, num_heads=20,
                                         attention_types=[[["global", "local"], 16]]), 2048, "lm"),
    "opt_1.3b": ("OPTConfig", dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=32,
                                   ffn_dim=8192, word_embed_proj_dim=2048), 2048, "lm"),
    "opt_2.7b": ("OPTConfig", dict(hidden_size=2560, num_hidden_layers=32, num_attention_heads=32,
                                   ffn_dim=10240, word_embed_proj_dim=2560), 2048, "lm"),
    "opt_6.7b": ("OPTConfig", dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                                   ffn_dim=16384, word_embed_proj_dim=4096), 2048, "lm"),
}

_TV = {  # canonical name -> (torchvision constructor, kwargs, image side)
    "resnet18": ("resnet18", {}, 224), "resnet50": ("resnet50", {}, 224), "resnet152": ("resnet152", {}, 224),
    "vgg11": ("vgg11", {}, 224), "vgg16": ("vgg16", {}, 224), "vgg19": ("vgg19", {}, 224),
    "alexnet": ("alexnet", {}, 224), "mobilenet_v3": ("mobilenet_v3_small", {}, 224),
    "densenet121": ("densenet121", {}, 224), "densenet201": ("densenet201", {}, 224),
    "inception_v3": ("inception_v3", dict(aux_logits=False, init_weights=False), 299),
    "googlenet": ("googlenet", dict(aux_logits=False, init_weights=False), 224),
    "efficientnet_b0": ("efficientnet_b0", {}, 224),
}


def sequence_length(name: str) -> int | None:
    return _HF[name][2] if name in _HF else None


def hf_config(name: str):
    import transformers

    cls, kw, seq, _ = _HF[name]
    return getattr(transformers, cls)(**kw)


def build(name: str) -> Built:
    """Build `name` (canonical zoo name) with synthetic-batch and loss helpers."""
    torch = require_torch()
    from torch import nn

    ce = nn.functional.cross_entropy
    own = _own_defs()

    def images(side, classes):
        return lambda b, dev: ((torch.randn(b, 3, side, side, device=dev),),
                               torch.randint(0, classes, (b,), device=dev))

    if name == "resnet18_cifar":
        return Built(own["CifarResNet18"](), images(32, 10), ce, "sgd")
    if name in _TV:
        import torchvision.models as tvm

        ctor, kw, side = _TV[name]
        return Built(getattr(tvm, ctor)(**kw), images(side, 1000), ce, "sgd")
    if name in _HF:
        import transformers

        cfg = hf_config(name)
        seq, head = _HF[name][2], _HF[name][3]
        if head == "qa":
            model = transformers.BertForQuestionAnswering(cfg)
        else:
            model = transformers.AutoModelForCausalLM.from_config(cfg)

        class Wrapped(nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, ids):
                out = self.m(input_ids=ids)
                if head == "qa":
                    return torch.stack([out.start_logits, out.end_logits], 1)
                return out.logits

        vocab = cfg.vocab_size

        def batch(b, dev):
            ids = torch.randint(0, vocab, (b, seq), device=dev)
            tgt = torch.randint(0, seq, (b, 2), device=dev) if head == "qa" else ids
            return (ids,), tgt

        def loss(out, tgt):
            if head == "qa":
                return ce(out[:, 0], tgt[:, 0]) + ce(out[:, 1], tgt[:, 1])
            return ce(out[:, :-1].reshape(-1, out.shape[-1]), tgt[:, 1:].reshape(-1))

        return Built(Wrapped(), batch, loss, "adam")
    if name == "yolov3":
        return Built(own["YoloV3"](), lambda b, dev: ((torch.randn(b, 3, 416, 416, device=dev),), None),
                     lambda out, tgt: out.float().pow(2).mean(), "sgd")
    if name == "deepspeech2":
        frames = 400  # ~4 s of audio at 10 ms hop, the middle of LibriSpeech's length range
        return Built(own["DeepSpeech2"](), lambda b, dev: ((torch.randn(b, 1, 161, frames, device=dev),),
                                                          torch.randint(0, 29, (b, frames // 2), device=dev)),
                     lambda out, tgt: ce(out.reshape(-1, out.shape[-1]), tgt.reshape(-1)), "sgd")
    if name == "neumf":
        return Built(own["NeuMF"](), lambda b, dev: ((torch.randint(0, 6040, (b,), device=dev),
                                                      torch.randint(0, 3706, (b,), device=dev)),
                                                     torch.rand(b, device=dev)),
                     lambda out, tgt: nn.functional.binary_cross_entropy_with_logits(out, tgt), "adam")
    if name == "transformer":
        return Built(own["Seq2SeqTransformer"](), lambda b, dev: ((torch.randint(0, 10000, (b, 32), device=dev),
                                                                   torch.randint(0, 10000, (b, 32), device=dev)),
                                                                  torch.randint(0, 10000, (b, 32), device=dev)),
                     lambda out, tgt: ce(out.reshape(-1, out.shape[-1]), tgt.reshape(-1)), "adam")
    if name == "lstm_lm":
        return Built(own["LstmLM"](), lambda b, dev: ((torch.randint(0, 33278, (b, 35), device=dev),),
                                                      torch.randint(0, 33278, (b, 35), device=dev)),
                     lambda out, tgt: ce(out.reshape(-1, out.shape[-1]), tgt.reshape(-1)), "sgd")
    if name == "autoencoder_rec":
        return Built(own["AutoEncoderRec"](), lambda b, dev: ((torch.rand(b, 26744, device=dev),), None),
                     lambda out, tgt: out.float().pow(2).mean(), "sgd")
    if name == "a3c":
        return Built(own["A3C"](), lambda b, dev: ((torch.randn(b, 1, 42, 42, device=dev),), None),
                     lambda out, tgt: out.float().pow(2).mean(), "adam")
    if name == "cyclegan":
        return Built(own["CycleGAN"](), lambda b, dev: ((torch.randn(b, 3, 256, 256, device=dev),
                                                         torch.randn(b, 3, 256, 256, device=dev)), None),
                     lambda out, tgt: out.float().pow(2).mean(), "adam")
    if name == "tiny_mlp":  # the test model: small enough for CPU tests
        return Built(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)),
                     lambda b, dev: ((torch.randn(b, 64, device=dev),), torch.randint(0, 10, (b,), device=dev)),
                     ce, "sgd")
    from cosim.errors import UnknownNameError

    raise UnknownNameError("torch model", name, buildable())


def buildable() -> list[str]:
    return sorted({"resnet18_cifar", "yolov3", "deepspeech2", "neumf", "transformer", "lstm_lm", "autoencoder_rec",
                   "a3c", "cyclegan", "tiny_mlp"} | set(_TV) | set(_HF))

"""The benchmark models: real architectures built in-process with random weights (no downloads).

    PyTorch (torchvision / transformers / torch.nn), input shapes at batch B:
    resnet18        torchvision resnet18, Bx3x224x224
    resnet50        torchvision resnet50, Bx3x224x224
    mobilenet_v2    torchvision mobilenet_v2, Bx3x224x224
    mobilenet_v3    torchvision mobilenet_v3_large, Bx3x224x224
    efficientnet_b0 torchvision efficientnet_b0, Bx3x224x224
    vit_s16         torchvision VisionTransformer in the ViT-S/16 configuration (12 layers,
                    hidden 384, 6 heads, MLP 1536, patch 16), Bx3x224x224 (vit_b_16 is 4x the
                    work: too slow for a two-core benchmark run)
    bert_base       transformers BertModel, BertConfig() defaults (BERT-base: 12 layers, hidden
                    768, 12 heads), token ids Bx128; output last_hidden_state
    gpt2            transformers GPT2Model, GPT2Config() defaults (GPT-2 small: 12 layers, hidden
                    768, 12 heads), token ids Bx128, use_cache=False; output last_hidden_state
    lstm            torch.nn.LSTM, 2 layers, input 128, hidden 256, batch first, Bx64x128

    Keras (keras.applications, weights=None, classifier_activation=None: logits, as the
    torchvision models give; ONNX export with tf2onnx, from the zoo extra):
    keras_mobilenet_v2  MobileNetV2, Bx224x224x3
    keras_resnet50      ResNet50, Bx224x224x3

    The families issue 15 found slowest when tried as a user would (torchvision, transformers):
    convnext_tiny   torchvision convnext_tiny (layer scales drawn at 0.1-0.3: the default 1e-6
                    leaves every block's branch out of the output), Bx3x224x224
    regnet_y_400mf  torchvision regnet_y_400mf (grouped convolutions, squeeze-excitation)
    shufflenet_v2   torchvision shufflenet_v2_x1_0 (channel shuffles, depthwise convolutions)
    squeezenet      torchvision squeezenet1_1
    googlenet       torchvision googlenet (no auxiliary classifiers): 1x1 / 3x3 / 5x5 branches,
                    3x3 stride-1 max pools, channel concatenations
    densenet121     torchvision densenet121: batch norm + relu before each convolution (not
                    foldable into it), concatenations growing through each block
    inception_v3    torchvision inception_v3 (no auxiliary classifier), Bx3x299x299: 1x7 / 7x1
                    convolutions on 17x17, 35x35 and 8x8 planes, average pools
    distilbert_dyn  transformers DistilBertModel, DistilBertConfig() defaults, token ids Bx128,
                    exported to ONNX with dynamic batch and sequence axes as transformers users
                    export: the file's default compile is shape-generic (`ours native` traces
                    the module at the benchmark's shape)

A PyTorch entry's `make()` returns (module in eval mode with a single tensor output,
inputs(batch) -> list of numpy arrays); a Keras entry's returns (keras.Model, inputs(batch)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# the way the test zoo imports torchvision beside our torch wheel, and its first-output wrapper
from tests.zoo.catalog import _First, import_torchvision


@dataclass
class BenchModel:
    name: str
    kind: str  # "torch" | "keras"
    make: object  # fn() -> (model, inputs(batch) -> list of numpy arrays)
    small: bool = False  # quick to export and compile (the smoke test's choice)
    # ONNX export with these dynamic axes per input ({axis: name}); None: static shapes
    dynamic_axes: tuple | None = None


def _pixels_nchw(size=224):
    return lambda b: [np.random.default_rng(b).normal(size=(b, 3, size, size)).astype("float32")]


def _pixels_nhwc(size=224):
    return lambda b: [np.random.default_rng(b).normal(size=(b, size, size, 3)).astype("float32")]


def _ids(vocab, seq):
    return lambda b: [np.random.default_rng(b).integers(0, vocab, (b, seq)).astype("int64")]


def _torchvision(fn_name, size=224, **kw):
    def make():
        import torch

        tv = import_torchvision()
        if tv is None:
            raise ImportError("torchvision is not installed (pip install -e '.[zoo]')")
        torch.manual_seed(0)
        if fn_name == "vit_s16":
            from torchvision.models.vision_transformer import VisionTransformer

            m = VisionTransformer(
                image_size=224,
                patch_size=16,
                num_layers=12,
                num_heads=6,
                hidden_dim=384,
                mlp_dim=1536,
            )
            # torchvision zero-initialises the classifier head: every output would be 0
            torch.nn.init.normal_(m.heads.head.weight, std=0.02)
        else:
            m = getattr(tv.models, fn_name)(weights=None, **kw)
        _randomise_norms(m)
        _randomise_layer_scales(m)
        return _First.wrap(m.eval()), _pixels_nchw(size)

    return make


def _randomise_norms(m) -> None:
    """Non-trivial batch-norm statistics (a fresh model's are the identity)."""
    import torch

    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.copy_(torch.rand(mod.running_mean.shape, generator=g) * 0.2 - 0.1)
                mod.running_var.copy_(torch.rand(mod.running_var.shape, generator=g) + 0.5)


def _randomise_layer_scales(m) -> None:
    """ConvNeXt's per-block layer scales drawn at 0.1-0.3 (initialised at 1e-6, a block's branch
    would not reach the output: parity on it would be vacuous)."""
    import torch

    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for mod in m.modules():
            scale = getattr(mod, "layer_scale", None)
            if isinstance(scale, torch.nn.Parameter):
                scale.copy_(torch.rand(scale.shape, generator=g) * 0.2 + 0.1)


def _hf(cls_name, cfg_name, **cfg):
    def make():
        import torch

        import_torchvision()  # before transformers, which imports it
        import transformers as tr

        torch.manual_seed(0)
        config = getattr(tr, cfg_name)(**cfg)
        m = getattr(tr, cls_name)(config)
        return _First.wrap(m.eval()), _ids(config.vocab_size, 128)

    return make


def _lstm():
    import torch

    class LSTM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(128, 256, num_layers=2, batch_first=True)

        def forward(self, x):
            return self.lstm(x)[0]

    torch.manual_seed(0)
    return LSTM().eval(), lambda b: [
        np.random.default_rng(b).normal(size=(b, 64, 128)).astype("float32")
    ]


def _keras_app(app):
    def make():
        import keras

        keras.utils.set_random_seed(0)
        model = getattr(keras.applications, app)(
            weights=None, input_shape=(224, 224, 3), classifier_activation=None
        )
        return model, _pixels_nhwc()

    return make


MODELS = [
    BenchModel("resnet18", "torch", _torchvision("resnet18")),
    BenchModel("resnet50", "torch", _torchvision("resnet50")),
    BenchModel("mobilenet_v2", "torch", _torchvision("mobilenet_v2"), small=True),
    BenchModel("mobilenet_v3", "torch", _torchvision("mobilenet_v3_large")),
    BenchModel("efficientnet_b0", "torch", _torchvision("efficientnet_b0")),
    BenchModel("vit_s16", "torch", _torchvision("vit_s16")),
    BenchModel("bert_base", "torch", _hf("BertModel", "BertConfig")),
    BenchModel("gpt2", "torch", _hf("GPT2Model", "GPT2Config", use_cache=False)),
    BenchModel("lstm", "torch", _lstm, small=True),
    BenchModel("keras_mobilenet_v2", "keras", _keras_app("MobileNetV2")),
    BenchModel("keras_resnet50", "keras", _keras_app("ResNet50")),
    BenchModel("convnext_tiny", "torch", _torchvision("convnext_tiny")),
    BenchModel("regnet_y_400mf", "torch", _torchvision("regnet_y_400mf")),
    BenchModel("shufflenet_v2", "torch", _torchvision("shufflenet_v2_x1_0")),
    BenchModel("squeezenet", "torch", _torchvision("squeezenet1_1")),
    BenchModel(
        "googlenet", "torch", _torchvision("googlenet", aux_logits=False, init_weights=True)
    ),
    BenchModel("densenet121", "torch", _torchvision("densenet121")),
    BenchModel(
        "inception_v3",
        "torch",
        _torchvision("inception_v3", size=299, aux_logits=False, init_weights=True),
    ),
    BenchModel(
        "distilbert_dyn",
        "torch",
        _hf("DistilBertModel", "DistilBertConfig"),
        dynamic_axes=({0: "batch", 1: "sequence"},),
    ),
]


def catalog() -> dict[str, BenchModel]:
    return {m.name: m for m in MODELS}

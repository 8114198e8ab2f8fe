"""The outside-model zoo: architectures as users bring them, built here with random weights
(no downloads). Each entry makes the model once and says how to feed it and how the source
framework computes the reference; frontends: `keras` (a `.keras` file loaded with no shape
arguments: batch None), `torch.export` (dynamic batch) and `onnx` (torch.onnx.export, its default
dynamo exporter, with a dynamic batch)."""

from __future__ import annotations

import os
import sys
import tempfile
import types
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Prepared:
    source: object  # what relay_import.load takes
    reference: object  # fn(list of numpy inputs) -> list of numpy outputs
    inputs: object  # fn(batch) -> list of numpy inputs
    load_kw: dict = field(default_factory=dict)


@dataclass
class ZooModel:
    name: str
    frontend: str  # keras | torch.export | onnx | onnx-legacy
    family: str
    build: object  # fn(workdir) -> Prepared
    cheap: bool = False  # in the CI subset

    @property
    def id(self) -> str:
        return f"{self.frontend}:{self.name}"


def _rng(seed=0):
    return np.random.default_rng(seed)


# -- Keras ----------------------------------------------------------------------------------------

# keras.applications: one per family at its smallest allowed input size.
KERAS_APPS = {
    "ResNet50": 32,
    "ResNet50V2": 32,
    "VGG16": 32,
    "MobileNet": 32,
    "MobileNetV2": 32,
    "MobileNetV3Small": 32,
    "DenseNet121": 32,
    "InceptionV3": 75,
    "InceptionResNetV2": 75,
    "Xception": 71,
    "NASNetMobile": 32,
    "EfficientNetB0": 32,
    "EfficientNetV2B0": 32,
    "ConvNeXtTiny": 32,
}


def _keras_saved(model, workdir, name):
    path = os.path.join(workdir, f"{name}.keras")
    model.save(path)
    return path


def _keras_prepared(model, workdir, name, make_inputs):
    import keras

    path = _keras_saved(model, workdir, name)
    loaded = keras.models.load_model(path)  # the reference runs what the user saved

    def reference(xs):
        out = loaded(xs[0] if len(xs) == 1 else xs, training=False)
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [np.asarray(o) for o in outs]

    return Prepared(path, reference, make_inputs)


def _keras_app(app: str, size: int):
    def build(workdir):
        import keras

        keras.utils.set_random_seed(0)
        # logits: with random weights and raw pixel inputs a softmax saturates to one-hot
        # vectors, against which any error in the logits reads as 0
        model = getattr(keras.applications, app)(
            weights=None, input_shape=(size, size, 3), classes=10, classifier_activation=None
        )

        def inputs(b):
            return [_rng(b).uniform(0, 255, (b, size, size, 3)).astype("float32")]

        return _keras_prepared(model, workdir, app, inputs)

    return build


def _keras_transformer(workdir):
    import keras

    keras.utils.set_random_seed(0)
    x_in = keras.Input((12,), dtype="int32")
    x = keras.layers.Embedding(50, 16)(x_in)
    a = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(x, x)
    x = keras.layers.LayerNormalization()(x + a)
    f = keras.layers.Dense(32, activation="gelu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(16)(f))
    out = keras.layers.Dense(3)(keras.layers.GlobalAveragePooling1D()(x))
    model = keras.Model(x_in, out)
    return _keras_prepared(
        model, workdir, "transformer", lambda b: [_rng(b).integers(0, 50, (b, 12)).astype("int32")]
    )


def _keras_rnn(layer):
    def build(workdir):
        import keras

        keras.utils.set_random_seed(0)
        model = keras.Sequential(
            [
                keras.Input((7, 5)),
                getattr(keras.layers, layer)(8, return_sequences=True),
                getattr(keras.layers, layer)(6),
                keras.layers.Dense(3),
            ]
        )
        return _keras_prepared(
            model, workdir, layer, lambda b: [_rng(b).normal(size=(b, 7, 5)).astype("float32")]
        )

    return build


def _keras_conv1d_text(workdir):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((20,), dtype="int32"),
            keras.layers.Embedding(100, 12),
            keras.layers.Conv1D(16, 5, activation="relu"),
            keras.layers.MaxPooling1D(2),
            keras.layers.Conv1D(16, 3, activation="relu"),
            keras.layers.GlobalMaxPooling1D(),
            keras.layers.Dense(4, activation="softmax"),
        ]
    )
    return _keras_prepared(
        model, workdir, "conv1d", lambda b: [_rng(b).integers(0, 100, (b, 20)).astype("int32")]
    )


def _keras_multi_input(workdir):
    import keras

    keras.utils.set_random_seed(0)
    img = keras.Input((16, 16, 3), name="image")
    meta = keras.Input((4,), name="meta")
    x = keras.layers.Conv2D(8, 3, activation="relu")(img)
    x = keras.layers.GlobalAveragePooling2D()(x)
    y = keras.layers.Dense(8, activation="relu")(meta)
    out = keras.layers.Dense(2)(keras.layers.Concatenate()([x, y]))
    model = keras.Model([img, meta], out)

    def inputs(b):
        r = _rng(b)
        return [
            r.normal(size=(b, 16, 16, 3)).astype("float32"),
            r.normal(size=(b, 4)).astype("float32"),
        ]

    return _keras_prepared(model, workdir, "multi_input", inputs)


# -- PyTorch --------------------------------------------------------------------------------------


def import_torchvision():
    """torchvision 0.28 beside our torch 2.13 CPU wheel: its C extension may not load, and its
    meta registrations for the detection ops (nms, roi_align) then fail at import (which also
    breaks `import transformers`, which imports torchvision when it is installed). The
    classification models need none of those ops: import it without their registrations."""
    try:
        import torchvision
    except RuntimeError as e:
        if "torchvision::" not in str(e):
            raise
        for k in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
            del sys.modules[k]
        stub = types.ModuleType("torchvision._meta_registrations")
        sys.modules["torchvision._meta_registrations"] = stub
        import torchvision
    except ImportError:
        return None
    return torchvision


class _First:
    """Wraps a model whose output is a ModelOutput / tuple: returns its first tensor."""

    @staticmethod
    def wrap(model):
        import torch

        class First(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, x):
                out = self.m(x)
                if isinstance(out, torch.Tensor):
                    return out
                return out[0]

        return First().eval()


def _torch_prepared(make, frontend, workdir, name):
    """`make()` -> (module, inputs(batch) -> list of torch tensors)."""
    import torch

    torch.manual_seed(0)
    module, inputs = make()
    # a model that returns one tensor already (torchvision's dense-prediction wrappers, RAFT's
    # two frames) is taken as it is
    module = (
        module.eval() if getattr(module, "single_output", False) else _First.wrap(module.eval())
    )
    ex = inputs(2)

    def reference(xs):
        with torch.no_grad():
            out = module(*[torch.from_numpy(x) for x in xs])
        return [out.detach().numpy()]

    def np_inputs(b):
        return [t.numpy() for t in inputs(b)]

    batch = torch.export.Dim("batch", min=1, max=64)
    dynamic = tuple({0: batch} for _ in ex)
    if frontend == "torch.export":
        with torch.no_grad():
            ep = torch.export.export(module, tuple(ex), dynamic_shapes=dynamic)
        return Prepared(ep, reference, np_inputs)
    path = os.path.join(workdir, f"{name}.onnx")
    names = [f"input{i}" for i in range(len(ex))]
    if frontend == "onnx-legacy":
        # the TorchScript exporter (dynamo=False), as Optimum and older scripts call it: the
        # batch dynamic through dynamic_axes; its graphs compute shapes at run time (Shape,
        # Gather, Concat, Reshape) where the dynamo exporter's are static
        with torch.no_grad():
            torch.onnx.export(
                module,
                tuple(ex),
                path,
                input_names=names,
                output_names=["output"],
                dynamic_axes={n: {0: "batch"} for n in names},
                opset_version=17,
                dynamo=False,
            )
        return Prepared(path, reference, np_inputs)
    # torch.onnx.export as a user calls it in torch 2.x: the default (dynamo) exporter, its
    # default opset, the batch dynamic through dynamic_shapes (needs onnxscript: the zoo extra)
    with torch.no_grad():
        torch.onnx.export(
            module,
            tuple(ex),
            path,
            input_names=names,
            output_names=["output"],
            dynamic_shapes=dynamic,
            verbose=False,
        )
    return Prepared(path, reference, np_inputs)


def _ids(vocab, seq):
    import torch

    return lambda b: [torch.from_numpy(_rng(b).integers(0, vocab, (b, seq)).astype("int64"))]


def _pixels(c, size):
    import torch

    return lambda b: [torch.from_numpy(_rng(b).normal(size=(b, c, size, size)).astype("float32"))]


def _floats(*shape):
    import torch

    return lambda b: [torch.from_numpy(_rng(b).normal(size=(b, *shape)).astype("float32"))]


_TEXT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)


def _hf(cls_name, cfg_name, inputs, encoder=False, **cfg):
    def make():
        import_torchvision()  # before transformers, which imports it
        import transformers as tr

        model = getattr(tr, cls_name)(getattr(tr, cfg_name)(**cfg))
        return (model.get_encoder() if encoder else model), inputs

    return make


HF = {
    "BERT": _hf("BertModel", "BertConfig", _ids(100, 8), vocab_size=100, **_TEXT),
    "DistilBERT": _hf(
        "DistilBertModel",
        "DistilBertConfig",
        _ids(100, 8),
        vocab_size=100,
        dim=32,
        n_layers=2,
        n_heads=4,
        hidden_dim=64,
    ),
    "RoBERTa": _hf("RobertaModel", "RobertaConfig", _ids(100, 8), vocab_size=100, **_TEXT),
    "ALBERT": _hf(
        "AlbertModel", "AlbertConfig", _ids(100, 8), vocab_size=100, embedding_size=16, **_TEXT
    ),
    "DeBERTa": _hf("DebertaV2Model", "DebertaV2Config", _ids(100, 8), vocab_size=100, **_TEXT),
    "T5-encoder": _hf(
        "T5EncoderModel",
        "T5Config",
        _ids(100, 8),
        vocab_size=100,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
    ),
    "BART-encoder": _hf(
        "BartModel",
        "BartConfig",
        _ids(100, 8),
        encoder=True,
        vocab_size=100,
        d_model=32,
        encoder_layers=2,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
    ),
    "GPT-2": _hf(
        "GPT2Model",
        "GPT2Config",
        _ids(100, 8),
        vocab_size=100,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=64,
        use_cache=False,
    ),
    "GPT-NeoX": _hf(
        "GPTNeoXModel", "GPTNeoXConfig", _ids(100, 8), vocab_size=100, use_cache=False, **_TEXT
    ),
    "Llama": _hf(
        "LlamaModel",
        "LlamaConfig",
        _ids(100, 8),
        vocab_size=100,
        num_key_value_heads=2,
        use_cache=False,
        **_TEXT,
    ),
    "Mistral": _hf(
        "MistralModel",
        "MistralConfig",
        _ids(100, 8),
        vocab_size=100,
        num_key_value_heads=2,
        use_cache=False,
        **_TEXT,
    ),
    "Qwen2": _hf(
        "Qwen2Model",
        "Qwen2Config",
        _ids(100, 8),
        vocab_size=100,
        num_key_value_heads=2,
        use_cache=False,
        **_TEXT,
    ),
    "Phi": _hf("PhiModel", "PhiConfig", _ids(100, 8), vocab_size=100, use_cache=False, **_TEXT),
    # a sliding-window mask (index arithmetic on positions) fused into the scores' matmul: it
    # failed to compile through torch.export before session 28
    "Gemma2": _hf(
        "Gemma2Model",
        "Gemma2Config",
        _ids(100, 8),
        vocab_size=100,
        num_key_value_heads=2,
        head_dim=8,
        use_cache=False,
        **_TEXT,
    ),
    "ViT": _hf("ViTModel", "ViTConfig", _pixels(3, 32), image_size=32, patch_size=8, **_TEXT),
    "DeiT": _hf("DeiTModel", "DeiTConfig", _pixels(3, 32), image_size=32, patch_size=8, **_TEXT),
    "Swin": _hf(
        "SwinModel",
        "SwinConfig",
        _pixels(3, 32),
        image_size=32,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
    ),
    "ConvNeXt": _hf(
        "ConvNextModel",
        "ConvNextConfig",
        _pixels(3, 32),
        hidden_sizes=[8, 16],
        depths=[1, 1],
        num_stages=2,
    ),
    "MobileViT": _hf(
        "MobileViTModel",
        "MobileViTConfig",
        _pixels(3, 64),
        image_size=64,
        hidden_sizes=[16, 24, 32],
        neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
        # the default 0.02 shrinks this narrow network's activations by ~1e-3 per stage: its
        # outputs underflowed to exactly 0 and any error read as 0 (0.3 keeps them O(1))
        initializer_range=0.3,
    ),
    "SegFormer": _hf(
        "SegformerModel",
        "SegformerConfig",
        _pixels(3, 32),
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[8, 16],
        num_attention_heads=[1, 2],
        patch_sizes=[7, 3],
        strides=[4, 2],
        mlp_ratios=[2, 2],
    ),
    # found by trying HF families with a dynamic batch (session 23): SigLIP's pooling head
    # (Shape of a static shape), PoolFormer's GroupNorm (reshape back to shape_of), HF
    # EfficientNet's pooler (a 2560-wide ceil-mode window on the last map), LeViT's reshape_as
    "SigLIP-vision": _hf(
        "SiglipVisionModel",
        "SiglipVisionConfig",
        _pixels(3, 32),
        image_size=32,
        patch_size=8,
        **_TEXT,
    ),
    "PoolFormer": _hf(
        "PoolFormerModel",
        "PoolFormerConfig",
        _pixels(3, 32),
        depths=[1, 1],
        hidden_sizes=[8, 16],
        patch_sizes=[7, 3],
        strides=[4, 2],
        padding=[2, 1],
        num_encoder_blocks=2,
    ),
    "EfficientNet-HF": _hf(
        "EfficientNetModel",
        "EfficientNetConfig",
        _pixels(3, 32),
        image_size=32,
        width_coefficient=0.25,
        depth_coefficient=0.25,
        hidden_dim=320,
        # its default init (0.02) gives outputs of exactly 0, 0.3 1e-15, 0.7 600: 0.6 ~0.05
        initializer_range=0.6,
    ),
    "LeViT": _hf(
        "LevitModel",
        "LevitConfig",
        _pixels(3, 64),
        image_size=64,
        hidden_sizes=[16, 24, 32],
        num_attention_heads=[1, 2, 2],
        depths=[1, 1, 1],
        key_dim=[8, 8, 8],
    ),
    "Whisper-encoder": _hf(
        "WhisperModel",
        "WhisperConfig",
        _floats(16, 32),
        encoder=True,
        num_mel_bins=16,
        max_source_positions=16,
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_layers=1,
        decoder_attention_heads=4,
        decoder_ffn_dim=64,
    ),
    "Wav2Vec2": _hf(
        "Wav2Vec2Model",
        "Wav2Vec2Config",
        _floats(400),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        do_stable_layer_norm=True,
    ),
}


def _tv(fn_name, size=32, **kw):
    def make():
        tv = import_torchvision()
        if tv is None:
            raise ImportError("torchvision is not installed (pip install -e '.[zoo]')")
        model = getattr(tv.models, fn_name)(weights=None, num_classes=10, **kw)
        _calibrate_norms(model, size)
        return model, _pixels(3, size)

    return make


def _calibrate_norms(model, size: int) -> None:
    """Set every BatchNorm's running statistics from one batch of inputs, as training leaves
    them. With the initial ones (mean 0, variance 1) a randomly initialised network's
    activations shrink layer by layer: GoogLeNet's logits were its final bias alone, whatever
    the input, and ShuffleNetV2's varied by 1e-4 of it, so any error in the convolutions read
    as 0."""
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: this batch's statistics exactly
    model.train()
    with torch.no_grad():
        model(torch.from_numpy(_rng(99).normal(size=(4, 3, size, size)).astype("float32")))
    model.eval()


TORCHVISION = {
    "resnet18": _tv("resnet18"),
    "vgg11": _tv("vgg11"),
    "alexnet": _tv("alexnet", 64),
    "squeezenet1_0": _tv("squeezenet1_0", 64),
    "densenet121": _tv("densenet121"),
    "mobilenet_v2": _tv("mobilenet_v2"),
    "mobilenet_v3_small": _tv("mobilenet_v3_small"),
    "shufflenet_v2_x0_5": _tv("shufflenet_v2_x0_5"),
    "mnasnet0_5": _tv("mnasnet0_5"),
    "efficientnet_b0": _tv("efficientnet_b0"),
    "regnet_x_400mf": _tv("regnet_x_400mf"),
    "convnext_tiny": _tv("convnext_tiny"),
    "googlenet": _tv("googlenet", 64, aux_logits=False, init_weights=True),
    "inception_v3": _tv("inception_v3", 80, aux_logits=False, init_weights=True),
}


def _timm(name):
    """A timm model at its default input size, as `timm.create_model(name)` builds it
    (random weights; zero-initialised heads / gates re-drawn so that outputs are not 0, batch
    norms calibrated)."""

    def make():
        import_torchvision()  # before timm, which imports it
        import timm
        import torch

        model = timm.create_model(name, pretrained=False, num_classes=10)
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() >= 2 and float(p.abs().max()) == 0.0:
                    torch.nn.init.normal_(p, std=0.05)
        c, h, w = model.pretrained_cfg.get("input_size", (3, 224, 224))
        _calibrate_norms(model, h)
        return model, _pixels(c, h)

    return make


def _tv_dense(kind: str, fn_name: str, shape: tuple, **kw):
    """torchvision beyond classification (session 25): segmentation (the "out" map), video
    clips, optical flow (RAFT: two frames, the last flow estimate)."""

    def make():
        import torch

        tv = import_torchvision()
        if tv is None:
            raise ImportError("torchvision is not installed (pip install -e '.[zoo]')")
        group = {"seg": tv.models.segmentation, "video": tv.models.video}.get(kind)
        group = group or tv.models.optical_flow
        model = getattr(group, fn_name)(weights=None, **kw)
        norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        with torch.no_grad():  # live statistics (the initial mean 0 / var 1 shrink activations)
            for m in norms:
                m.running_var.uniform_(0.5, 2.0)
                m.running_mean.uniform_(-0.2, 0.2)

        class Dense(torch.nn.Module):
            single_output = True

            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, *xs):
                if kind == "seg":
                    return self.m(xs[0])["out"]
                if kind == "flow":
                    return self.m(xs[0], xs[1], num_flow_updates=4)[-1]
                return self.m(xs[0])

        n_in = 2 if kind == "flow" else 1

        def inputs(b):
            return [
                torch.from_numpy(_rng(b + k).uniform(-1, 1, (b, *shape)).astype("float32"))
                for k in range(n_in)
            ]

        return Dense(), inputs

    return make


TORCHVISION_DENSE = {
    "lraspp_mobilenet_v3_large": _tv_dense(
        "seg", "lraspp_mobilenet_v3_large", (3, 96, 96), weights_backbone=None, num_classes=5
    ),
    "fcn_resnet50": _tv_dense(
        "seg", "fcn_resnet50", (3, 64, 64), weights_backbone=None, num_classes=5
    ),
    "r2plus1d_18": _tv_dense("video", "r2plus1d_18", (3, 4, 56, 56), num_classes=10),
    "raft_small": _tv_dense("flow", "raft_small", (3, 128, 128)),
}


# timm families, exported as timm's onnx_export does (the TorchScript exporter with a dynamic
# batch: the onnx-legacy route); each of these failed or compiled per input shape before
# session 24, or covers a family nothing else here does
TIMM = {
    name: _timm(name)
    for name in (
        "ecaresnet26t",  # ECA gates: Expand(y, Shape(x))
        "hrnet_w18_small",  # Resize by constant scales
        "sequencer2d_s",  # bidirectional LSTMs over rows and columns
        "swin_tiny_patch4_window7_224",  # 64 chained window reshapes
        "mixer_s16_224",
        "ghostnetv2_100",
        "mobilenetv4_conv_small",
        "efficientvit_b0",
        "fastvit_t8",
        "repvit_m1",
        "coat_lite_tiny",
        "edgenext_xx_small",
        "maxvit_nano_rw_256",
        "tiny_vit_5m_224",
        "dpn68",
        "res2net50_14w_8s",
    )
}

# The CI subset: quick to convert and compile, one per frontend kind.
CHEAP = {"keras:LSTM", "keras:conv1d_text", "torch.export:BERT", "onnx:DistilBERT"}


def catalog() -> list[ZooModel]:
    out = []
    for app, size in KERAS_APPS.items():
        out.append(ZooModel(app, "keras", "keras.applications", _keras_app(app, size)))
    for name, b in [
        ("transformer", _keras_transformer),
        ("LSTM", _keras_rnn("LSTM")),
        ("GRU", _keras_rnn("GRU")),
        ("conv1d_text", _keras_conv1d_text),
        ("multi_input", _keras_multi_input),
    ]:
        out.append(ZooModel(name, "keras", "keras", b))
    for group, table in (("torchvision", TORCHVISION), ("transformers", HF)):
        for name, make in table.items():
            for fe in ("torch.export", "onnx", "onnx-legacy"):
                out.append(
                    ZooModel(
                        name,
                        fe,
                        group,
                        lambda wd, make=make, fe=fe, name=name: _torch_prepared(make, fe, wd, name),
                    )
                )
    for name, make in TORCHVISION_DENSE.items():
        out.append(
            ZooModel(
                name,
                "onnx-legacy",
                "torchvision",
                lambda wd, make=make, name=name: _torch_prepared(make, "onnx-legacy", wd, name),
            )
        )
    for name, make in TIMM.items():
        out.append(
            ZooModel(
                name,
                "onnx-legacy",
                "timm",
                lambda wd, make=make, name=name: _torch_prepared(make, "onnx-legacy", wd, name),
            )
        )
    for m in out:
        m.cheap = m.id in CHEAP
    return out


def workdir() -> str:
    return tempfile.mkdtemp(prefix="relay-zoo-")

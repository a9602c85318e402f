"""A build's options shared by every target, declared once (BuildOptions).

A BuildOptions field made with `shared_option` is at the same time a keyword of
`edgedeploy.build` (the field's name, or the `keyword` given) and a flag of `edgedeploy build`
(cli/build_cmd.py makes the click option from the same metadata, and forwards the parsed value
to edgedeploy.build by that keyword). So a new shared option is one field here: the command, the
API, its signature and `help(edgedeploy.build)` follow. Nothing heavy is imported at module level:
`edgedeploy build --help` reads this.
"""

from __future__ import annotations

import difflib
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from edgedeploy.artifacts import DEFAULT_OUT
from edgedeploy.errors import OptionError
from edgedeploy.records import record_fields

if TYPE_CHECKING:
    from edgedeploy.datasets import PreprocessSpec
    from edgedeploy.model import InputShapes
    from edgedeploy.targets.base import TargetOptions

OPTION_KEY = "edgedeploy_build_option"


def shared_option(flag: str, help: str, default: Any = None, *, keyword: str | None = None, short: str | None = None, **kind: Any):
    """A BuildOptions field that is a keyword of edgedeploy.build and a flag of `edgedeploy build`.

    `keyword`: the API's (and the click parameter's) name when it is not the field's. `kind`,
    read by the CLI: `is_flag`, `multiple`, `choices`, `type` (int, float), `minimum`, `metavar`,
    `path` ("exists": a file or folder that must exist; "dir": a folder to write), `show_default`.
    """
    meta = {"flag": flag, "short": short, "help": help, "keyword": keyword, **kind}
    if callable(default) and not isinstance(default, Path):
        return field(default_factory=default, metadata={OPTION_KEY: meta})
    return field(default=default, metadata={OPTION_KEY: meta})


@dataclass
class BuildOptions:
    """What the user asked for, shared by every target; `target_options` maps a target id to its own options.

    The fields are in the order `edgedeploy build --help` lists their flags.
    """

    out_root: Path = shared_option("--out", "Artifacts go to OUT/<model>/<chip>/.", DEFAULT_OUT, keyword="out", short="-o", path="dir", show_default=True)
    force: bool = shared_option("--force", "Replace an existing artifact directory.", False, is_flag=True)
    input_shapes: InputShapes = shared_option(
        "--input-shape", "Pin an input's dynamic dimensions, e.g. input=1x3x224x224 (repeat per input; NAME= may be left out for a single-input model).", dict, multiple=True, metavar="NAME=DxDx..."
    )
    precision: str | None = shared_option("--precision", "Quantisation precision (default: the chip's first, usually int8).", choices=("int8", "int16", "fp16", "fp32"))
    calib: Path | None = shared_option("--calib", "Calibration data: .npz, a folder of .npy, or a folder of images (with --preprocess). Default: the sample's calibration split.", path="exists")
    calib_count: int | None = shared_option("--calib-count", "Use the first N calibration samples.", type=int, minimum=1)
    eval: Path | None = shared_option("--eval", "Evaluation data for accuracy before/after (same formats). Default: the sample's held-out split.", path="exists")
    eval_count: int | None = shared_option("--eval-count", "Use the first N evaluation samples.", type=int, minimum=1)
    # NaN, infinities and complex data let through, with a warning.
    allow_nonfinite: bool = shared_option("--allow-nonfinite", "Accept NaN, infinite or complex values in --calib and --eval data (refused by default); a warning says so.", False, is_flag=True)
    preprocess: PreprocessSpec | None = shared_option(
        "--preprocess",
        "Image preprocessing: size=HxW,scale=1/255,mean=a;b;c,std=a;b;c,layout=NCHW|NHWC,channels=RGB|BGR|GRAY, or a .json file (quote it in a shell: ';' ends a command).",
        metavar="SPEC",
    )
    metric: str = shared_option(
        "--metric", "Task metric for accuracy before/after: top-1 for classifiers, macro-AUROC for multi-label outputs, or output fidelity only.", "auto", choices=("auto", "top1", "auroc", "fidelity"), show_default=True
    )
    metric_output: str = shared_option("--metric-output", "The output the task metric is computed on; auto prefers a Softmax/Sigmoid output whose width fits the labels.", "auto", metavar="NAME|auto", show_default=True)
    detection: tuple[str, ...] = shared_option(
        "--detection",
        "Declare what an output's channels hold, e.g. output0:1=boxes:0-3,scores:4- (AXIS defaults to the last; roles: boxes, scores, keypoints, other; repeat per output). Verify then reports each part's fidelity apart.",
        tuple,
        multiple=True,
        metavar="OUTPUT[:AXIS]=ROLE:RANGE,...",
    )
    # `edgedeploy fix` for this chip before converting; `allow_approx` lets it use approximations.
    fix: bool = shared_option("--fix", "Run `edgedeploy fix` for each chip first: rewrites that move nodes onto its accelerator, kept only within their tolerance.", False, is_flag=True)
    allow_approx: bool = shared_option("--allow-approx", "With --fix: also allow approximations (e.g. tanh GELU); their error is reported.", False, is_flag=True)
    device: str | None = shared_option("--device", "Device (from the inventory) to build on, for toolchains that run on the device (TensorRT).", metavar="NAME")
    worker_timeout_s: float = shared_option("--timeout", "Time-out in seconds for each toolchain run.", 1800, keyword="timeout_s", type=float, minimum=1, show_default=True)
    target_options: dict[str, TargetOptions] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from edgedeploy.model import input_shapes_from  # onnx with it: not at import (`build --help`)

        # Workers run in folders of their own: every path a build hands on must be absolute
        # (the CLI makes them so; this covers callers of the Python API).
        self.out_root = Path(self.out_root).absolute()
        self.calib = Path(self.calib).absolute() if self.calib is not None else None
        self.eval = Path(self.eval).absolute() if self.eval is not None else None
        self.input_shapes = input_shapes_from(self.input_shapes)
        self.preprocess = _preprocess_from(self.preprocess)
        self.detection = (self.detection,) if isinstance(self.detection, str) else tuple(self.detection or ())

    @classmethod
    def declared(cls) -> list[tuple[Field, dict]]:
        """(field, metadata) of every shared option, in the order of the fields."""
        return [(f, f.metadata[OPTION_KEY]) for f in fields(cls) if OPTION_KEY in f.metadata]

    @classmethod
    def keywords(cls) -> dict[str, Field]:
        """edgedeploy.build's keyword (the click parameter's name too) -> the field it sets."""
        return {meta["keyword"] or f.name: f for f, meta in cls.declared()}

    @classmethod
    def keyword_options(cls) -> list[tuple[str, Any, dict]]:
        """(keyword, default, metadata) of every shared option, in the fields' order: what the
        API's signature and the command's click options are made from."""
        return [(meta["keyword"] or f.name, f.default_factory() if f.default is MISSING else f.default, meta) for f, meta in cls.declared()]

    @classmethod
    def from_keywords(cls, values: Mapping[str, Any], **fields_given: Any) -> "BuildOptions":
        """The options from edgedeploy.build's keywords (each one of `keywords()`), plus fields given by name."""
        by_keyword = cls.keywords()
        return cls(**{by_keyword[name].name: value for name, value in values.items()}, **fields_given)

    def options_for(self, target) -> TargetOptions:
        """The target's own options (its defaults when the user gave none)."""
        given = self.target_options.get(target.id)
        return given if given is not None else target.options_type()

    def to_dict(self, target=None) -> dict:
        data = {
            "input_shapes": {k: list(v) for k, v in self.input_shapes.items()},
            "precision": self.precision,
            "calib": str(self.calib) if self.calib else None,
            "calib_count": self.calib_count,
            "eval": str(self.eval) if self.eval else None,
            **record_fields(self, "eval_count", "allow_nonfinite"),
            "preprocess": self.preprocess.to_dict() if self.preprocess else None,
            **record_fields(self, "metric", "metric_output", "device", "fix", "allow_approx"),
            "detection": list(self.detection),
        }
        if target is not None:
            data["target_options"] = self.options_for(target).to_dict()
        return data


def _preprocess_from(value: Any):
    """A PreprocessSpec from the CLI's spec string (or a .json file's path), or the spec as given."""
    if value is None:
        return None
    from edgedeploy.datasets import PreprocessSpec, parse_preprocess

    if isinstance(value, str):
        return parse_preprocess(value)
    if not isinstance(value, PreprocessSpec):
        raise OptionError(f"preprocess must be a spec string or a PreprocessSpec, not {type(value).__name__}.")
    return value


def unknown_keyword_error(name: str, candidates: list[str], listed: list[str], whose: str) -> OptionError:
    """The one sentence for a keyword that is no option: the nearest of `candidates` when one is
    close (a misspelt option), else the options (`listed`)."""
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}=?" if close else f"the options are: {', '.join(listed)}."
    return OptionError(f"{name}= is not an option of {whose}; {hint}")

"""`audit --confirm` for TIDL: compile the model with TI's tools and read where TIDL put each node.

Placement is decided when TIDL partitions the graph, before calibration, so the confirmation
compiles with one calibration frame and one iteration; the frame is the bundled sample's data for
the sample, else uniform random numbers of the input's shape (placement does not depend on the
values, accuracy would, and this compile is not used for accuracy). No deny list is passed: the
point is TIDL's own verdict, to set beside the rules' prediction.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from edgedeploy import __version__
from edgedeploy.arrays import write_arrays
from edgedeploy.artifacts import atomic_write_json, atomic_write_text
from edgedeploy.errors import ToolchainMissing
from edgedeploy.targets.tidl import convert as tidl_convert
from edgedeploy.targets.tidl.compile_config import TI_SOC, CompileSettings, compile_config
from edgedeploy.targets.tidl.rules import DEFAULT_TIDL_VERSION

CONFIRM_FRAMES = 1
CONFIRM_ITERATIONS = 1


def _one_frame(model) -> dict[str, np.ndarray]:
    from edgedeploy.datasets import model_input_specs

    rng = np.random.default_rng(0)
    frame = {}
    for spec in model_input_specs(model):
        shape = tuple(d if isinstance(d, int) else 1 for d in spec.shape)
        if spec.dtype.startswith("float"):
            frame[spec.name] = rng.random(shape, dtype=np.float32).astype(spec.dtype)[None]
        else:
            frame[spec.name] = np.zeros((1,) + shape, dtype=spec.dtype)
    return frame


def compile_and_parse(target, model_path: Path, chip_id: str, workdir: Path, log_path: Path, **options):
    from edgedeploy.model import load_model
    from edgedeploy.targets.tidl import TidlOptions
    from edgedeploy.toolchains.executor import Executor

    plan = tidl_convert.compile_plan(TidlOptions.from_values(options))
    if plan["how"] == "generate":
        raise ToolchainMissing(f"Confirming the TIDL audit needs TI's tools: {plan['reason']} (or pass tidl_compile_command).")
    version = str(options.get("tidl_version") or DEFAULT_TIDL_VERSION)
    model = load_model(model_path, require_static=True)
    tidl_dir = Path(workdir) / tidl_convert.TIDL_DIR
    tidl_dir.mkdir(parents=True, exist_ok=True)
    onnx.save(model.proto, str(tidl_dir / tidl_convert.TIDL_MODEL_FILE))
    write_arrays(tidl_dir / tidl_convert.CALIBRATION_FILE, _one_frame(model))
    settings = CompileSettings(tensor_bits=8, calibration_frames=CONFIRM_FRAMES, calibration_iterations=CONFIRM_ITERATIONS)
    config = compile_config(
        chip=chip_id,
        model_file=tidl_convert.TIDL_MODEL_FILE,
        calibration_file=tidl_convert.CALIBRATION_FILE,
        eval_file=None,
        artifacts_folder=tidl_convert.ARTIFACTS_FOLDER,
        settings=settings,
        deny=None,
        model_sha256=model.sha256,
        edgedeploy_version=__version__,
        tidl_version=version,
    )
    atomic_write_json(tidl_dir / tidl_convert.COMPILE_CONFIG, config)
    header = {"edgedeploy_version": __version__, "model_sha256": model.sha256, "chip": chip_id, "soc": TI_SOC[chip_id], "tidl_version": version}
    atomic_write_text(
        tidl_dir / tidl_convert.COMPILE_SCRIPT,
        tidl_convert.render("compile_tidl.py.j2", script_name=tidl_convert.COMPILE_SCRIPT, config_name=tidl_convert.COMPILE_CONFIG, **header),
    )
    executor = Executor(Path(log_path), float(options.get("timeout_s", 1800)))
    result = tidl_convert.run_compile(executor, tidl_dir, plan, TI_SOC[chip_id], echo=lambda line: None)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with Path(log_path).open("a") as log:
        log.write(result["log_text"])
    verdict, _ = tidl_convert.read_verdict(tidl_dir, model.proto, version, log_text=result["log_text"])
    return verdict

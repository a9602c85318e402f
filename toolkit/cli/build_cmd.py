"""`edgedeploy build`: audit, convert, generate and verify a model for one or more target chips."""

from __future__ import annotations

import time
from pathlib import Path

import click


from edgedeploy.cli.options import AbsolutePath, input_shape_option, model_argument, parse_shapes, resolve_model
from edgedeploy.cli.output import echo_text, emit_json, format_option, info


@click.command("build")
@model_argument
@click.option("--target", "targets", multiple=True, required=True, metavar="CHIP", help="Target chip (repeatable); see `edgedeploy targets`.")
@click.option("--out", "out_root", type=AbsolutePath(file_okay=False, path_type=Path), default=Path("edgedeploy-out"), show_default=True, help="Artifacts go to OUT/<model>/<chip>/.")
@click.option("--force", is_flag=True, help="Replace an existing artifact directory.")
@input_shape_option
@click.option("--precision", type=click.Choice(["int8", "int16", "fp16", "fp32"]), default=None, help="Quantisation precision (default: the target's, usually int8).")
@click.option("--calib", type=AbsolutePath(exists=True, path_type=Path), help="Calibration data: .npz, a folder of .npy, or a folder of images (with --preprocess). Default: the sample's calibration split.")
@click.option("--calib-count", type=click.IntRange(min=1), help="Use the first N calibration samples.")
@click.option("--eval", "eval_data", type=AbsolutePath(exists=True, path_type=Path), help="Evaluation data for accuracy before/after (same formats). Default: the sample's held-out split.")
@click.option("--eval-count", type=click.IntRange(min=1), help="Use the first N evaluation samples.")
@click.option("--allow-nonfinite", is_flag=True, help="Accept NaN, infinite or complex values in --calib and --eval data (refused by default); a warning says so.")
@click.option("--preprocess", metavar="SPEC", help="Image preprocessing: size=HxW,scale=1/255,mean=a;b;c,std=a;b;c,layout=NCHW|NHWC,channels=RGB|BGR|GRAY, or a .json file.")
@click.option("--metric", type=click.Choice(["auto", "top1", "auroc", "fidelity"]), default="auto", show_default=True, help="Task metric for accuracy before/after: top-1 for classifiers, macro-AUROC for multi-label outputs, or output fidelity only.")
@click.option("--fix", "run_fix", is_flag=True, help="Run `edgedeploy fix` for each chip first: rewrites that move nodes onto its accelerator, kept only within their tolerance.")
@click.option("--allow-approx", is_flag=True, help="With --fix: also allow approximations (e.g. tanh GELU); their error is reported.")
@click.option("--device", metavar="NAME", help="Device (from the inventory) to build on, for toolchains that run on the device (TensorRT).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=1800, show_default=True, help="Time-out in seconds for each toolchain worker.")
@format_option()
def build_command(model, targets, out_root, force, input_shapes, precision, calib, calib_count, eval_data, eval_count, allow_nonfinite, preprocess, metric, run_fix, allow_approx, device, timeout_s, output_format, **extra) -> None:
    """Build MODEL for each --target: audit, convert with the vendor toolchain, generate the project, verify accuracy.

    MODEL defaults to the bundled MNIST sample. Each artifact is written atomically to
    OUT/<model>/<chip>/ and never overwrites an existing one without --force.
    """
    from edgedeploy.build import BuildOptions, load_report, run_build
    from edgedeploy.datasets import parse_preprocess
    from edgedeploy.targets import find_chip

    for chip in targets:
        find_chip(chip)  # fail on a typo before any work
    target_options = {name: value for name, value in extra.items() if value not in (None, (), False)}
    options = BuildOptions(
        out_root=out_root,
        force=force,
        input_shapes=parse_shapes(input_shapes),
        precision=precision,
        calib=calib,
        calib_count=calib_count,
        eval=eval_data,
        eval_count=eval_count,
        allow_nonfinite=allow_nonfinite,
        preprocess=parse_preprocess(preprocess),
        metric=metric,
        device=device,
        fix=run_fix,
        allow_approx=allow_approx,
        worker_timeout_s=timeout_s,
        target_options=target_options,
    )
    model_path = resolve_model(model)
    results = []
    for chip in targets:
        started = time.monotonic()
        dest = run_build(model_path, chip, options, echo=info)
        results.append({"chip": chip, "artifact": str(dest), "wall_seconds": round(time.monotonic() - started, 2), "report": load_report(dest)})
    if output_format == "json":
        emit_json({"schema": "edgedeploy.build-result/1", "builds": results})
        return
    for r in results:
        echo_text(f"{r['chip']}: {r['artifact']} ({r['wall_seconds']:.1f} s wall)")


def _add_target_options(command: click.Command) -> click.Command:
    """Append every target's own build options (Target.build_options), each name once."""
    from edgedeploy.targets import all_targets

    taken = {p.name for p in command.params}
    for target in all_targets():
        for option in target.build_options:
            if option.name not in taken:
                command.params.append(option)
                taken.add(option.name)
    return command


COMMANDS = [_add_target_options(build_command)]

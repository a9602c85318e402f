"""`edgedeploy sample`: what the bundled sample is, and the sample as files of one's own (-o DIR)."""

from __future__ import annotations

from pathlib import Path

import click

from edgedeploy.cli.output import emit_json, format_option, info, refuse_existing
from edgedeploy.cli.paths import AbsolutePath


@click.command("sample")
@click.option("--out", "-o", "out_dir", type=AbsolutePath(file_okay=False, path_type=Path), metavar="DIR", help="Write the sample into DIR as model.onnx, calib.npz, eval.npz and images/ (PNG digits, one folder per class), to try the commands on files.")
@click.option("--force", is_flag=True, help="Overwrite those files in DIR.")
@format_option()
def sample_command(out_dir: Path | None, force: bool, output_format: str) -> None:
    """The bundled sample (a small CNN trained on real MNIST digits): its card, or its files.

    Every command uses the sample when the model is left out. With -o DIR, the same model and
    data become ordinary files, the way a model and data of your own would be: the README's
    tour runs on them.
    """
    from edgedeploy.sample import export_files, export_sample, sample_card, sample_dir

    if out_dir is None:
        card = sample_card()
        if output_format == "json":
            emit_json({"folder": str(sample_dir()), **card})
            return
        model = card.get("model", {})
        click.echo(f"{card.get('name')}: {card.get('task')}, {card.get('classes')} classes; {model.get('input')} -> {model.get('output')}, opset {model.get('opset')}")
        click.echo(f"data: {card.get('data')}")
        click.echo(f"files: {sample_dir()}")
        click.echo("write them as files of your own: edgedeploy sample -o DIR")
        return
    for path in export_files(out_dir):
        refuse_existing(path, force)
    written = export_sample(out_dir)
    if output_format == "json":
        emit_json(written)
        return
    info(f"sample: wrote {written['model']}, {written['calib']}, {written['eval']} and {', '.join(written['images'].values())}")


COMMANDS = [sample_command]

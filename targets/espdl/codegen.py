"""The ESP-IDF project for an ESP-DL artifact: templates/espdl (model-dependent parts) + firmware/espdl (verbatim).

Generated files begin with a header naming edgedeploy's version and the model's sha256 and
saying not to edit them. Nothing the model supplies (its file name, tensor names) reaches a
generated file unescaped: C code gets C string literals with octal escapes or comment-safe
text, CMake gets an identifier, Markdown gets an escaped code span.

Flash layout: the model is embedded in the app's rodata when it is at most
EMBED_MAX_BYTES, and gets its own `model` data partition otherwise (docs/espdl.md says why).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from edgedeploy import __version__, escape
from edgedeploy.artifacts import atomic_write_text
from edgedeploy.errors import ModelError

# The esp-dl component release the operator tables were written for (targets/espdl/__init__.py),
# and the range the project accepts: a later 3.x loads the same EDL2 .espdl format. The first
# `idf.py build` writes dependencies.lock, which fixes the exact version from then on.
ESP_DL_MIN_VERSION = "3.3.9"
ESP_DL_VERSION_SPEC = "^3.3.9"
IDF_VERSION_SPEC = ">=5.3"  # what esp-dl 3.3.x declares for the esp32s3 and esp32p4

KIB = 1024
MIB = 1024 * KIB
# Models up to this size are embedded in the app (one image, cannot go out of sync with the
# app); larger ones get their own partition, so that re-flashing the app does not rewrite them.
EMBED_MAX_BYTES = 1 * MIB
# The app without the model: esp-dl's own flash-partition example reserves 3000K for it.
APP_BASE_BYTES = 3 * MIB
APP_ALIGN = 64 * KIB  # app partitions must start on 64 KiB boundaries
DATA_ALIGN = 64 * KIB  # the model partition too: one flash MMU page, so it maps without offset
PARTITION_TABLE_OFFSET = 0x9000  # as esp-dl's examples (room for a larger 2nd-stage bootloader)
FIRST_APP_OFFSET = 0x10000
MODEL_PARTITION_LABEL = "model"

# Timing defaults compiled into the firmware (the same protocol as measure/protocol.py).
WARMUP_RUNS = 10
MIN_ITERATIONS = 50
MIN_DURATION_US = 1_000_000
MAX_ITERATIONS = 2000
SESSIONS_PER_BOOT = 3


@dataclass(frozen=True)
class DevKit:
    """The common development board of a chip, whose memory the generated sdkconfig assumes."""

    name: str
    flash_bytes: int
    psram_bytes: int
    cpu_mhz: int
    sdkconfig: tuple[str, ...]
    notes: str


DEV_KITS = {
    "esp32s3": DevKit(
        name="ESP32-S3-DevKitC-1 N8R8",
        flash_bytes=8 * MIB,
        psram_bytes=8 * MIB,
        cpu_mhz=240,
        sdkconfig=(
            "CONFIG_ESP_DEFAULT_CPU_FREQ_MHZ_240=y",
            "CONFIG_ESPTOOLPY_FLASHSIZE_8MB=y",
            "CONFIG_SPIRAM=y",
            "CONFIG_SPIRAM_MODE_OCT=y",
            "CONFIG_SPIRAM_SPEED_80M=y",
            "CONFIG_ESP32S3_INSTRUCTION_CACHE_32KB=y",
            "CONFIG_ESP32S3_DATA_CACHE_64KB=y",
            "CONFIG_ESP32S3_DATA_CACHE_LINE_64B=y",
        ),
        notes="8 MB quad flash, 8 MB octal PSRAM; the console is the UART port (USB-UART bridge).",
    ),
    "esp32p4": DevKit(
        name="ESP32-P4-Function-EV-Board",
        flash_bytes=16 * MIB,
        psram_bytes=32 * MIB,
        cpu_mhz=360,
        sdkconfig=(
            "CONFIG_ESP_DEFAULT_CPU_FREQ_MHZ_360=y",
            "CONFIG_ESPTOOLPY_FLASHSIZE_16MB=y",
            "CONFIG_SPIRAM=y",
            "CONFIG_SPIRAM_MODE_HEX=y",
            "CONFIG_SPIRAM_SPEED_200M=y",
            "CONFIG_CACHE_L2_CACHE_256KB=y",
            "CONFIG_CACHE_L2_CACHE_LINE_128B=y",
        ),
        notes=(
            "16 MB flash, 32 MB hex PSRAM. 360 MHz is the fastest CPU clock of the v1.x silicon these boards "
            "carry; on rev 3 silicon set CONFIG_ESP_DEFAULT_CPU_FREQ_MHZ_400=y."
        ),
    ),
}


# ---------------------------------------------------------------------------------------------
# Escaping: everything a model supplies goes through one of these before it reaches a file.


# The escaping functions live in edgedeploy.escape (one implementation for every target);
# these names are the template filters and what tests import.
c_string = escape.c_string
comment_text = escape.comment_text
identifier = escape.identifier
json_c_string = escape.json_c_string
markdown_code = escape.markdown_code


def _round_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Partition:
    name: str
    type: str
    subtype: str
    offset: int
    size: int


def flash_layout(model_bytes: int, chip_id: str) -> dict:
    """Where the model goes and the partition table that holds it, checked against the dev kit's flash."""
    kit = DEV_KITS[chip_id]
    embedded = model_bytes <= EMBED_MAX_BYTES
    partitions = []
    if embedded:
        app_size = _round_up(APP_BASE_BYTES + model_bytes, APP_ALIGN)
        partitions.append(Partition("factory", "app", "factory", FIRST_APP_OFFSET, app_size))
    else:
        app_size = APP_BASE_BYTES
        partitions.append(Partition("factory", "app", "factory", FIRST_APP_OFFSET, app_size))
        model_offset = _round_up(FIRST_APP_OFFSET + app_size, DATA_ALIGN)
        partitions.append(Partition(MODEL_PARTITION_LABEL, "data", "spiffs", model_offset, _round_up(model_bytes, DATA_ALIGN)))
    end = max(p.offset + p.size for p in partitions)
    if end > kit.flash_bytes:
        raise ModelError(
            f"The quantised model ({model_bytes / MIB:.1f} MiB) does not fit the {kit.flash_bytes // MIB} MiB flash of the "
            f"{kit.name} next to a {APP_BASE_BYTES // MIB} MiB app: it needs {end / MIB:.1f} MiB."
        )
    return {
        "model_location": "flash_rodata" if embedded else "flash_partition",
        "partitions": partitions,
        "flash_end": end,
        "flash_bytes": kit.flash_bytes,
    }


def _template_env() -> jinja2.Environment:
    from edgedeploy.targets.espdl import TARGET

    root = TARGET.templates_dir
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(c_string=c_string, comment=comment_text, identifier=identifier, json_c_string=json_c_string, md_code=markdown_code, hex=lambda v: f"0x{v:x}")
    return env


def firmware_source_dir() -> Path:
    return Path(str(resources.files("edgedeploy.firmware"))) / "espdl"


# (template, output path) pairs; the output is relative to the project folder.
TEMPLATES = (
    ("CMakeLists.txt.j2", "CMakeLists.txt"),
    ("main/CMakeLists.txt.j2", "main/CMakeLists.txt"),
    ("main/idf_component.yml.j2", "main/idf_component.yml"),
    ("main/edgedeploy_model.h.j2", "main/edgedeploy_model.h"),
    ("partitions.csv.j2", "partitions.csv"),
    ("sdkconfig.defaults.j2", "sdkconfig.defaults"),
    ("sdkconfig.defaults.chip.j2", "sdkconfig.defaults.{chip}"),
    ("README.md.j2", "README.md"),
)


def _write_project_files(dest: Path, context: dict, chip_id: str) -> list[str]:
    """The rendered templates and the verbatim firmware sources in `dest`; their paths relative to it."""
    env = _template_env()
    written = []
    for template, out in TEMPLATES:
        rel = out.format(chip=chip_id)
        text = env.get_template(template).render(**context)
        atomic_write_text(dest / rel, text)
        written.append(rel)
    for src in sorted(firmware_source_dir().rglob("*")):
        if src.is_file() and "__pycache__" not in src.parts and src.suffix != ".pyc":
            rel = src.relative_to(firmware_source_dir()).as_posix()
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / rel)
            written.append(rel)
    return written


def generate_project(dest: Path, espdl_path: Path, chip, model, precision: str, int16_layers: list[str]) -> dict:
    """Write the ESP-IDF project into `dest`; return its description for the report."""
    dest = Path(dest)
    model_bytes = espdl_path.stat().st_size
    layout = flash_layout(model_bytes, chip.id)
    kit = DEV_KITS[chip.id]
    inputs = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph_inputs()}
    outputs = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph_outputs()}
    # Keep the parameters in flash (no PSRAM copy) only when they would take most of the PSRAM.
    param_copy = model_bytes <= kit.psram_bytes // 2
    scope = {
        "model_sha256": model.sha256,
        "chip": chip.id,
        "device": kit.name,
        "precision": precision,
        "mixed_int16_layers": len(int16_layers),
        "backend": "esp-dl",
        "esp_dl_version": ESP_DL_VERSION_SPEC,
        "input_shapes": inputs,
        "batch": 1,
        "model_location": layout["model_location"],
        "edgedeploy_version": __version__,
    }
    context = {
        "edgedeploy_version": __version__,
        "model_sha256": model.sha256,
        "model_name": model.name,
        "project_name": "edgedeploy_" + identifier(model.name).lower(),
        "chip": chip,
        "kit": kit,
        "precision": precision,
        "int16_layer_count": len(int16_layers),
        "model_bytes": model_bytes,
        "layout": layout,
        "embedded": layout["model_location"] == "flash_rodata",
        "partition_label": MODEL_PARTITION_LABEL,
        "partition_table_offset": PARTITION_TABLE_OFFSET,
        "param_copy": param_copy,
        "inputs": inputs,
        "outputs": outputs,
        "scope": scope,
        "esp_dl_version_spec": ESP_DL_VERSION_SPEC,
        "esp_dl_min_version": ESP_DL_MIN_VERSION,
        "idf_version_spec": IDF_VERSION_SPEC,
        "warmup": WARMUP_RUNS,
        "min_iterations": MIN_ITERATIONS,
        "min_duration_us": MIN_DURATION_US,
        "max_iterations": MAX_ITERATIONS,
        "sessions": SESSIONS_PER_BOOT,
        "embed_max_bytes": EMBED_MAX_BYTES,
    }
    written = _write_project_files(dest, context, chip.id)
    shutil.copyfile(espdl_path, dest / "main" / "model.espdl")
    written.append("main/model.espdl")
    return {
        "path": "firmware",
        "idf_version": IDF_VERSION_SPEC,
        "esp_dl_version": ESP_DL_VERSION_SPEC,
        "dev_kit": kit.name,
        "model_location": layout["model_location"],
        "model_size_bytes": model_bytes,
        "param_copy_to_psram": param_copy,
        "partitions": [p.__dict__ for p in layout["partitions"]],
        "flash_used_bytes": layout["flash_end"],
        "flash_bytes": layout["flash_bytes"],
        "files": sorted(written),
        "compiled": False,
        "note": "not compiled here: building needs ESP-IDF (idf.py); `edgedeploy measure` builds and flashes it where ESP-IDF is installed.",
    }


def codegen(ctx, converted) -> dict:
    """The ESP-IDF project in firmware/ (codegen.py)."""
    from edgedeploy.targets.espdl.convert import ESPDL_NAME

    try:
        project = generate_project(
            ctx.workdir / "firmware",
            espdl_path=ctx.workdir / ESPDL_NAME,
            chip=ctx.chip,
            model=ctx.model,
            precision=ctx.precision,
            int16_layers=converted.manifest["int16_layers"],
        )
    except ModelError as exc:
        # The conversion is good; the dev kit's flash is too small for the project around it
        # (checked before anything is written). The artifact keeps model.espdl, for a module
        # with more flash, and says why it has no firmware/.
        reason = str(exc).rstrip(".")
        ctx.echo(f"codegen: warning: {reason}; no firmware project was generated, {ESPDL_NAME} is kept")
        return {"kind": "esp-idf project", "status": "skipped", "reason": reason + ".", "folder": None}
    converted.manifest["esp_dl_version"] = project["esp_dl_version"]
    ctx.echo(f"codegen: {ESPDL_NAME} {converted.details['espdl_size_bytes']} bytes; ESP-IDF project in firmware/ ({project['model_location']})")
    return {"kind": "esp-idf project", "folder": "firmware", **project}

"""The generated ESP-IDF project, file by file: headers, sizes, partition arithmetic, escaping.

No toolchain needed: the project is generated from a model with hostile names and a stand-in
.espdl file of a chosen size (random bytes; codegen only copies and measures it).
"""

from __future__ import annotations

import json
import re

import pytest

from edgedeploy import __version__
from edgedeploy.errors import ModelError
from edgedeploy.model import load_model
from edgedeploy.targets.espdl import TARGET
from edgedeploy.targets.espdl import codegen
from tests.espdl_models import HOSTILE, decode_c_string_literal, header_define, make_hostile_model

KIB, MIB = 1024, 1024 * 1024
GENERATED = [
    "CMakeLists.txt",
    "main/CMakeLists.txt",
    "main/idf_component.yml",
    "main/edgedeploy_model.h",
    "partitions.csv",
    "sdkconfig.defaults",
    "README.md",
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    path, _, names = make_hostile_model(folder)
    return load_model(path, {}, require_static=True), names


def generate(tmp_path, model, chip_id: str, model_bytes: int, precision="int8", int16=()):
    tmp_path.mkdir(parents=True, exist_ok=True)
    espdl = tmp_path / "model.espdl"
    espdl.write_bytes(b"EDL2" + (bytes(range(251)) * (model_bytes // 251 + 1))[: model_bytes - 4])
    project = codegen.generate_project(tmp_path / "firmware", espdl, TARGET.chip(chip_id), model, precision, list(int16))
    return tmp_path / "firmware", project, espdl


def parse_partitions(text: str) -> list[dict]:
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, ptype, subtype, offset, size, flags = [c.strip() for c in line.split(",")]
        rows.append({"name": name, "type": ptype, "subtype": subtype, "offset": int(offset, 0), "size": int(size, 0)})
    return rows


@pytest.mark.parametrize("chip_id", ["esp32s3", "esp32p4"])
def test_every_generated_file_has_the_header(tmp_path, hostile, chip_id):
    model, _ = hostile
    root, project, _ = generate(tmp_path, model, chip_id, 40 * KIB)
    for rel in GENERATED + [f"sdkconfig.defaults.{chip_id}"]:
        head = "\n".join((root / rel).read_text().splitlines()[:4])
        assert f"edgedeploy {__version__}" in head, rel
        assert model.sha256 in head, rel
        assert "Do not edit" in head, rel
    assert set(GENERATED) | {f"sdkconfig.defaults.{chip_id}", "main/app_main.cpp", "main/edgedeploy_stats.hpp", "main/edgedeploy_eval.hpp", "main/model.espdl"} == set(project["files"])


def test_harness_is_copied_verbatim(tmp_path, hostile):
    model, _ = hostile
    root, _, espdl = generate(tmp_path, model, "esp32s3", 40 * KIB)
    source = codegen.firmware_source_dir()
    for name in ("main/app_main.cpp", "main/edgedeploy_stats.hpp", "main/edgedeploy_eval.hpp"):
        assert (root / name).read_bytes() == (source / name).read_bytes()
    assert (root / "main/model.espdl").read_bytes() == espdl.read_bytes()


def test_hostile_names_never_reach_a_file_raw(tmp_path, hostile):
    model, names = hostile
    root, _, _ = generate(tmp_path, model, "esp32s3", 40 * KIB)
    for path in root.rglob("*"):
        if not path.is_file() or path.suffix == ".espdl":
            continue
        text = path.read_text()
        assert "\n#include <evil.h>" not in text, path  # never a line break that starts a directive
        assert not any(line.startswith("#include <evil") for line in text.splitlines()), path
        assert "\u00e9" not in text and text.isascii(), path
        if path.name == "README.md":
            # Markdown shows the names JSON-escaped inside code spans, nowhere else.
            outside_spans = re.sub(r"`[^`\n]*`", "", text)
            assert "evil.h" not in outside_spans and "$(rm" not in outside_spans
            continue
        assert "??/" not in text, path
        assert "$(rm" not in text or path.suffix == ".h", path  # only inside the header's C literals
        if path.suffix not in (".cpp", ".h"):  # in C files only inside string literals (checked below)
            assert "*/ " not in text, path
    header = (root / "main/edgedeploy_model.h").read_text()
    # Every preprocessor line is one the template wrote.
    directives = [line.split()[0:2] for line in header.splitlines() if line.startswith("#")]
    assert all(d[0] in ("#pragma", "#define") for d in directives), directives
    # Comment lines carry the names in comment-safe form and never close a comment.
    for line in header.splitlines():
        if line.startswith("//"):
            assert "*/" not in line and "\\" not in line.replace("\\x", "")
    # The C literals decode back to exactly the model's names.
    assert decode_c_string_literal(header_define(header, "EDGEDEPLOY_MODEL_NAME")) == model.name
    scope = json.loads(decode_c_string_literal(header_define(header, "EDGEDEPLOY_SCOPE_JSON")))
    assert scope["input_shapes"] == {names["input"]: [1, 1, 8, 8]}
    assert scope["model_sha256"] == model.sha256
    # CMake sees only an identifier.
    project_line = re.search(r"^project\((.*)\)$", (root / "CMakeLists.txt").read_text(), flags=re.M).group(1)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", project_line)
    # Markdown shows the names JSON-escaped inside code spans.
    readme = (root / "README.md").read_text()
    assert "`" + json.dumps(names["input"], ensure_ascii=True).replace("`", "\\u0060") + "`" in readme


def test_escaping_functions_round_trip():
    for text in (HOSTILE, "", "plain_name", "a\\b", "??=??/??'", "\x00\x7f\x80", "tab\tcr\r"):
        assert decode_c_string_literal(codegen.c_string(text)) == text
        comment = codegen.comment_text(text)
        assert "*/" not in comment and "\n" not in comment and "??" not in comment and comment.isascii()
        ident = codegen.identifier(text)
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident)
    assert codegen.identifier("3d-net") == "m_3d_net"
    # A hex escape would swallow the digits after it; octal escapes are exactly three digits.
    assert codegen.c_string("\n1") == '"\\0121"'


def test_sizes_in_the_header_match_the_model(tmp_path, hostile):
    model, _ = hostile
    root, project, espdl = generate(tmp_path, model, "esp32s3", 123_457)
    header = (root / "main/edgedeploy_model.h").read_text()
    assert int(header_define(header, "EDGEDEPLOY_MODEL_SIZE_BYTES")) == espdl.stat().st_size == 123_457
    assert project["model_size_bytes"] == 123_457
    assert header_define(header, "EDGEDEPLOY_MODEL_IN_PARTITION") == "0"
    assert decode_c_string_literal(header_define(header, "EDGEDEPLOY_CHIP")) == "esp32s3"


def check_partition_table(rows: list[dict], flash_bytes: int) -> None:
    end = codegen.PARTITION_TABLE_OFFSET + 0x1000  # the table itself takes one 4 KiB sector
    for row in sorted(rows, key=lambda r: r["offset"]):
        assert row["offset"] >= end, rows  # no overlap with the table or the previous partition
        align = codegen.APP_ALIGN if row["type"] == "app" else 0x1000
        assert row["offset"] % align == 0 and row["size"] % 0x1000 == 0, row
        end = row["offset"] + row["size"]
    assert end <= flash_bytes


@pytest.mark.parametrize(
    "chip_id,model_bytes,location",
    [
        ("esp32s3", 40 * KIB, "flash_rodata"),
        ("esp32s3", codegen.EMBED_MAX_BYTES, "flash_rodata"),
        ("esp32s3", codegen.EMBED_MAX_BYTES + 1, "flash_partition"),
        ("esp32s3", 4 * MIB, "flash_partition"),
        ("esp32p4", 40 * KIB, "flash_rodata"),
        ("esp32p4", 9 * MIB, "flash_partition"),
    ],
)
def test_partition_table_arithmetic(tmp_path, hostile, chip_id, model_bytes, location):
    model, _ = hostile
    root, project, _ = generate(tmp_path, model, chip_id, model_bytes)
    kit = codegen.DEV_KITS[chip_id]
    rows = parse_partitions((root / "partitions.csv").read_text())
    check_partition_table(rows, kit.flash_bytes)
    assert project["model_location"] == location
    app = next(r for r in rows if r["type"] == "app")
    header = (root / "main/edgedeploy_model.h").read_text()
    cmake = (root / "main/CMakeLists.txt").read_text()
    if location == "flash_rodata":
        assert [r["name"] for r in rows] == ["factory"]
        assert app["size"] >= codegen.APP_BASE_BYTES + model_bytes
        assert "target_add_aligned_binary_data" in cmake and "esptool_py_flash_to_partition" not in cmake
        assert header_define(header, "EDGEDEPLOY_MODEL_IN_PARTITION") == "0"
    else:
        model_row = next(r for r in rows if r["name"] == codegen.MODEL_PARTITION_LABEL)
        assert model_row["type"] == "data" and model_row["size"] >= model_bytes
        assert model_row["offset"] % codegen.DATA_ALIGN == 0
        assert app["size"] == codegen.APP_BASE_BYTES
        assert 'esptool_py_flash_to_partition(flash "model"' in cmake
        assert header_define(header, "EDGEDEPLOY_MODEL_IN_PARTITION") == "1"
        assert decode_c_string_literal(header_define(header, "EDGEDEPLOY_MODEL_PARTITION_LABEL")) == model_row["name"]
    assert project["flash_used_bytes"] == max(r["offset"] + r["size"] for r in rows)
    # The table's offset is the one sdkconfig.defaults configures.
    assert f"CONFIG_PARTITION_TABLE_OFFSET=0x{codegen.PARTITION_TABLE_OFFSET:x}" in (root / "sdkconfig.defaults").read_text()


def test_a_model_too_big_for_the_dev_kit_flash_is_refused(tmp_path, hostile):
    model, _ = hostile
    with pytest.raises(ModelError, match="does not fit the 8 MiB flash of the ESP32-S3-DevKitC-1"):
        generate(tmp_path, model, "esp32s3", 6 * MIB)


def test_param_copy_is_off_only_for_models_that_would_fill_the_psram(tmp_path, hostile):
    model, _ = hostile
    root, _, _ = generate(tmp_path, model, "esp32s3", 40 * KIB)
    assert header_define((root / "main/edgedeploy_model.h").read_text(), "EDGEDEPLOY_PARAM_COPY") == "true"
    assert codegen.flash_layout(4 * MIB + 1, "esp32s3")["model_location"] == "flash_partition"
    root2, project, _ = generate(tmp_path / "big", model, "esp32s3", 4 * MIB + 1)
    assert header_define((root2 / "main/edgedeploy_model.h").read_text(), "EDGEDEPLOY_PARAM_COPY") == "false"
    assert project["param_copy_to_psram"] is False


@pytest.mark.parametrize("chip_id", ["esp32s3", "esp32p4"])
def test_sdkconfig_matches_the_dev_kit(tmp_path, hostile, chip_id):
    model, _ = hostile
    root, _, _ = generate(tmp_path, model, chip_id, 40 * KIB)
    kit = codegen.DEV_KITS[chip_id]
    text = (root / f"sdkconfig.defaults.{chip_id}").read_text()
    assert f'CONFIG_IDF_TARGET="{chip_id}"' in text
    assert f"CONFIG_ESPTOOLPY_FLASHSIZE_{kit.flash_bytes // MIB}MB=y" in text
    assert f"CONFIG_ESP_DEFAULT_CPU_FREQ_MHZ_{kit.cpu_mhz}=y" in text
    assert "CONFIG_SPIRAM=y" in text
    assert ("CONFIG_SPIRAM_MODE_OCT=y" if chip_id == "esp32s3" else "CONFIG_SPIRAM_MODE_HEX=y") in text
    common = (root / "sdkconfig.defaults").read_text()
    assert 'CONFIG_PARTITION_TABLE_CUSTOM_FILENAME="partitions.csv"' in common


def test_component_manifest_pins_esp_dl_3(tmp_path, hostile):
    model, _ = hostile
    root, project, _ = generate(tmp_path, model, "esp32s3", 40 * KIB)
    text = (root / "main/idf_component.yml").read_text()
    lines = [line.rstrip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert lines == ["dependencies:", '  idf: ">=5.3"', "  espressif/esp-dl:", '    version: "^3.3.9"']
    assert project["esp_dl_version"] == "^3.3.9"

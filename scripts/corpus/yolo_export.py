"""Ultralytics' own ONNX export of a model built from its yaml (random init, no weights), made
reproducible: shared by the corpus (make_corpus.py), the architecture pool (scripts/pool) and the
estimate's rebuilt models (scripts/estimate/models.py), which all run in the corpus environment.

Import only what the caller needs: this module imports onnx and, inside the function, ultralytics.
"""

from __future__ import annotations

import os
import tempfile

import onnx


def export_yolo(yaml_name: str, imgsz: int, opset: int, model_class: str = "YOLO") -> onnx.ModelProto:
    """The exported model, loaded, with the export date dropped from its metadata.

    Ultralytics writes the export next to the working folder, so the export runs in a temporary
    folder; the date it stamps into the metadata would make every re-run differ byte for byte.
    """
    import ultralytics

    with tempfile.TemporaryDirectory(prefix="yolo-export-") as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            # model_class "RTDETR" for the RT-DETR yamls: YOLO() cannot tell their task from the yaml.
            path = getattr(ultralytics, model_class)(yaml_name).export(format="onnx", imgsz=imgsz, opset=opset, simplify=False, dynamic=False, verbose=False)
            proto = onnx.load(path)
        finally:
            os.chdir(cwd)
    keep = [p for p in proto.metadata_props if p.key != "date"]
    del proto.metadata_props[:]
    proto.metadata_props.extend(keep)
    return proto

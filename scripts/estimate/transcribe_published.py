"""Transcribe the vendors' published device latencies into toolkit/estimate/data/published_figures.csv.

Reads the vendors' own tables at pinned commits from local git clones (nothing is copied but the
figures, their units and what the table says about them):
  Rockchip  airockchip/rknn_model_zoo  README.md "Model performance benchmark(FPS)"   v2.3.2
  Espressif espressif/esp-dl           models/*/README.md "Model Latency"             after v3.3.9
  NXP       NXP/eiq-model-zoo          tasks/**/README.md "## Performance"            rel_1.4 (1.5 dropped them)
NVIDIA and TI figures are added by hand in scripts/estimate/extra_figures.csv (see its header).

A row is usable for the fit only when the figure is unambiguous AND its model_key was rebuilt here
faithfully (models_manifest.json, written by scripts/estimate/models.py); every other row stays in
the table with the reason in `note`, so the table shows everything the vendors published.

    python scripts/estimate/transcribe_published.py --rockchip DIR --espressif DIR --nxp DIR
"""
import argparse
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "toolkit" / "estimate" / "data"

COLUMNS = ["chip", "model_key", "model_name_as_published", "latency_ms", "published_value", "published_unit",
           "input_shape", "precision", "batch", "npu_cores", "accelerator", "scope", "runtime_and_version",
           "toolchain_version", "source", "source_version", "usable", "note"]

def show(repo, rev, path):
    return subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout

rows = []
def add(**kw):
    r = {c: "" for c in COLUMNS}
    r.update({k: str(v) for k, v in kw.items()})
    rows.append(r)

# ---------------- Rockchip rknn_model_zoo v2.3.2 ----------------
RK_COMMIT = "bad6c7334531becaf90a561988519b7bec34d0ab"
# The zoo's 640x640 detectors: the key is the published name with "_" for "-", and the input size.
RK_DETECTORS_640 = (
    "yolov5s_relu", "yolov5n", "yolov5s", "yolov5m", "yolov6n", "yolov6s", "yolov6m", "yolov7-tiny", "yolov7", "yolov8n",
    "yolov8s", "yolov8m", "yolov8n-obb", "yolov10n", "yolov10s", "yolo11n", "yolo11s", "yolo11m", "yolox_s", "yolox_m",
    "ppyoloe_s", "ppyoloe_m", "yolo_world_v2s", "yolov8n-pose", "yolov5n-seg", "yolov5s-seg", "yolov5m-seg", "yolov8n-seg",
    "yolov8s-seg", "yolov8m-seg",
)
RK_KEYS = {  # published name -> model key
    **{name: name.replace("-", "_") + "_640" for name in RK_DETECTORS_640},
    "mobilenetv2-12": "mobilenet_v2_224", "resnet50-v2-7": "resnet50_v2_224",
    "deeplab-v3-plus-mobilenet-v2": "deeplabv3plus_mobilenet_v2_513", "ppseg_lite_1024x512": "ppliteseg_512",
    "mobilesam_encoder_tiny": "mobilesam_encoder_tiny_448", "mobilesam_decoder": "mobilesam_decoder",
    "RetinaFace_mobile320": "retinaface_mobilenet025_320", "RetinaFace_resnet50_320": "retinaface_resnet50_320",
    "lprnet": "lprnet_24x94", "ppocrv4_det": "ppocrv4_det_480", "ppocrv4_rec": "ppocrv4_rec_48x320",
    "lite-transformer-encoder-16": "lite_transformer_encoder_16",
    "lite-transformer-decoder-16": "lite_transformer_decoder_16", "clip_images": "clip_vit_b32_image_224",
    "clip_text": "clip_text_20",
}
# The RV1109, RV1126 and RK1808 columns are left out: no edgedeploy target chip.
RK_COLS = [("rk3566", "RK3566/RK3568"), ("rk3562", "RK3562"), ("rk3588", "RK3588 @single_core"), ("rk3576", "RK3576 @single_core")]
RK_URL = f"https://github.com/airockchip/rknn_model_zoo/blob/{RK_COMMIT}/README.md#model-performance-benchmarkfps"

def rockchip(RK_REPO):
    text = show(RK_REPO, RK_COMMIT, "README.md")
    table = text.split("## Model performance benchmark(FPS)")[1].split("\n\n")[1]
    demo = ""
    seen = set()
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        demo = cells[0] or demo
        name, shape, dtype = cells[1], cells[2].replace("&nbsp;", ""), cells[3]
        key = RK_KEYS.get(name)
        if name == "clip_text" and demo == "yolo_world":
            key = "clip_text_20"  # same model as the clip demo's clip_text: listed twice
        for (chip, header), value in zip(RK_COLS, cells[4:]):
            published = value
            rtf = "RTF" in value
            precision = dtype.lower()
            m = re.match(r"([\d.]+)\((INT8)\)", value)
            if m:
                value, precision = m.group(1), "int8"
            if value == "/":
                continue
            note, usable = [], "yes"
            if rtf:
                usable = "no"
                note.append("published as a real-time factor of a multi-model audio pipeline, not the latency of one model inference")
            if key is None:
                usable = "no"
                note.append("no model_key: not rebuilt here")
            dup = (chip, key, precision)
            if dup in seen:
                usable = "no"
                note.append(f"same model listed again under the {demo} demo (kept the first row for the fit)")
            seen.add(dup)
            base = dict(model_key=key or "", model_name_as_published=f"{demo}/{name}", input_shape=shape, precision=precision,
                        batch=1, npu_cores=1, accelerator="npu", scope="inference_only",
                        runtime_and_version="librknnrt (RKNPU runtime; version not stated, zoo v2.3.2 ships with RKNPU SDK 2.3.2)",
                        toolchain_version="rknn-toolkit2 2.3.2 (zoo release v2.3.2; not stated per row)",
                        source=RK_URL, source_version=f"v2.3.2 ({RK_COMMIT})")
            if rtf:
                base.update(latency_ms="", published_value=value.replace("RTF <br>", "").replace("RTF", "").strip(), published_unit="RTF")
            else:
                base.update(latency_ms=f"{1000.0 / float(value):.3f}", published_value=value, published_unit="FPS")
            common = "maximum NPU frequency; model inference only, no pre/post-processing (README notes)"
            if chip == "rk3566":
                add(chip="rk3566", usable=usable, note="; ".join(note + ["Rockchip publishes one RK3566/RK3568 column: the rk3568 row is this same measurement", common]), **base)
                add(chip="rk3568", usable="no", note="; ".join(note + ["same measurement as the rk3566 row (one RK3566/RK3568 column): not an independent figure, fit on rk3566 only", common]), **base)
            else:
                add(chip=chip, usable=usable, note="; ".join(note + [common]), **base)

# ---------------- Espressif esp-dl ----------------
ESP_COMMIT = "12c0616de145b704e1149c474b9a1e852e631d67"
# ESP-Detection's pico detectors, one per subject and input size: the key is the architecture at that size.
ESP_PICO_DETECTORS = ((224, "cat"), (416, "cat"), (224, "dog"), (416, "dog"), (224, "hand"), (224, "face"), (416, "face"))
ESP_KEYS = {
    **{f"espdet_pico_{size}_{size}_{subject}_s8": f"espdet_pico_{size}" for size, subject in ESP_PICO_DETECTORS},
    "mobilenetv2_s8_v1": "mobilenet_v2_224", "yolo11n_s8_v1": "yolo11n_640", "yolo11n_320_s8_v1": "yolo11n_320",
    "yolo11n_pose_s8_v1": "yolo11n_pose_640", "yolo11n_pose_s8_v2": "yolo11n_pose_640",
    "yolo11n_seg_s8_v1": "yolo11n_seg_640", "yolo26n_512_s8": "yolo26n_512", "yolo26n_640_s8": "yolo26n_640",
    "mobilenetv2_0_5_s8_v1": "mobilenet_v2_050_128", "pico_s8_v1": "esp_pedestrian_pico_224",
    "msr_s8_v1": "esp_face_msr_120x160", "mnp_s8_v1": "esp_face_mnp_48", "mfn_s8_v1": "mobilefacenet_112",
    "mbf_s8_v1": "esp_mbf_112", "osn_s8_v1": "osnet_192x96", "pp_ocr_v6_det_s8": "ppocrv6_det_736",
    "pp_ocr_v6_rec_s8": "ppocrv6_rec_48x320", "pp_ocr_v6_rec_s16": "ppocrv6_rec_48x320",
    "pp_ocr_v6_rec_s16_w640": "ppocrv6_rec_48x640",
}
ESP_MODELS = ["imagenet_cls", "coco_detect", "coco_pose", "coco_seg", "yolo26", "hand_gesture_recognition", "cat_detect",
              "dog_detect", "hand_detect", "human_face_detect", "pedestrian_detect", "human_face_recognition", "person_reid", "pp_ocr_v6"]

def espressif(ESP_REPO):
    seen = set()
    for comp in ESP_MODELS:
        text = show(ESP_REPO, ESP_COMMIT, f"models/{comp}/README.md")
        lines = [l for l in text.splitlines() if l.strip().startswith("|")]
        header = None
        for line in lines:
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if cells[0] == "name":
                header = cells
                continue
            if header is None or set(cells[0]) <= set("-: ") or "model(ms)" not in header:
                continue
            mi = header.index("model(ms)")
            name = cells[0]
            mode = ""
            m = re.match(r"(\S+) \((RUNTIME_MODE_\w+)\)", name)
            if m:
                name, mode = m.groups()
            m = re.match(r"(.+)_(s3|p4)$", name)
            if not m:
                continue
            base_name, target = m.groups()
            chip = {"s3": "esp32s3", "p4": "esp32p4"}[target]
            key = ESP_KEYS.get(base_name)
            precision = "int16" if "_s16" in base_name else "int8"
            if comp == "yolo26":  # the quantisation tutorial: backbone int8, heads and neck exits int16
                precision = "int8+int16"
            shape = cells[1].replace("\\*", "*").replace("×", "*").replace(" ", "")
            cores = 2 if mode == "RUNTIME_MODE_MULTI_CORE" else 1
            note, usable = [], "yes"
            if cores == 2:
                usable = "no"
                note.append("dual-core runtime mode: the single-core row of this model is the fit figure")
            if mode:
                note.append(f"runtime mode {mode}")
            dup = (chip, key, precision, cores)
            if key and dup in seen:
                usable = "no"
                note.append("same architecture and input size as an earlier row (other weights/dataset or QAT): a repeat, not an independent model")
            seen.add(dup)
            if "_s16" in base_name:
                note.append("int16 quantisation")
            if comp == "pp_ocr_v6":
                note.append("ESP32-P4 only")
            add(chip=chip, model_key=key or "", model_name_as_published=f"{comp}/{cells[0]}", latency_ms=cells[mi], published_value=cells[mi],
                published_unit="ms", input_shape=f"[1,{shape}] (h*w*c)", precision=precision, batch=1, npu_cores=cores, accelerator="cpu_simd",
                scope="inference_only", runtime_and_version="ESP-DL dl::Model::run (esp-dl v3.3.9 tree)",
                toolchain_version="esp-ppq (version not stated in the README)",
                source=f"https://github.com/espressif/esp-dl/blob/{ESP_COMMIT}/models/{comp}/README.md",
                source_version=f"master after v3.3.9 ({ESP_COMMIT}, 2026-07-30)", usable=usable,
                note="; ".join(note + ["model(ms) column: model inference only, pre/post-processing listed separately"]))

# ---------------- NXP eIQ Model Zoo rel 1.4 ----------------
NXP_TAG = "rel_1.4_eiqmz_rfp"
NXP_COMMIT = "58c2b002e9f64f39b8c43e896e00446298544a33"
NXP_KEYS = {  # README path -> (model_key, input shape)
    "tasks/audio/anomaly-detection/deep-autoencoder": ("mlperf_tiny_autoencoder_640", "[1,640]"),
    "tasks/audio/command-recognition/keyword-spotting_DSCNN": ("mlperf_tiny_dscnn_kws_49x10", "[1,49,10,1]"),
    "tasks/audio/command-recognition/micro-speech-LSTM": ("micro_speech_lstm_49x257", "[1,49,257]"),
    "tasks/audio/speech-recognition/wav2letter": ("tiny_wav2letter_296x39", "[1,296,39]"),
    "tasks/misc/eegTCNet": ("eegtcnet_22x1125", "[1,1,22,1125]"),
    "tasks/vision/classification/MNasNet": ("mnasnet_a1_075_224", "[1,224,224,3]"),
    "tasks/vision/classification/deepface-emotion": ("deepface_emotion_48", "[1,48,48,1]"),
    "tasks/vision/classification/efficientnet-lite": ("efficientnet_lite0_224", "[1,224,224,3]"),
    "tasks/vision/classification/mobilenetv1": ("mobilenet_v1_025_128", "[1,128,128,3]"),
    "tasks/vision/classification/mobilenetv2": ("mobilenet_v2_224", "[1,224,224,3]"),
    "tasks/vision/classification/resnet": ("resnet50_v1_keras_224", "[1,224,224,3]"),
    "tasks/vision/classification/tiny-resnet": ("mlperf_tiny_resnet8_32", "[1,32,32,3]"),
    "tasks/vision/classification/visual-wake-word": ("mlperf_tiny_vww_mobilenet_v1_025_96", "[1,96,96,3]"),
    "tasks/vision/face-recognition/facenet512": ("facenet512_160", "[1,160,160,3]"),
    "tasks/vision/instance-segmentation/YOLACT-Edge": ("yolact_edge_550", "[1,550,550,3]"),
    "tasks/vision/low-light-enhancement/SCI": ("sci_1080x1920", "[1,1080,1920,3]"),
    "tasks/vision/monocular-depth-estimation/midas": ("midas_v21_small_256", "[1,256,256,3]"),
    "tasks/vision/object-detection/centernet": ("centernet_512", "[1,512,512,3]"),
    "tasks/vision/object-detection/faceDet": ("nxp_yolo_face_detect", ""),
    "tasks/vision/object-detection/nanodet-m": ("nanodet_m_050_320", "[1,320,320,3]"),
    "tasks/vision/object-detection/ssdlite-mobilenetv2": ("ssdlite_mobilenet_v2_300", "[1,300,300,3]"),
    "tasks/vision/object-detection/ultraface-slim": ("ultraface_slim_240x320", "[1,240,320,3]"),
    "tasks/vision/object-detection/yolov4tiny": ("yolov4_tiny_416", "[1,416,416,3]"),
    "tasks/vision/object-detection/yolov8": ("yolov8n_640_decode", "[1,640,640,3]"),
    "tasks/vision/pose-estimation/movenet": ("movenet_lightning_192", "[1,192,192,3]"),
    "tasks/vision/pose-estimation/whenet": ("whenet_224", "[1,224,224,3]"),
    "tasks/vision/semantic-segmentation/deeplabv3": ("deeplabv3_mobilenet_v2_513", "[1,513,513,3]"),
    "tasks/vision/semantic-segmentation/selfie-segmenter": ("selfie_segmenter_256", "[1,256,256,3]"),
    "tasks/vision/super-resolution/Fast-SRGAN": ("fast_srgan", ""),
}

def nxp(NXP_REPO):
    for folder, (key, shape) in NXP_KEYS.items():
        text = show(NXP_REPO, NXP_COMMIT, folder + "/README.md")
        if "## Performance" not in text:
            continue
        perf = text.split("## Performance", 1)[1].split("\n## ", 1)[0]
        intro = next((l for l in perf.splitlines() if "BSP" in l or "evaluated" in l), "").strip()
        bsp = re.findall(r"L(?:F)?\s?6\.[\d.]+[_-][\d.]+|(?<=BSP )\d[\d.]+", intro)
        row_key = key
        for line in perf.splitlines():
            if "1280x720" in line and folder.endswith("SCI"):
                row_key, shape = "sci_720x1280", "[1,720,1280,3]"
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 5 or not re.match(r"(?i)int8|uint8|fp32|float", cells[0]):
                continue
            plat = cells[2]
            chip = "imx8mp" if "8M" in plat or "8MP" in plat else "imx93" if "93" in plat else None
            if chip is None:
                continue
            acc_cell = cells[3]
            lat = re.match(r"([\d.]+)\s*ms", cells[1].replace(" ", ""))
            note, usable = [], "yes"
            accel = "npu" if "NPU" in acc_cell else "cpu"
            threads = re.search(r"(\d+) thread", acc_cell)
            cmd = cells[4]
            if accel == "cpu":
                usable = "no"
                note.append(f"CPU figure ({acc_cell}): for the CPU-fallback cost, not the NPU fit")
            if not lat:
                usable = "no"
                note.append(f"no figure published ('{cells[1]}')")
            if chip == "imx93" and accel == "npu" and "vx_delegate" in cmd.lower():
                usable = "no"
                note.append("i.MX 93 row names libvx_delegate (the 8M Plus GPU/NPU delegate): the command cannot have run on the Ethos-U65; ambiguous")
            if chip == "imx93" and accel == "npu" and "delegate" not in cmd and "vela" not in cmd:
                usable = "no"
                note.append("no Ethos-U delegate and no Vela-compiled model in the command: unclear whether the NPU ran")
            if folder.endswith(("SCI", "Fast-SRGAN")):
                usable = "no"
                note.append("SCI and Fast-SRGAN READMEs publish the same figures (216/222 ms) word for word: likely a copy error")
            if key in ("nxp_yolo_face_detect", "fast_srgan") or not shape:
                usable = "no"
                note.append("input size not published")
            graph = re.search(r"--graph=(\S+?\.tflite)", cmd)
            graph = graph.group(1).split("/")[-1] if graph else cmd
            this_key, this_shape = row_key, shape
            if "landscape" in graph:
                this_key, this_shape = "selfie_segmenter_landscape_144x256", "[1,144,256,3]"
            tflite = re.search(r"tensorflow-lite-([\d.]+)", cmd)
            runtime = f"TFLite benchmark_model{(' ' + tflite.group(1)) if tflite else ''}"
            if accel == "npu":
                runtime += " + " + ("libethosu_delegate (Ethos-U65)" if chip == "imx93" and "ethosu" in cmd else "libvx_delegate (VeriSilicon NPU)" if "vx_delegate" in cmd else "a Vela-compiled model (Ethos-U custom operator; no delegate named)")
            else:
                runtime += f" on CPU, {threads.group(1) if threads else '?'} thread(s), XNNPACK default"
            add(chip=chip, model_key=this_key, model_name_as_published=f"{folder.split('/')[-1]} ({graph})",
                latency_ms=lat.group(1) if lat else "", published_value=cells[1], published_unit="ms (benchmark_model average)", input_shape=this_shape,
                precision="int8", batch=1, npu_cores=1 if accel == "npu" else 0, accelerator=accel, scope="inference_only",
                runtime_and_version=runtime, toolchain_version=("BSP " + ", ".join(bsp)) if bsp else intro[:120],
                source=f"https://github.com/NXP/eiq-model-zoo/blob/{NXP_COMMIT}/{folder}/README.md#performance",
                source_version=f"{NXP_TAG} ({NXP_COMMIT})", usable=usable,
                note="; ".join(note + ["benchmark_model average over repeated runs after warm-up: interpreter invoke only"]))


def gate_on_manifest(table: list[dict], models: dict) -> None:
    """A row stays usable only when its model was rebuilt here faithfully (models_manifest.json);
    otherwise it is kept, marked not usable, with the reason first in its note."""
    for r in table:
        if r["usable"] != "yes":
            continue
        entry = models.get(r["model_key"])
        if entry is None or not entry.get("file"):
            why = entry.get("fidelity_note") if entry else "no faithful rebuild of this architecture in scripts/estimate/models.py"
            r["usable"], r["note"] = "no", f"not rebuilt here ({why}); " + r["note"]
        elif not entry.get("faithful", False):
            r["usable"], r["note"] = "no", f"rebuilt only approximately ({entry.get('fidelity_note', '')}); " + r["note"]


def add_extra(path):
    """Hand-transcribed rows (NVIDIA, TI): same columns, each with its source."""
    if path.exists():
        with open(path, newline="") as f:
            for r in csv.DictReader(line for line in f if not line.startswith("#")):
                add(**{c: r.get(c, "") for c in COLUMNS})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rockchip", required=True, help="git clone of airockchip/rknn_model_zoo")
    ap.add_argument("--espressif", required=True, help="git clone of espressif/esp-dl")
    ap.add_argument("--nxp", required=True, help="git clone of NXP/eiq-model-zoo")
    ap.add_argument("--manifest", default=str(DATA / "models_manifest.json"))
    ap.add_argument("--out", default=str(DATA / "published_figures.csv"))
    args = ap.parse_args()
    rockchip(args.rockchip)
    espressif(args.espressif)
    nxp(args.nxp)
    add_extra(Path(__file__).with_name("extra_figures.csv"))
    manifest = Path(args.manifest)
    gate_on_manifest(rows, json.loads(manifest.read_text())["models"] if manifest.exists() else {})
    tmp = Path(args.out).with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(args.out)
    print(f"{len(rows)} rows, {sum(r['usable'] == 'yes' for r in rows)} usable -> {args.out}")


if __name__ == "__main__":
    main()

"""rknn-toolkit2 worker: runs inside the `rknn` toolchain environment, never in the core.

Started by edgedeploy's worker_main with `run(request, ctx)`. Standard library + numpy +
rknn-toolkit2 only: edgedeploy itself is not installed in this environment.

Modes (request["mode"]):
  "verdict"  build each model of request["cases"] with RKNN(verbose=True) for one chip and save
             what the toolkit printed (the fuse log and the C-level "Network Layer Information
             Table") to the case's `output` file; the core parses it. One process, many models.
  "build"    convert one model (int8 with calibration data or fp16), export the .rknn, save the
             verbose output, run the simulator on the evaluation inputs, and optionally run
             accuracy_analysis.

Everything the toolkit prints goes to the build log as well (ctx.capture_fd_output).
"""

import ctypes
import json
import os
import re
import sys
import time
import traceback

# RKNN's C library writes with stdio; its buffer must reach the file before fd 1 is switched
# back, or the table of one model lands in the next model's capture.
_LIBC = ctypes.CDLL(None)


# rknn-toolkit2 raises its errors as ValueError whose text is its own traceback (compiled code).
_EMBEDDED_FRAME = re.compile(r'File "[^"]*", line \d+, in (\S+)')
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)):\s*(.*)$")


def failure_context(exc):
    """rknn-toolkit2's own exception and function from the traceback it embeds in its ValueError
    (worker_main's hook): `KeyError: '...'` in GraphOptimizer.fold_constant, not `ValueError: KeyError`."""
    text = str(exc)
    frames = _EMBEDDED_FRAME.findall(text)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not frames or not lines:
        return {}
    found = {"where": "rknn-toolkit2's " + frames[-1]}
    m = _EXCEPTION_LINE.match(lines[-1])
    if m:
        found.update(error_type=m.group(1).rsplit(".", 1)[-1], error=m.group(2) or m.group(1))
    return found


def _flush_c_stdio():
    try:
        _LIBC.fflush(None)
    except Exception:  # noqa: BLE001 - flushing is best effort
        pass


class _Captured:
    """ctx.capture_fd_output with a C-level flush before the descriptors are restored."""

    def __init__(self, ctx, path):
        self._inner = ctx.capture_fd_output(path)

    def __enter__(self):
        self._inner.__enter__()
        return self

    def __exit__(self, *exc):
        _flush_c_stdio()
        return self._inner.__exit__(*exc)


def _toolkit_version():
    try:
        import importlib.metadata as md

        return md.version("rknn-toolkit2")
    except Exception:  # noqa: BLE001
        return None


def run(request, ctx):
    return ctx.dispatch(request, {"verdict": _run_verdicts, "build": _run_build}, key="mode")


def _release(rknn):
    """Free the toolkit's native resources; failing to free them must not replace the real outcome."""
    if rknn is None:
        return
    try:
        rknn.release()
    except Exception:  # noqa: BLE001
        pass


def _new_rknn():
    from rknn.api import RKNN

    return RKNN(verbose=True)


def _load(rknn, case):
    """load_onnx with the pinned input shapes; returns the toolkit's status code."""
    inputs = case.get("inputs") or []
    if inputs:
        return rknn.load_onnx(
            model=case["model"],
            inputs=[i["name"] for i in inputs],
            input_size_list=[list(i["shape"]) for i in inputs],
        )
    return rknn.load_onnx(model=case["model"])


def _write_random_dataset(case, folder, count, ctx, seed=0):
    """A calibration set of `count` random samples for models without data (audit --confirm).

    Placement does not depend on the values; quantisation needs some. Floats uniform in [0, 1),
    integers 0, booleans False. Written in the one .npy-list format (ctx.arrays.write_npy_list).
    """
    import numpy as np

    rng = np.random.default_rng(seed)

    def sample():
        for inp in case.get("inputs") or []:
            dtype = np.dtype(inp.get("dtype") or "float32")
            shape = tuple(inp["shape"])
            yield rng.random(shape).astype(dtype) if dtype.kind == "f" else np.zeros(shape, dtype=dtype)

    return ctx.arrays.write_npy_list(folder, (list(sample()) for _ in range(count)))


def _config_kwargs(request, case):
    kw = {"target_platform": request["chip"]}
    if request.get("optimization_level") is not None:
        kw["optimization_level"] = int(request["optimization_level"])
    if case.get("mean_values") is not None:
        kw["mean_values"] = case["mean_values"]
        kw["std_values"] = case["std_values"]
    if request.get("quantized_dtype"):
        kw["quantized_dtype"] = request["quantized_dtype"]
    if request.get("quantized_algorithm"):
        kw["quantized_algorithm"] = request["quantized_algorithm"]
    if request.get("quantized_method"):
        kw["quantized_method"] = request["quantized_method"]
    return kw


def _verdict_case(request, case, ctx):
    """Build one model and return its status; what the toolkit prints goes to case["output"].

    The build follows the toolkit's own disable_rules advice, as `edgedeploy build` does, so
    the verdict is the placement of the build a user of edgedeploy gets.
    """
    quantize = bool(request.get("quantize", True))
    status = {"model": case["model"], "key": case.get("key"), "output": case["output"], "stage": "build", "error": None}
    rknn = None
    try:
        dataset = None
        if quantize:
            dataset = case.get("dataset") or _write_random_dataset(case, case["output"] + ".data", int(request.get("random_samples", 2)), ctx)
        rknn, workarounds = _build_following_advice(request, case, ctx, case["output"], dataset)
        status["stage"] = "done"
        if workarounds:
            status["workarounds"] = workarounds
    except BaseException as exc:  # noqa: BLE001 - one model's failure is that model's verdict
        traceback.print_exc()
        status["error"] = "%s: %s" % (type(exc).__name__, (str(exc).strip().splitlines() or [""])[-1])
    finally:
        _release(rknn)
    return status


def _run_verdicts(request, ctx):
    """Many models in one process: the toolkit is imported once, each model builds in a fork.

    The C compiler aborts the whole process on some models (e.g. "Can not find quantize
    information"); a forked child per model turns such an abort into that model's verdict
    instead of losing the batch, and costs milliseconds instead of a new interpreter.
    """
    import rknn.api  # noqa: F401 - imported once here, inherited by every child

    timeout_s = float(request.get("case_timeout_s", 300))
    results = []
    for index, case in enumerate(request["cases"]):
        started = time.monotonic()
        status_path = case["output"] + ".status.json"
        if os.path.exists(status_path):
            os.unlink(status_path)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child
            code = 0
            try:
                status = _verdict_case(request, case, ctx)
                with open(status_path, "w") as fh:
                    json.dump(status, fh)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                sys.stdout.flush()
                _flush_c_stdio()
                os._exit(code)
        status = _wait_child(pid, timeout_s)
        if os.path.exists(status_path):
            with open(status_path) as fh:
                status = json.load(fh)
        else:
            # The child died inside the toolkit: keep what it printed in the build log too.
            try:
                with open(case["output"], "rb") as fh:
                    os.write(1, fh.read())
            except OSError:
                pass
            status = {"model": case["model"], "key": case.get("key"), "output": case["output"], "stage": "build", "error": status}
        status["index"] = index
        status["seconds"] = round(time.monotonic() - started, 3)
        results.append(status)
        # The verdict of this case survives a later crash of the whole batch (sweeps resume).
        with open(status_path, "w") as fh:
            json.dump(status, fh)
        ctx.log("verdict %d/%d %s: %s" % (index + 1, len(request["cases"]), case["model"], status["error"] or "built"))
    return {"toolkit_version": _toolkit_version(), "cases": results}


def _wait_child(pid, timeout_s):
    """Wait for a forked child; None when it exited, else why it did not finish."""
    deadline = time.monotonic() + timeout_s
    while True:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFSIGNALED(code):
                return "the toolkit crashed (signal %d)" % os.WTERMSIG(code)
            if os.WEXITSTATUS(code) != 0:
                return "the toolkit exited with status %d" % os.WEXITSTATUS(code)
            return None
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return "the toolkit did not finish within %d s" % timeout_s
        time.sleep(0.005)


def _run_build(request, ctx):
    """Convert and export the .rknn; then the checks after a good conversion (simulator, accuracy_analysis).

    A check that fails is recorded in the result (`simulator_error`, `analysis_error`) and never
    costs the .rknn already exported: the core's one failure policy decides what it means.
    """
    case = request["case"]
    result = {"toolkit_version": _toolkit_version(), "chip": request["chip"]}
    rknn = None
    try:
        quantize = bool(request.get("quantize", True))
        rknn, workarounds = _build_following_advice(request, case, ctx, request["build_output"], request.get("dataset") if quantize else None, request["rknn_path"])
        if workarounds:
            result["workarounds"] = workarounds
        if request.get("float16_kept"):
            result["float16_layers"] = request["float16_kept"]  # ONNX node -> the toolkit's layer kept in float16
        result["rknn_path"] = request["rknn_path"]
        result["rknn_size_bytes"] = os.path.getsize(request["rknn_path"])
        try:
            result["sdk_version"] = rknn.get_sdk_version()
        except Exception:  # noqa: BLE001 - only available with a connected board
            result["sdk_version"] = None
        if request.get("eval_inputs"):
            _after_conversion(result, "simulator_error", _simulate, rknn, request, ctx)
        if request.get("analyse"):
            _after_conversion(result, "analysis_error", _accuracy_analysis, rknn, request, ctx)
    finally:
        _release(rknn)
    return result


def _after_conversion(result, error_key, check, rknn, request, ctx):
    """Run one check after the conversion; its failure goes into result[error_key], never up."""
    try:
        result.update(check(rknn, request, ctx))
    except Exception as exc:  # noqa: BLE001 - recorded for the core, the artifact stays
        traceback.print_exc()
        result[error_key] = "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[-1] if str(exc).strip() else "")


def _simulate(rknn, request, ctx):
    """The RKNN simulator (init_runtime(target=None)) on the evaluation inputs, batch by batch."""
    import numpy as np

    ctx.log("simulator: init_runtime(target=None)")
    if rknn.init_runtime(target=None) != 0:
        raise RuntimeError("the RKNN simulator did not start (init_runtime failed)")
    names = request["input_names"]
    data = ctx.arrays.read_arrays(request["eval_inputs"], names)
    formats = request["data_formats"] if any(request["data_formats"]) else None
    # Inputs held whole (a recurrent state whose leading axis is no batch axis) go in one sample at a time.
    whole = ctx.arrays.read_whole(request["eval_inputs"])
    batch = 1 if whole else int(request.get("batch") or 1)
    count = len(data[names[0]]) // batch
    outputs = None
    started = time.monotonic()
    for i in range(count):
        feed = ctx.arrays.take_feed(data, i * batch, (i + 1) * batch, whole)
        outs = rknn.inference(inputs=[feed[n] for n in names], data_format=formats)
        if outs is None:
            raise RuntimeError("the RKNN simulator returned no outputs for sample %d" % i)
        outputs = outputs if outputs is not None else [[] for _ in outs]
        for k, o in enumerate(outs):
            outputs[k].append(np.asarray(o))
        if (i + 1) % 200 == 0:
            ctx.log("simulator: %d/%d samples" % (i + 1, count))
    seconds = round(time.monotonic() - started, 2)
    arrays = {name: np.concatenate(outputs[k], axis=0) for k, name in enumerate(request["output_names"]) if outputs is not None and k < len(outputs)}
    ctx.arrays.write_arrays(request["simulator_outputs"], arrays)
    return {"simulator_seconds": seconds, "simulator_outputs": request["simulator_outputs"], "simulated_samples": count * batch}


def _accuracy_analysis(rknn, request, ctx):
    """rknn-toolkit2's accuracy_analysis on one evaluation sample: its error_analysis.txt."""
    ctx.log("accuracy_analysis on one evaluation sample")
    with _Captured(ctx, request["analysis_output"]):
        rknn.accuracy_analysis(inputs=request["analysis_inputs"], output_dir=request["analysis_dir"])
    report = os.path.join(request["analysis_dir"], "error_analysis.txt")
    return {"analysis_dir": request["analysis_dir"], "analysis_report": report if os.path.exists(report) else None}


# rknn-toolkit2's advice in its build log, e.g. "... config(disable_rules=['seperate_conv_rs_split'])".
# More rules than this and the graph is not one the toolkit builds with a workaround.
MAX_DISABLED_RULES = 4
_DISABLE_RULES_ADVICE = re.compile(r"disable_rules\s*=\s*\[([^\]]*)\]")


def _advised_disable_rules(build_output):
    """The rule names the toolkit's build log advises disabling, or [] when it gives no such advice."""
    try:
        with open(build_output, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    names = []
    for group in _DISABLE_RULES_ADVICE.findall(text):
        for name in re.findall(r"['\"]([A-Za-z0-9_]+)['\"]", group):
            if name not in names:
                names.append(name)
    return names


def _build_following_advice(request, case, ctx, output_path, dataset, export_path=None):
    """config, load_onnx, build (and export_rknn) with the toolkit's output captured in `output_path`.

    rknn-toolkit2 2.5.0 crashes on some graphs (IndexError in a fusion rule: YOLO heads) and its
    own build log names the rule to disable; the next build may then stop at the next such
    rule, with the next advice. The advice is followed, MAX_DISABLED_RULES rules at most, and
    every rule disabled is recorded: a documented workaround, applied and said so.
    Returns (the RKNN object, the workarounds applied); the caller releases the object.
    """
    disabled, failures = [], []
    while True:
        try:
            rknn = _build_once(request, case, ctx, output_path, dataset, export_path, disabled)
            break
        except Exception as exc:  # noqa: BLE001 - the toolkit's own advice may fix it
            advice = [name for name in _advised_disable_rules(output_path) if name not in disabled]
            if not advice or len(disabled) >= MAX_DISABLED_RULES:
                raise
            failures.append("%s: %s" % (type(exc).__name__, (str(exc).strip().splitlines() or [""])[-1]))
            disabled += advice
            ctx.log("rknn-toolkit2 failed (%s); its build log advises config(disable_rules=%r): building again with %r" % (failures[-1], advice, disabled))
    workarounds = []
    if disabled:
        workarounds.append(
            {
                "name": "config(disable_rules=%r)" % (disabled,),
                "why": "the build failed (%s) and rknn-toolkit2's own build log advises disabling these rules" % "; then ".join(failures),
                "source": "rknn-toolkit2 %s build log" % _toolkit_version(),
            }
        )
    return rknn, workarounds


def _build_once(request, case, ctx, output_path, dataset, export_path, disable_rules):
    rknn = _new_rknn()
    try:
        with _Captured(ctx, output_path):
            kwargs = _config_kwargs(request, case)
            if disable_rules:
                kwargs["disable_rules"] = list(disable_rules)
            rknn.config(**kwargs)
            if _load(rknn, case) != 0:
                raise RuntimeError("rknn-toolkit2 could not load the model (load_onnx failed); see the build log")
            quantize = bool(request.get("quantize", True))
            if quantize and request.get("float16_layers"):
                rknn, request["float16_kept"] = _build_hybrid(rknn, request, case, dataset, os.path.dirname(output_path))
            elif rknn.build(do_quantization=quantize, dataset=dataset) != 0:
                raise RuntimeError("rknn-toolkit2 could not build the model; see the build log")
            if export_path and rknn.export_rknn(export_path) != 0:
                raise RuntimeError("export_rknn failed")
    except BaseException:
        _release(rknn)
        raise
    return rknn


def _build_hybrid(rknn, request, case, dataset, folder):
    """Hybrid quantisation (rknn-toolkit2's two steps): step1 quantises and writes <model>.model,
    <model>.data and <model>.quantization.cfg into the working folder; the asked layers are set to
    float16 in the config's custom_quantize_layers (keyed, as the toolkit keys them itself, by the
    layer's output tensor in its own graph, after its fusions); step2, on a fresh RKNN object,
    builds from the three files. Returns (the object step2 built, {ONNX node: the layer kept})."""
    hybrid_dir = os.path.join(folder, "hybrid")
    os.makedirs(hybrid_dir, exist_ok=True)
    here = os.getcwd()
    os.chdir(hybrid_dir)  # step1 writes its three files into the working folder
    try:
        if rknn.hybrid_quantization_step1(dataset=dataset) != 0:
            raise RuntimeError("rknn-toolkit2's hybrid_quantization_step1 failed; see the build log")
        _release(rknn)
        rknn = None
        stem = os.path.splitext(os.path.basename(case["model"]))[0]
        files = [os.path.join(hybrid_dir, stem + suffix) for suffix in (".model", ".data", ".quantization.cfg")]
        kept = _mark_float16(files[2], request["float16_layers"])
        rknn = _new_rknn()
        if rknn.hybrid_quantization_step2(model_input=files[0], data_input=files[1], model_quantization_cfg=files[2]) != 0:
            raise RuntimeError("rknn-toolkit2's hybrid_quantization_step2 failed; see the build log")
        return rknn, kept
    except BaseException:
        _release(rknn)
        raise
    finally:
        os.chdir(here)


def _layers_of(tensor, layers):
    """The toolkit's layers made from one ONNX tensor: its name, or its name followed by the suffixes
    rknn-toolkit2 adds when it splits or reshapes a layer (`_mm`, `-rs`, `_slice`, `#1`, `_conv`),
    as the accuracy diagnosis maps them back (targets/rknn/diagnose.py)."""
    return sorted(l for l in layers if l == tensor or (l.startswith(tensor) and l[len(tensor)] in "_-#"))


def _mark_float16(cfg_path, wanted):
    """Write the layers into the config's custom_quantize_layers as float16; a node none of whose
    tensors names a layer of the toolkit's graph is an error naming it."""
    with open(cfg_path) as fh:
        text = fh.read()
    keys = re.findall(r"^    (\S.*):$", text.split("quantize_parameters:", 1)[-1], flags=re.M)
    layers = {k[1:-1].replace("''", "'") if k[:1] == "'" == k[-1:] else k.strip('"') for k in keys}
    kept, missing = {}, []
    for entry in wanted:
        found = next((hits for hits in (_layers_of(t, layers) for t in entry["candidates"]) if hits), None)
        if found is None:
            missing.append(entry["node"])
        else:
            kept[entry["node"]] = found
    if missing:
        raise RuntimeError("hybrid quantisation: rknn-toolkit2's graph has no layer for node(s) %s (their tensors were fused or renamed)" % ", ".join(missing))
    lines = "".join("    %s: float16\n" % json.dumps(layer) for layer in dict.fromkeys(l for hits in kept.values() for l in hits))
    text = re.sub(r"^custom_quantize_layers:.*$", "custom_quantize_layers:\n" + lines.rstrip("\n"), text, count=1, flags=re.M)
    with open(cfg_path, "w") as fh:
        fh.write(text)
    return kept


if __name__ == "__main__":  # pragma: no cover - manual debugging aid
    print(json.dumps({"toolkit_version": _toolkit_version()}))

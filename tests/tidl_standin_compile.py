"""A STAND-IN for TI's compile container, used only by tests/test_tidl_build.py.

TI's edgeai-tidl-tools cannot be installed here, so the tests pass edgedeploy a
--tidl-compile-command that runs this script instead of the generated compile_tidl.py. It does
what the container's side of the contract is, without TIDL:

  * prints a hand-made compile log (the fixture's compile.log: TI's summary line format),
  * copies a hand-made artifacts folder (tests/fixtures/tidl/<case>/artifacts) into {dir}/artifacts,
  * writes {dir}/emulation_outputs.npz from plain ONNX Runtime on the CPU (float32, NOT TI's
    emulation: the accuracy figures it leads to only show the plumbing, they say nothing about TIDL),
  * exits with the status given by --exit (to test failures).

    python tidl_standin_compile.py FIXTURE_DIR TIDL_DIR [--exit N]
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

from edgedeploy.arrays import read_arrays, write_arrays
import onnxruntime as ort


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("fixture", type=Path)
    parser.add_argument("tidl_dir", type=Path)
    parser.add_argument("--exit", type=int, default=0)
    args = parser.parse_args()
    print((args.fixture / "compile.log").read_text(), end="")
    if args.exit:
        print("error: stand-in compile asked to fail")
        return args.exit
    config = json.loads((args.tidl_dir / "compile_config.json").read_text())
    target = args.tidl_dir / config["artifacts_folder"]
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(args.fixture / "artifacts", target)
    if config.get("eval_inputs"):
        session = ort.InferenceSession(str(args.tidl_dir / config["model"]), providers=["CPUExecutionProvider"])
        data = read_arrays(args.tidl_dir / config["eval_inputs"])
        names = [i.name for i in session.get_inputs()]
        outs = [o.name for o in session.get_outputs()]
        collected = {o: [] for o in outs}
        for index in range(len(data[names[0]])):
            for name, value in zip(outs, session.run(None, {n: data[n][index] for n in names})):
                collected[name].append(value)
        write_arrays(args.tidl_dir / "emulation_outputs.npz", {k: np.stack(v) for k, v in collected.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Arrays handed to toolchain workers: one .npz, keyed by index, with the tensor names in a table.

The format has one implementation, toolchains/worker_arrays.py, which ships beside the
worker entry point (workers cannot import edgedeploy and load it as `ctx.arrays`); the core
uses the same functions through this module. See that file for why the keys are indices.
"""

from __future__ import annotations

from edgedeploy.toolchains.worker_arrays import INDEX_KEY, NAMES_KEY, WHOLE_KEY, read_arrays, held_whole, read_whole, take_feed, write_arrays, write_npy_list

__all__ = ["INDEX_KEY", "NAMES_KEY", "WHOLE_KEY", "read_arrays", "held_whole", "read_whole", "take_feed", "write_arrays", "write_npy_list"]

"""Ctrl-C, SIGTERM and SIGHUP: a command stops the same way whenever one of them arrives.

The program calls `install()` before it imports click, onnx, numpy or ONNX Runtime
(edgedeploy.__main__.run, the console script). Each of the three signals then raises
`Interrupted` in the main thread: the `with` blocks and `finally` clauses on the way out kill
the toolchain workers' process groups (ManagedProcess) and remove or set aside the temporary
artifact folder (ArtifactBuilder); the CLI prints `sentence()` and exits 130. Python's own
defaults do not: SIGTERM and SIGHUP end the process at once (status 143, no cleanup), and a
KeyboardInterrupt before the CLI's main() runs ends in a traceback.

`Interrupted` is a BaseException and not a KeyboardInterrupt, so click does not turn it into
"Aborted!" after a blank line, and no `except Exception` catches it. It can still be hidden:
an extension module built with pybind11 (ONNX Runtime's, onnx's) turns any exception raised
while it initialises into `ImportError: initialization failed`, and importing it again then
fails with `generic_type: type "..." is already registered!`. A broad `except` that took the
first ImportError for a capability answer ("this model cannot run batched") went on building
(exit 0 with 256 calibration steps of 1 instead of 8 of 32, or exit 70 at the next import). So:

- every broad `except` of the core calls `reraise_if_interrupted(exc)` (tests/faults/
  test_signals.py checks that each one does, or re-raises, or is named there with its reason);
- `received()` remembers the first signal for the rest of the process, and the CLI exits 130
  whenever it is set, whatever the command returned;
- only the first signal raises; a later one (Ctrl-C pressed twice, SIGTERM after SIGINT) is
  recorded, so it cannot cut short the cleanup the first one started (the grace period between
  SIGTERM and SIGKILL of a worker's group, the rename of a failed build folder); `deferred()`
  holds a first one back for a block that must finish;
- `check()` raises again where new work starts (an import, a progress line, a worker), in
  case the first one's exception was lost on the way;
- a forked copy of the process (a subprocess between fork and exec, edgedeploy.forked's child)
  inherits the handler but not the job: there a signal is left to the process that forked it,
  which stops the copy itself (its worker group, its SIGKILL). Raised there, it came out of
  threading's after-fork hook as an ignored exception with a traceback on stderr (a farm run's
  Ctrl-C, its SIGINT to each place's process group, caught one of them forking an ssh client).
"""
from __future__ import annotations

# Only what the interpreter has loaded already or costs little: this module is imported first.
import os
import signal
import sys
import threading

from edgedeploy.errors import EXIT_INTERRUPTED

# The signals a command stops on, and how the sentence names them.
SIGNALS = {"SIGINT": "SIGINT (Ctrl-C)", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP (hang-up)"}

_installed = False
_owner_pid: int | None = None  # the process install() ran in; its forked copies leave signals to it
_received: int | None = None
_holding = False  # the outcome is being reported: signals are only recorded
_deferring = 0  # depth of `deferred()` blocks
_pending = False  # the first signal came inside a `deferred()` block and is still to be raised


class Interrupted(BaseException):
    """One of SIGNALS arrived; the command stops (exit 130, `sentence()`)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"interrupted by {signal_name(self.signum)}"


def install() -> None:
    """Make SIGINT, SIGTERM and SIGHUP raise Interrupted in this (main) thread; idempotent."""
    global _installed, _owner_pid
    _installed = True
    _owner_pid = os.getpid()
    if _ImportCheckpoint not in sys.meta_path:
        sys.meta_path.insert(0, _ImportCheckpoint)
    for name in SIGNALS:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # not the main thread, or not supported here
            pass


def _on_signal(signum: int, frame) -> None:
    global _received, _pending
    if os.getpid() != _owner_pid:
        return  # a forked copy: the process that forked it stops it
    if _received is not None or _holding:
        _received = _received or signum
        return
    _received = signum
    if _deferring:
        _pending = True
        return
    if _in_extension_init(frame):
        # An exception raised while an extension module initialises (the Python code its C
        # init calls: an import) is not survivable: onnx's (nanobind) aborted or crashed the
        # process (status -6 or -11; once in 116 tries 0.03-0.6 s into a build), pybind11's leaves
        # a module that can never be imported again. Raised as soon as the init has returned.
        _pending = True
        _retry_soon()
        return
    raise Interrupted(signum)


def _in_extension_init(frame) -> bool:
    """Whether `frame` runs inside the initialisation of an extension module (C code)."""
    # importlib.machinery's class, from the bootstrap module the interpreter always has: no
    # import here, where an import would run check() inside the signal handler.
    extension_loader = sys.modules["_frozen_importlib_external"].ExtensionFileLoader
    while frame is not None:
        if frame.f_code.co_name in ("create_module", "exec_module") and isinstance(frame.f_locals.get("self"), extension_loader):
            return True
        frame = frame.f_back
    return False


# How often a signal held back by an extension module's initialisation is tried again.
RETRY_S = 0.005


def _retry_soon() -> None:
    signal.signal(signal.SIGALRM, _retry)
    signal.setitimer(signal.ITIMER_REAL, RETRY_S)


def _retry(_signum: int, frame) -> None:
    global _pending
    if not _pending or _holding or _deferring:
        return  # raised meanwhile, or a deferred() block raises it when it ends
    if _in_extension_init(frame):
        _retry_soon()
        return
    _pending = False
    raise Interrupted(_received)


class deferred:
    """`with deferred():` cleanup that must run to its end (a worker group's SIGTERM, grace
    period and SIGKILL; a build folder's removal or placement): a first signal that arrives
    inside is raised when the block ends, unless the block ends by an exception of its own."""

    def __enter__(self) -> "deferred":
        global _deferring
        _deferring += 1
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        global _deferring, _pending
        _deferring -= 1
        if not _deferring and _pending:
            _pending = False
            if exc_type is None and not _holding:
                raise Interrupted(_received)
        return False


def received() -> int | None:
    """The first of SIGNALS this process received since install() (None: none)."""
    return _received


def hold() -> None:
    """The command's outcome is decided: from now on a signal changes nothing (install()'s
    process only), and received() says whether one came before.

    The signals are ignored from here, not only recorded: Python's finalisation, after
    sys.exit(), restores their default action, and a SIGTERM that arrived then ended the process
    as killed by it (status 143 in a shell; measured 6 times in 13 tries 0-0.12 s after the last
    progress line of a build) instead of with the command's status.
    """
    global _holding
    if not _installed:
        return
    _holding = True
    if threading.current_thread() is not threading.main_thread():
        return
    for name in SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, signal.SIG_IGN)
    if signal.getsignal(signal.SIGALRM) is _retry:
        # A retry still armed would fire after finalisation restored SIGALRM's default: exit -14.
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)


def check() -> None:
    """Raise Interrupted if a signal arrived and nothing is on its way out: called where new work
    starts (an import, a progress line, a worker), in case the signal's exception was lost.

    Lost it can be, in C code that calls the handler and then clears the error: compile(), which
    every import runs without a bytecode file (see _ImportCheckpoint). While an exception
    propagates (a `finally`, an `__exit__`, an `except` clause: the cleanup the first signal
    started), or inside a `deferred()` block (cleanup after the interrupt was caught, the
    farm's), this raises nothing.
    """
    if _received is None or _holding or _deferring or sys.exc_info()[0] is not None:
        return
    if threading.current_thread() is threading.main_thread() and not _in_extension_init(sys._getframe(1)):
        raise Interrupted(_received)


class _ImportCheckpoint:
    """First on sys.meta_path: every import calls check() first, and finds nothing itself.

    compile() loses an exception its signal handler raised (measured: a SIGALRM handler that
    raises, fired 400 times during compile() of toolkit/datasets.py, ran 282 times; 130
    exceptions came out), and without bytecode files (PYTHONDONTWRITEBYTECODE) every import
    compiles: a SIGTERM 0.08 s into a build was honoured 0.8 s later, at the first progress line,
    and a SIGINT 0.36 s in let intake, the audit and the estimate run before the worker's start
    stopped it.
    """

    @staticmethod
    def find_spec(name, path=None, target=None):
        check()
        return None


def interrupt_behind(exc: BaseException) -> BaseException | None:
    """The interrupt `exc` stands for: a KeyboardInterrupt or Interrupted that is `exc` or in its
    chain of causes (a signal that cut an import short); or any failure once a signal arrived."""
    if _received is not None and threading.current_thread() is threading.main_thread():
        # (In another thread a raise would only end that thread, with a traceback on stderr.)
        return exc if isinstance(exc, Interrupted) else Interrupted(_received)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (KeyboardInterrupt, Interrupted)):
            return current
        current = current.__cause__ or current.__context__
    return None


def reraise_if_interrupted(exc: BaseException) -> None:
    """Raise the interrupt behind `exc` (interrupt_behind); return when there is none.

    The first line of every broad `except` of the core: whatever it does with a failure (a
    fallback, a note, a retry), it must not do it with a signal's.
    """
    behind = interrupt_behind(exc)
    if behind is None:
        return
    if behind.__traceback__ is None:  # a new Interrupted: the failure it hides is its cause
        raise behind from exc
    raise behind


def signal_name(signum: int | None) -> str:
    """How the sentence names a signal: "SIGINT (Ctrl-C)", "SIGTERM"..."""
    if signum is None:
        return SIGNALS["SIGINT"]
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
    return SIGNALS.get(name, name)


def sentence(signum: int | None) -> str:
    """The one line a command interrupted by `signum` (None: a KeyboardInterrupt) ends with."""
    return f"Interrupted by {signal_name(signum)}: the command stopped, and so did every process it had started."


def exit_interrupted() -> None:
    """End the process as an interrupted command: the sentence on stderr, exit 130."""
    hold()
    # On a terminal, Ctrl-C's "^C" echo ends no line: the sentence starts on a line of its own.
    lead = "\n" if _received in (None, signal.SIGINT) and _isatty(sys.stderr) else ""
    sys.stderr.write(lead + sentence(_received) + "\n")
    sys.stderr.flush()
    sys.exit(EXIT_INTERRUPTED)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False

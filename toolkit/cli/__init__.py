"""The `edgedeploy` command line.

`main()` is the console script. Errors a user can cause (EdgedeployError) end with one sentence
on stderr and the exit code of its class (edgedeploy.errors.EXIT_CODES, docs/cli.md); `--debug` (anywhere on the command line, or EDGEDEPLOY_DEBUG=1)
shows the traceback instead.
"""

from __future__ import annotations

import gc
import os
import sys
import warnings

import click

from edgedeploy import __version__, interrupts
from edgedeploy.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EdgedeployError, EdgedeployWarning
from edgedeploy.escape import terminal_safe
from edgedeploy.fs_errors import file_system_error


class LazyCommands(click.Group):
    """The root group: each command's module is imported only when that command is looked up.

    `edgedeploy.cli.<name>_cmd` provides the command `<name>` (its COMMANDS list holds it), so
    `edgedeploy audit` imports the audit command's module and what it needs, not every command
    and their pipelines; `--help` looks every command up, so it still lists them all. A name that
    no module provides yet gets its placeholder from `pending`.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        from edgedeploy.cli import pending

        return sorted(set(_command_modules()) | set(pending.PENDING) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        module = _command_modules().get(cmd_name)
        if module is not None:
            import importlib

            for command in importlib.import_module(f"{__name__}.{module}").COMMANDS:
                if command.name == cmd_name:
                    return command
            return None
        from edgedeploy.cli import pending

        return next((c for c in pending.COMMANDS if c.name == cmd_name), None)


    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The "Commands:" list of `edgedeploy --help`, from COMMAND_SUMMARIES, no command imported.

        click's own listing would look every command up, importing every command module and what
        they import at the top (onnx, numpy, the targets): about a second, where `--help` should
        cost little more than importing click (issue 27; scripts/bench_audit.py times it). A
        command missing from the table is looked up as click does (right, only slower);
        tests/test_cli_help_speed.py checks the table against the commands' own help.
        """
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            summary = COMMAND_SUMMARIES.get(name)
            if summary is not None:
                # click's own shortening, on a stand-in command with that help (cheap to make).
                rows.append((name, click.Command(name, help=summary).get_short_help_str(limit)))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


# Each command's summary: the first sentence of its help, as `edgedeploy --help` lists it (click
# shortens it to the terminal's width). Kept here so that listing the commands imports none of
# them; tests/test_cli_help_speed.py fails when one differs from the command's own help.
COMMAND_SUMMARIES = {
    "audit": "Place every node of MODEL on each chip: on the accelerator, kept in float, falling back, or unsupported.",
    "bench": "Time MODEL on this machine's backends: warm-up, timed iterations, >= 3 independent sessions each.",
    "build": "Build MODEL for each --target: audit, convert with the vendor toolchain, generate the project, verify accuracy.",
    "diagnose": "Where int8 breaks ARTIFACT's model, node by node, and why.",
    "devices": "The devices `edgedeploy measure` can run on (the inventory file), and checking one.",
    "estimate": "Estimate MODEL's latency per inference on each chip, with a range and the chip's typical error.",
    "fix": "Rewrite MODEL so nodes that fall back or are unsupported on each --target move onto its accelerator.",
    "inspect": "Load and check MODEL; show its inputs, outputs, operators, parameters, MACs and content hash.",
    "measure": (
        "Run a built artifact on a device: latency before (reference ONNX model on the device's ONNX Runtime CPU) and after "
        "(the artifact on its runtime), >= 3 sessions each in separate processes, and the outputs of both checked on the same inputs."
    ),
    "report": "Render the reports of one or more artifacts (or folders of artifacts) as one comparison.",
    "sample": "The bundled sample (a small CNN trained on real MNIST digits): its card, or its files.",
    "targets": "List every target chip with its accelerator, toolchain, and whether that toolchain is installed here.",
    "toolchain": "Manage the vendor toolchain environments (one virtual environment per toolchain, under $EDGEDEPLOY_HOME).",
}


def _command_modules() -> dict[str, str]:
    """command name -> its module in this package: every `<name>_cmd` module (a folder listing, no import)."""
    import pkgutil

    return {info.name.removesuffix("_cmd"): info.name for info in pkgutil.iter_modules(__path__) if info.name.endswith("_cmd")}


def all_commands() -> dict[str, click.Command]:
    """Every top-level command by name, each module imported (tests and the docs list them)."""
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


@click.group(cls=LazyCommands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="edgedeploy")
@click.option("--debug", is_flag=True, help="Show full tracebacks for errors.")
@click.option("-q", "--quiet", is_flag=True, help="Only warnings, errors and the result: no progress lines.")
@click.option("-v", "--verbose", is_flag=True, help="Also print every line the vendor toolchains write to their logs.")
@click.pass_context
def cli(ctx: click.Context, debug: bool, quiet: bool, verbose: bool) -> None:
    """edgedeploy: audit, convert, generate and measure one ONNX model for each target chip.

    Data goes to stdout (pure JSON with --format json); progress and errors go to stderr: a live
    line on a terminal, plain lines in a log (NO_COLOR turns colour off).
    """
    from edgedeploy.cli.progress import OutputSettings
    from edgedeploy.errors import OptionError

    if quiet and verbose:
        raise OptionError("-q/--quiet and -v/--verbose contradict each other; give one.")
    ctx.obj = OutputSettings(quiet=quiet, verbose=verbose)


def _debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("EDGEDEPLOY_DEBUG", "") not in ("", "0")


# The root command's flags, accepted after the subcommand too (`edgedeploy build -q ...`);
# no subcommand has an option of these names.
ROOT_FLAGS = ("--debug", "-q", "--quiet", "-v", "--verbose")


def _hoist_root_flags(argv: list[str]) -> list[str]:
    """Move the root flags given after the subcommand to the front, where click reads them.

    Only up to a `--` (after it, everything is an argument).
    """
    end = argv.index("--") if "--" in argv else len(argv)
    flags = [a for a in argv[:end] if a in ROOT_FLAGS]
    rest = [a for a in argv[:end] if a not in ROOT_FLAGS] + argv[end:]
    return flags + rest


# Whether main() runs as the program (the console script, `python -m edgedeploy`) rather than
# called by a test or script in its own long-lived process: only then does a command tune the
# process (the garbage collector) or fork a second one (the audit, edgedeploy.forked).
_running_as_program = False


def running_as_program() -> bool:
    """Whether this process is the edgedeploy program itself (main() called without argv)."""
    return _running_as_program


# Objects allocated between two runs of the cyclic garbage collector's youngest generation
# (Python's default: 700).
GC_YOUNG_THRESHOLD = 50_000


def tune_garbage_collector() -> None:
    """Make the cyclic garbage collector run rarely in this short-lived process.

    A command builds large structures that hold no reference cycles (a model's node views, every
    chip's placements): reference counting frees them, and the collector's repeated passes over
    them found nothing to free while taking about 15% of `audit --target all` on a 900-node model
    (0.07 of 0.45 s). What was imported before the command is frozen (never scanned again), and
    the collector still runs, every GC_YOUNG_THRESHOLD allocations instead of every 700.
    """
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


# Set by a command whose process holds nothing that needs the interpreter's teardown (skip_teardown).
_teardown_skippable = False


def skip_teardown() -> None:
    """Let the program end without the interpreter's teardown once this command has run.

    For a command that leaves a large heap behind and nothing to finish: the audit of a
    900-node model on 17 chips leaves a few hundred thousand objects (node views, placements,
    report dicts), and freeing them one by one at exit took 15-20 ms, a tenth of what the audit
    adds to reading the model (scripts/bench_audit.py). Only the program itself skips it
    (exit_without_teardown); a caller running commands in its own process is not affected.
    """
    global _teardown_skippable
    _teardown_skippable = True


def exit_without_teardown(code: int) -> None:
    """End the process with `code` now: the atexit handlers run and stdout and stderr are flushed
    as at a normal exit, but the heap is not freed object by object (os._exit).

    Returns (the caller exits as usual) while another thread runs, whose end a normal exit
    waits for, or when the output cannot be flushed, so that error is reported as usual.
    """
    import atexit
    import threading

    if threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def main(argv: list[str] | None = None) -> None:
    global _running_as_program, _teardown_skippable
    _teardown_skippable = False  # each command decides for itself (skip_teardown)
    if argv is None:
        # Run as the program (the console script): a caller running commands in its own
        # long-lived process (tests, scripts) keeps its collector and its signal handlers.
        _running_as_program = True
        # Already done by the console script (edgedeploy.__main__.run) before click was imported.
        interrupts.install()
        tune_garbage_collector()
    argv = _hoist_root_flags(list(sys.argv[1:] if argv is None else argv))
    debug = _debug_requested(argv)
    try:
        code, message = _run(argv, debug)
        interrupts.hold()
    except (KeyboardInterrupt, interrupts.Interrupted):
        # Also raised while an error was being turned into its sentence: the signal wins.
        interrupts.hold()
        code, message = EXIT_INTERRUPTED, None
    if (code != EXIT_INTERRUPTED and interrupts.received() is not None) or (code == EXIT_INTERRUPTED and message is None):
        # Whatever the command did after a signal (an error its cleanup caused, a result it
        # completed), the outcome is the interruption: exit 130 and its one sentence. A command
        # that says more about its own interruption (the farm: which places it released) says it.
        interrupts.exit_interrupted()
    if message is not None:
        click.echo(message, err=True)
    if _running_as_program and _teardown_skippable:
        exit_without_teardown(code)
    sys.exit(code)


def _run(argv: list[str], debug: bool) -> tuple[int, str | None]:
    """Run the command: its exit status, and the one line to print on stderr (None: nothing more)."""
    try:
        with warnings.catch_warnings():
            # Warnings for the user (intake, the dataset loader) are one line each on stderr, every time.
            warnings.simplefilter("always", EdgedeployWarning)
            warnings.showwarning = _show_warning
            cli.main(args=argv, prog_name="edgedeploy", standalone_mode=False)
    except EdgedeployError as exc:
        if exc.exit_code != EXIT_INTERRUPTED:  # else the command's own sentence about the interruption
            interrupts.reraise_if_interrupted(exc)
        if debug:
            _print_traceback()
        return exc.exit_code, f"error: {terminal_safe(str(exc))}"
    except click.exceptions.Abort as exc:
        # Ctrl-C before the handlers were installed (main() called by a caller's own program)
        # is click's Abort from a KeyboardInterrupt; Interrupted passes through click untouched.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            return EXIT_INTERRUPTED, None
        return EXIT_INTERRUPTED, "Aborted."
    except click.UsageError as exc:
        return exc.exit_code, _usage_sentence(exc)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code, None
    except click.exceptions.Exit as exc:
        return exc.exit_code, None
    except SystemExit as exc:
        # A command's own exit status (build's failed chips, gates): already reported.
        return _exit_status(exc.code), None
    except BrokenPipeError:
        # stdout closed early (piped into head): not an error of ours.
        sys.stderr.close()
        return 0, None
    except OSError as exc:
        interrupts.reraise_if_interrupted(exc)
        return _file_system_outcome(exc, debug)
    except Exception as exc:  # noqa: BLE001 - last resort: still one sentence, not a traceback
        interrupts.reraise_if_interrupted(exc)
        return EXIT_INTERNAL, _internal_error(exc, debug)
    return 0, None


def _exit_status(code) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _usage_sentence(exc: click.UsageError) -> str:
    if type(exc).__name__ == "NoArgsIsHelpError":
        # `edgedeploy` alone (click >= 8.2 raises this): the help as it is, not squeezed into
        # one error line; the exit status still says no command ran.
        return exc.ctx.get_help() if exc.ctx is not None else exc.format_message()
    # One sentence, like every other error: what was wrong, and where the help is.
    message = " ".join(exc.format_message().split()).rstrip(".")
    command = exc.ctx.command_path if exc.ctx is not None else "edgedeploy"
    joiner = " See" if message.endswith("?") else "; see"
    return f"error: {message}{joiner} `{command} --help`."


def _file_system_outcome(exc: OSError, debug: bool) -> tuple[int, str]:
    """The one translation point for what the file system refuses (full disk, `ulimit -f`, a path
    too long, a file in the way, a link loop, no permission, read-only): the user's environment,
    one sentence with the exit code of its class. Any other OSError is a bug."""
    from edgedeploy.toolchains.environments import home_path

    error = file_system_error(exc, home=home_path())
    if error is None:
        return EXIT_INTERNAL, _internal_error(exc, debug)
    if debug:
        _print_traceback()
    return error.exit_code, f"error: {terminal_safe(str(error))}"


def _print_traceback() -> None:
    """The exception being handled, with its traceback (--debug); the module only imported here."""
    import traceback

    traceback.print_exc()


def _internal_error(exc: BaseException, debug: bool) -> str:
    """A bug: its one line (exit 70), and its traceback printed now under --debug."""
    if debug:
        _print_traceback()
        return f"internal error: {type(exc).__name__}: {exc}"
    return f"internal error: {type(exc).__name__}: {exc} (this is a bug in edgedeploy; rerun with --debug for the traceback)"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, EdgedeployWarning):
        click.echo(f"warning: {terminal_safe(str(message))}", err=True)
    else:
        # Other libraries' warnings stay out of the user's way unless they asked for details.
        if _debug_requested(sys.argv[1:]):
            click.echo(warnings.formatwarning(message, category, filename, lineno, line).rstrip(), err=True)

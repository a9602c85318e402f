"""The labgrid transport's client: places of a labgrid farm listed, acquired and released.

labgrid (https://labgrid.org) runs a board farm as three kinds of processes: one *coordinator*
(gRPC, `labgrid-coordinator`, port 20408 by default) that knows every place and who holds it;
*exporters* on the hosts the boards hang off, which publish the boards' resources (a
NetworkService for a Linux board's sshd, a serial port served over RFC 2217 by ser2net, power
switches, ...); and *clients* that acquire a place (a named set of resources, with tags such as
`chip=rk3588`), use it, and release it. edgedeploy is such a client:

    client = FarmClient("127.0.0.1:20408")          # FarmUnavailable when nobody answers
    places = client.places()                        # {name: PlaceInfo}, with each place's resources
    info = client.acquire("rock5b-1")               # PlaceBusy when someone else holds it
    device_fields = board_access(info, "ssh")       # host/port/user, or an rfc2217:// serial URL
    ...                                              # measure through the ssh or serial transport
    client.release("rock5b-1")                      # only ever our own hold (never kicks anyone)
    client.close()

What the place's resources say is used through edgedeploy's own transports: a NetworkService
through the system OpenSSH client (devices/ssh.py: host keys verified, the user's ssh config),
a NetworkSerialPort through pyserial's rfc2217:// (or socket://) URL (devices/serial.py).

labgrid is an optional extra (`pip install 'edgedeploy[farm]'`): it is imported here only, when a
farm is used. Its client runs on asyncio and gRPC; FarmClient keeps that in a thread of its own
(one event loop) and offers plain blocking calls, so the rest of edgedeploy stays synchronous.
labgrid logs through the root logger; while a FarmClient is open those records go to
`client.log_tail()` (and into error sentences), never raw onto the user's terminal.

Facts this module relies on (labgrid 26.0, labgrid/remote/coordinator.py and client.py):
- a place is acquired by "HOSTNAME/USER" (LG_HOSTNAME / LG_USERNAME override them), and only
  AcquirePlace's caller holds it; a client that disconnects does NOT release its places;
- the coordinator forgets every hold when it restarts (places.yaml is loaded without them);
- a place allocated to someone's reservation can be acquired only by the reservation's owner;
- an exported serial port appears as cls NetworkSerialPort, params host/port/speed (and
  protocol: rfc2217 unless "raw"), with its port filled in once the exporter's ser2net runs,
  which happens when the place is acquired.
"""

from __future__ import annotations

import asyncio
import collections
import fnmatch
import logging
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from edgedeploy.errors import DeviceError, OptionError
from edgedeploy.interrupts import reraise_if_interrupted

URL_SCHEME = "labgrid"
DEFAULT_COORDINATOR_PORT = 20408
# The place tag that says which chip a board carries (`labgrid-client -p NAME set-tags chip=rk3588`).
CHIP_TAG = "chip"
NETWORK_SERVICE = "NetworkService"
NETWORK_SERIAL_PORT = "NetworkSerialPort"
CONNECT_TIMEOUT_S = 15.0
RPC_TIMEOUT_S = 30.0
# After an acquire, the exporter starts ser2net and publishes the serial port's TCP port.
RESOURCE_READY_TIMEOUT_S = 20.0
LOG_TAIL_LINES = 40
FARM_EXTRA_HINT = "pip install 'edgedeploy[farm]'"


class FarmAddressError(OptionError, DeviceError):
    """A --farm value (or an inventory's coordinator) that is not labgrid://HOST:PORT: a usage error (exit 2)."""


class FarmUnavailable(DeviceError):
    """The coordinator cannot be reached (or stopped answering)."""


class FarmConnectionLost(FarmUnavailable):
    """The connection to the coordinator ended while edgedeploy was using the farm."""


class PlaceBusy(DeviceError):
    """The place is held by someone (or allocated to someone's reservation)."""


def parse_farm_url(text: str) -> str:
    """`labgrid://HOST[:PORT]` (or plain HOST[:PORT]) as the coordinator's "HOST:PORT"."""
    raw = (text or "").strip()
    if not raw:
        raise FarmAddressError("The farm address is empty; give it as labgrid://HOST:PORT.")
    if "://" in raw:
        scheme = raw.split("://", 1)[0].lower()
        if scheme != URL_SCHEME:
            raise FarmAddressError(f"The farm address {raw!r} is not a labgrid coordinator; give it as labgrid://HOST:PORT.")
        rest = raw.split("://", 1)[1]
    else:
        rest = raw
    if not rest or any(c.isspace() for c in rest) or "/" in rest.rstrip("/") or "@" in rest:
        raise FarmAddressError(f"The farm address {raw!r} is not of the form labgrid://HOST:PORT.")
    rest = rest.rstrip("/")
    try:
        parts = urlsplit(f"//{rest}")
        host, port = parts.hostname, parts.port
    except ValueError:
        raise FarmAddressError(f"The farm address {raw!r} has no valid port; give it as labgrid://HOST:PORT.") from None
    if not host:
        raise FarmAddressError(f"The farm address {raw!r} names no host; give it as labgrid://HOST:PORT.")
    port = port or DEFAULT_COORDINATOR_PORT
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def farm_url(address: str) -> str:
    return f"{URL_SCHEME}://{address}"


def place_matches_pattern(name: str, aliases: tuple[str, ...], pattern: str | None) -> bool:
    """A place pattern as `labgrid-client -p` reads it (a part of the name or an alias), or a glob (`rock5b-*`)."""
    if not pattern:
        return True
    candidates = (name, *aliases)
    if any(c in pattern for c in "*?["):
        return any(fnmatch.fnmatchcase(c, pattern) for c in candidates)
    return any(pattern in c for c in candidates)


@dataclass(frozen=True)
class PlaceResource:
    """One resource the coordinator knows that a place's matches select."""

    exporter: str
    group: str
    cls: str
    name: str
    params: dict
    avail: bool
    acquired: str | None

    @property
    def path(self) -> str:
        return f"{self.exporter}/{self.group}/{self.cls}/{self.name}"


@dataclass(frozen=True)
class PlaceInfo:
    name: str
    tags: dict
    aliases: tuple[str, ...]
    comment: str
    acquired: str | None  # "host/user" of the holder
    reservation: str | None  # the token of a reservation the place is allocated to
    resources: tuple[PlaceResource, ...] = field(default_factory=tuple)

    def resource(self, cls: str) -> PlaceResource | None:
        for res in self.resources:
            if res.cls == cls:
                return res
        return None

    @property
    def chip(self) -> str | None:
        value = self.tags.get(CHIP_TAG)
        return value.strip().lower() if isinstance(value, str) and value.strip() else None

    def describe_tags(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.tags.items())) or "no tags"


def _resource_params(place: PlaceInfo, kind: str, missing: str) -> dict:
    """The params of the place's `kind` resource; DeviceError "has no <missing>." when it has none."""
    res = place.resource(kind)
    if res is None:
        raise DeviceError(f"Place '{place.name}' has no {missing}.")
    _refuse_proxy(place, res)
    return res.params


def board_access(place: PlaceInfo, transport: str) -> dict:
    """How edgedeploy's own transport reaches an acquired place's board.

    ssh:    {"host", "port", "user"} from the NetworkService (its address, port, username);
    serial: {"serial_port": "rfc2217://HOST:PORT" (or socket:// for a raw one), "baud"}
    from the NetworkSerialPort. Raises DeviceError when the place lacks the resource, or when
    the resource needs labgrid's SSH proxy through the exporter (not supported here).
    """
    if transport == "ssh":
        params = _resource_params(place, NETWORK_SERVICE, "NetworkService, so its board cannot be reached over SSH")
        address = str(params.get("address") or "")
        if not address or "%" in address:
            raise DeviceError(f"Place '{place.name}': the NetworkService address {address!r} needs labgrid's proxy through the exporter, which edgedeploy does not use.")
        port = params.get("port") or 22
        return {"host": address, "port": int(port), "user": params.get("username") or None}
    if transport == "serial":
        params = _resource_params(place, NETWORK_SERIAL_PORT, "serial port (NetworkSerialPort), so its board's console cannot be read")
        host, port = params.get("host"), params.get("port")
        if not host or not port:
            raise DeviceError(f"Place '{place.name}': the exporter has not published its serial port's network port (is ser2net installed on the exporter host?).")
        shown_host = f"[{host}]" if ":" in str(host) else host
        if params.get("protocol") == "raw":
            url = f"socket://{shown_host}:{int(port)}"
        else:
            # As labgrid's own SerialDriver opens it: ser2net does not acknowledge modem-line
            # changes on every port (a pseudo-terminal has none), so pyserial must not wait for that.
            url = f"rfc2217://{shown_host}:{int(port)}?ign_set_control"
        return {"serial_port": url, "baud": int(params.get("speed") or 115200)}
    raise ValueError(f"unknown transport {transport!r}")


def _refuse_proxy(place: PlaceInfo, res: PlaceResource) -> None:
    extra = res.params.get("extra") or {}
    if extra.get("proxy_required"):
        raise DeviceError(
            f"Place '{place.name}': {res.path} can only be reached through labgrid's SSH proxy to the exporter host, which edgedeploy does not use; "
            "make the board reachable from this machine."
        )


def board_identity(place: PlaceInfo, transport: str) -> dict:
    """What names the physical board behind a place: the exporter, the resource and where it is."""
    cls = NETWORK_SERVICE if transport == "ssh" else NETWORK_SERIAL_PORT
    res = place.resource(cls)
    identity = {"place": place.name, "tags": dict(place.tags), "aliases": sorted(place.aliases), "comment": place.comment or None}
    if res is not None:
        params = res.params
        identity["exporter"] = res.exporter
        identity["resource"] = res.path
        if transport == "ssh":
            identity["address"] = f"{params.get('username') + '@' if params.get('username') else ''}{params.get('address')}:{params.get('port') or 22}"
        else:
            identity["serial_path_on_exporter"] = (params.get("extra") or {}).get("path")
            identity["exporter_host"] = params.get("host")
    return identity


class _TailHandler(logging.Handler):
    """Keeps labgrid's log records (it logs through the root logger) instead of printing them."""

    def __init__(self, lines: collections.deque):
        super().__init__(level=logging.INFO)
        self._lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._lines.append(f"{record.levelname.lower()}: {record.getMessage()}")
        except Exception:  # noqa: BLE001 - a log record must never break the client
            pass


def _import_labgrid():
    try:
        import grpc  # noqa: F401 - labgrid's own dependency, imported to fail early with our sentence
        from labgrid.remote import client as lg_client
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb
    except ImportError as exc:
        reraise_if_interrupted(exc)
        raise DeviceError(f"Using a labgrid farm needs labgrid: {FARM_EXTRA_HINT} (it was not importable: {exc}).") from exc
    return lg_client, pb


class FarmClient:
    """A labgrid client session to one coordinator, with blocking calls (the asyncio side lives in its own thread)."""

    def __init__(self, address: str, connect_timeout_s: float = CONNECT_TIMEOUT_S):
        self._lg_client, self._pb = _import_labgrid()
        import grpc

        self._grpc = grpc
        self.address = address
        self._log: collections.deque = collections.deque(maxlen=LOG_TAIL_LINES)
        self._handler = _TailHandler(self._log)
        # labgrid calls logging.error() at module level, which would install a stderr handler on
        # the root logger (logging.basicConfig) if it had none: ours is there first.
        logging.getLogger().addHandler(self._handler)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name=f"labgrid-client {address}", daemon=True)
        self._thread.start()
        self._session = None
        self._closed = False
        try:
            self._session = self._call(self._start(), connect_timeout_s + 5)
        except FarmUnavailable:
            self.close()
            raise
        except (TimeoutError, asyncio.TimeoutError):
            self.close()
            raise FarmUnavailable(f"The labgrid coordinator at {address} did not answer within {connect_timeout_s:.0f} s.") from None
        except Exception as exc:  # noqa: BLE001 - gRPC and labgrid raise many kinds; the user gets one sentence
            self.close()
            reraise_if_interrupted(exc)
            raise FarmUnavailable(f"Cannot connect to the labgrid coordinator at {address}: {self._reason(exc)}.") from exc

    # -- the event loop thread ----------------------------------------------------------------

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def _call(self, coroutine, timeout_s: float):
        if self._closed and self._session is not None:
            raise FarmUnavailable(f"The connection to the labgrid coordinator at {self.address} is closed.")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout_s)
        except BaseException:
            future.cancel()
            raise

    async def _start(self):
        session = self._lg_client.ClientSession(address=self.address, loop=asyncio.get_running_loop())
        try:
            await asyncio.wait_for(session.start(), CONNECT_TIMEOUT_S)
        except asyncio.TimeoutError:
            await self._stop_session(session)
            raise FarmUnavailable(f"The labgrid coordinator at {self.address} did not answer within {CONNECT_TIMEOUT_S:.0f} s.") from None
        except self._lg_client.Error as exc:
            await self._stop_session(session)
            raise FarmUnavailable(f"Cannot connect to the labgrid coordinator at {self.address} ({self._last_log() or exc}).") from None
        return session

    @staticmethod
    async def _stop_session(session) -> None:
        try:
            session.stopping.set()
            await session.stop()
            await session.close()
        except Exception:  # noqa: BLE001 - tearing down a half-open session
            pass

    # -- state -------------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """"HOST/USER" as the coordinator records this client's holds."""
        session = self._session
        return f"{session.gethostname()}/{session.getuser()}" if session else "?"

    @property
    def lost(self) -> bool:
        """True once the stream to the coordinator has ended (it was killed, or the network dropped)."""
        session = self._session
        return session is None or session.stopping.is_set()

    def log_tail(self) -> list[str]:
        return list(self._log)

    def _last_log(self) -> str:
        for line in reversed(self._log):
            if line.startswith(("error:", "warning:")):
                return line.split(": ", 1)[1]
        return ""

    def _reason(self, exc: BaseException) -> str:
        details = getattr(exc, "details", None)
        if callable(details):
            try:
                text = details()
                if text:
                    return str(text)
            except Exception:  # noqa: BLE001
                pass
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__

    def _lost_error(self, doing: str) -> FarmConnectionLost:
        why = self._last_log()
        return FarmConnectionLost(f"The connection to the labgrid coordinator at {self.address} was lost while {doing}" + (f" ({why})" if why else "") + ".")

    # -- places ------------------------------------------------------------------------------

    def places(self) -> dict[str, PlaceInfo]:
        """Every place the coordinator knows, with the resources its matches select."""
        if self.lost:
            raise self._lost_error("listing places")

        async def snapshot():
            return self._snapshot()

        return self._call(snapshot(), RPC_TIMEOUT_S)

    def _snapshot(self) -> dict[str, PlaceInfo]:
        """Runs in the loop thread: the session's view of places and resources as plain data."""
        session = self._session
        resources = []
        for exporter, groups in session.resources.items():
            for group_name, group in groups.items():
                for resource_name, entry in group.items():
                    try:
                        resources.append(((exporter, group_name, entry.cls, resource_name), entry))
                    except KeyError:  # a resource deleted while the exporter went away
                        continue
        result = {}
        for name, place in session.places.items():
            mine = []
            acquired_paths = {tuple(p) for p in (place.acquired_resources or [])}
            for path, entry in resources:
                if acquired_paths and path not in acquired_paths:
                    continue
                if not acquired_paths and not place.hasmatch(path):
                    continue
                mine.append(
                    PlaceResource(
                        exporter=path[0], group=path[1], cls=path[2], name=path[3], params=_plain(entry.params), avail=bool(entry.avail), acquired=entry.acquired
                    )
                )
            result[name] = PlaceInfo(
                name=name,
                tags={str(k): str(v) for k, v in dict(place.tags or {}).items()},
                aliases=tuple(sorted(str(a) for a in (place.aliases or ()))),
                comment=str(place.comment or ""),
                acquired=place.acquired or None,
                reservation=place.reservation or None,
                resources=tuple(mine),
            )
        return result

    def acquire(self, name: str) -> PlaceInfo:
        """Acquire the place for this client; PlaceBusy when someone holds it or it is reserved for someone."""
        grpc = self._grpc
        if self.lost:
            raise self._lost_error(f"acquiring place '{name}'")

        async def acquire():
            try:
                await self._session.stub.AcquirePlace(self._pb.AcquirePlaceRequest(placename=name), timeout=RPC_TIMEOUT_S)
            except grpc.aio.AioRpcError as exc:
                code = exc.code()
                if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.PERMISSION_DENIED):
                    raise PlaceBusy(f"Place '{name}' cannot be acquired: {exc.details()}.") from None
                if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise self._lost_error(f"acquiring place '{name}'") from None
                raise DeviceError(f"The labgrid coordinator at {self.address} refused to acquire place '{name}': {exc.details()}.") from None
            await self._session.sync_with_coordinator()

        self._call(acquire(), RPC_TIMEOUT_S + 5)
        try:
            return self.wait_until_ready(name)
        except BaseException:
            self.release(name)  # a place whose board cannot be used is not kept
            raise

    def wait_until_ready(self, name: str, timeout_s: float = RESOURCE_READY_TIMEOUT_S) -> PlaceInfo:
        """The acquired place once its serial ports have a network port (ser2net started) and are available."""
        deadline = time.monotonic() + timeout_s
        while True:
            info = self.places().get(name)
            if info is None:
                raise DeviceError(f"Place '{name}' disappeared from the labgrid coordinator at {self.address}.")
            pending = [r for r in info.resources if r.cls == NETWORK_SERIAL_PORT and (not r.params.get("port") or not r.avail)]
            if not pending:
                return info
            if time.monotonic() >= deadline:
                raise DeviceError(
                    f"Place '{name}': the exporter did not start serving {pending[0].path} within {timeout_s:.0f} s (is ser2net installed on the exporter host?)."
                )
            time.sleep(0.1)

    def release(self, name: str) -> bool:
        """Release the place if this client still holds it (never someone else's); False when that was not possible."""
        grpc = self._grpc
        if self.lost:
            return False

        async def release():
            try:
                await self._session.stub.ReleasePlace(self._pb.ReleasePlaceRequest(placename=name, fromuser=self.identity), timeout=RPC_TIMEOUT_S)
            except grpc.aio.AioRpcError:
                return False
            await self._session.sync_with_coordinator()
            return True

        try:
            return bool(self._call(release(), RPC_TIMEOUT_S + 5))
        except Exception:  # noqa: BLE001 - releasing is best effort once the connection is gone
            return False

    def close(self) -> None:
        """End the session and the loop thread (idempotent); holds are NOT released here (release() them first)."""
        if self._closed:
            return
        self._closed = True
        session = self._session
        if session is not None and self._loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._stop_session(session), self._loop).result(10)
            except Exception:  # noqa: BLE001
                pass
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._loop.is_running():
            try:
                self._loop.close()
            except Exception:  # noqa: BLE001
                pass
        logging.getLogger().removeHandler(self._handler)

    def __enter__(self) -> "FarmClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _plain(value):
    """Resource parameters as plain JSON-able data (labgrid gives dicts of str/int/bool/None)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)

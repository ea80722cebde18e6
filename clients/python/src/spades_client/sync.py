"""A synchronous face of the asyncio client, for scripts and REPLs.

The asyncio client runs on an event loop in a background thread (one for the
process, a daemon); each method here runs the matching coroutine there and
waits for it. The classes mirror the asyncio ones: ``Client`` (the lobby's
calls too), ``Seat``, ``Session``; errors are the same ``SpadesError``. The
lobby's streams (``watch_table``, ``watch_ticket``, ``watch_lobby``,
``follow_lobby``, ``tables``, ``leaderboard_pages``, ``leaderboard_entries``)
are plain iterators here; ``close()`` one (or
leave its ``for`` loop) to end its call.

>>> from spades_client import sync                              # doctest: +SKIP
>>> with sync.connect("localhost:50051", operator_token=OP) as client:
...     created = client.create_match(seats=[...], seed=7)
...     seat = client.seat(created.seat_tokens[0].token)
...     seat.claim()
...     with seat.session() as session:
...         for event in session.events(timeout=30):
...             ...
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncGenerator, Coroutine, Generator, Iterable, Iterator, Sequence
from typing import Any, Final, TypeVar

import grpc

from . import _client, _session
from ._client import DEFAULT_TIMEOUT, TLS, SeatTokenHolder
from ._errors import SessionClosed
from ._gen.spades.v1 import lobby_pb2 as lpb
from ._gen.spades.v1 import spades_pb2 as pb
from ._retry import DEFAULT_POLL_WAIT_MS, Backoff

__all__ = ["Client", "Seat", "Session", "connect"]

T = TypeVar("T")


class _Done:
    """An async iterator's end, as a value (a coroutine that raised
    StopAsyncIteration would be a strange thing to hand across threads)."""


_DONE: Final = _Done()


class _Loop:
    """An event loop running in a daemon thread.

    One for the whole process, shared by every synchronous client: gRPC's
    asyncio layer is happiest on one loop, and a thread per client would cost
    a thread per client."""

    _shared: _Loop | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="spades-client", daemon=True)
        self._thread.start()

    @classmethod
    def shared(cls) -> _Loop:
        with cls._lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer in {timeout:g} s") from None
        except KeyboardInterrupt:
            future.cancel()
            raise


def connect(
    address: str,
    *,
    tls: bool | TLS | grpc.ChannelCredentials = False,
    operator_token: str | None = None,
    credential: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    backoff: Backoff | None = None,
    options: Sequence[tuple[str, Any]] = (),
) -> Client:
    """``spades_client.connect``, synchronous: the same arguments."""
    loop = _Loop.shared()

    async def make() -> _client.Client:
        return _client.connect(
            address,
            tls=tls,
            operator_token=operator_token,
            credential=credential,
            timeout=timeout,
            backoff=backoff,
            options=options,
        )

    return Client(loop, loop.run(make()))


class Client:
    """A synchronous ``spades_client.Client``; ``close()`` it (or ``with``)."""

    def __init__(self, loop: _Loop, client: _client.Client) -> None:
        self._loop = loop
        self.aio = client  # the asyncio client underneath
        self._closed = False

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run(coro)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's sessions and its channel."""
        if not self._closed:
            self._closed = True
            self._run(self.aio.close())

    def ping(self) -> None:
        self._run(self.aio.ping())

    def create_match(
        self,
        request: pb.CreateMatchRequest | None = None,
        *,
        ruleset: pb.Ruleset | None = None,
        seats: Sequence[pb.SeatConfig] = (),
        seed: int | None = None,
        turn_timer_ms: int = 0,
        spectators: pb.Spectators.ValueType = pb.SPECTATORS_UNSPECIFIED,
    ) -> pb.CreateMatchResponse:
        return self._run(
            self.aio.create_match(
                request,
                ruleset=ruleset,
                seats=seats,
                seed=seed,
                turn_timer_ms=turn_timer_ms,
                spectators=spectators,
            )
        )

    def get_match(self, match_id: str) -> pb.MatchSummary:
        return self._run(self.aio.get_match(match_id))

    def list_matches(self, page_size: int = 0, page_token: str = "") -> pb.ListMatchesResponse:
        return self._run(self.aio.list_matches(page_size, page_token))

    def reissue_seat_token(self, match_id: str, seat: int) -> pb.ReissueSeatTokenResponse:
        return self._run(self.aio.reissue_seat_token(match_id, seat))

    def set_spectators(
        self, match_id: str, spectators: pb.Spectators.ValueType
    ) -> pb.SetSpectatorsResponse:
        return self._run(self.aio.set_spectators(match_id, spectators))

    def seat(self, token: str | SeatTokenHolder) -> Seat:
        return Seat(self, self.aio.seat(token))

    def _iterate(self, agen: AsyncGenerator[T, None]) -> Generator[T, None, None]:
        """An async generator of the client's, as an iterator: each item
        fetched on the loop; closing the iterator closes the generator."""

        async def step() -> T | _Done:
            try:
                return await anext(agen)
            except StopAsyncIteration:
                return _DONE

        try:
            while not isinstance(item := self._run(step()), _Done):
                yield item
        finally:
            self._run(agen.aclose())

    # -- the lobby (the player credential) ---------------------------------------------
    @property
    def credential(self) -> str | None:
        """The player credential of the lobby's calls; assign a fresh one when
        it expires."""
        return self.aio.credential

    @credential.setter
    def credential(self, value: str | None) -> None:
        self.aio.credential = value

    def open_table(
        self,
        request: lpb.OpenTableRequest | None = None,
        *,
        ruleset: pb.Ruleset | None = None,
        bot_seats: Iterable[int] = (),
        bot_level: pb.BotLevel.ValueType = pb.BOT_LEVEL_UNSPECIFIED,
        seat: int | None = None,
        turn_timer_ms: int = 0,
        visibility: lpb.TableVisibility.ValueType = lpb.TABLE_VISIBILITY_UNSPECIFIED,
        unattended: lpb.Unattended.ValueType = lpb.UNATTENDED_UNSPECIFIED,
        wait_seconds: int = 0,
        spectators: pb.Spectators.ValueType = pb.SPECTATORS_UNSPECIFIED,
        rated: bool = False,
    ) -> lpb.OpenTableResponse:
        return self._run(
            self.aio.open_table(
                request,
                ruleset=ruleset,
                bot_seats=bot_seats,
                bot_level=bot_level,
                seat=seat,
                turn_timer_ms=turn_timer_ms,
                visibility=visibility,
                unattended=unattended,
                wait_seconds=wait_seconds,
                spectators=spectators,
                rated=rated,
            )
        )

    def join_table(
        self, table_id: str = "", *, invite_code: str = "", seat: int | None = None
    ) -> lpb.JoinTableResponse:
        return self._run(self.aio.join_table(table_id, invite_code=invite_code, seat=seat))

    def leave_table(self, table_id: str) -> lpb.Table:
        return self._run(self.aio.leave_table(table_id))

    def start_table(self, table_id: str) -> lpb.Table:
        return self._run(self.aio.start_table(table_id))

    def get_table(
        self,
        table_id: str = "",
        *,
        invite_code: str = "",
        after_version: int = 0,
        wait_ms: int = 0,
    ) -> lpb.Table:
        return self._run(
            self.aio.get_table(
                table_id, invite_code=invite_code, after_version=after_version, wait_ms=wait_ms
            )
        )

    def watch_table(self, table_id: str) -> Generator[lpb.Table, None, None]:
        return self._iterate(self.aio.watch_table(table_id))

    def wait_for_start(
        self,
        table_id: str,
        *,
        after_version: int = 0,
        watch: bool = False,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
        timeout: float | None = None,
    ) -> lpb.Table:
        return self._run(
            self.aio.wait_for_start(
                table_id,
                after_version=after_version,
                watch=watch,
                wait_ms=wait_ms,
                timeout=timeout,
            )
        )

    def list_tables(
        self, ruleset: pb.Ruleset | None = None, *, page_size: int = 0, page_token: str = ""
    ) -> lpb.ListTablesResponse:
        return self._run(self.aio.list_tables(ruleset, page_size=page_size, page_token=page_token))

    def tables(
        self, ruleset: pb.Ruleset | None = None, *, page_size: int = 0
    ) -> Generator[lpb.Table, None, None]:
        return self._iterate(self.aio.tables(ruleset, page_size=page_size))

    def lobby_snapshot(
        self, ruleset: pb.Ruleset | None = None, *, page_size: int = 0
    ) -> tuple[list[lpb.Table], int]:
        return self._run(self.aio.lobby_snapshot(ruleset, page_size=page_size))

    def watch_lobby(
        self, ruleset: pb.Ruleset | None = None, *, after_version: int = 0
    ) -> Generator[lpb.WatchLobbyResponse, None, None]:
        return self._iterate(self.aio.watch_lobby(ruleset, after_version=after_version))

    def poll_lobby(
        self,
        ruleset: pb.Ruleset | None = None,
        *,
        after_version: int = 0,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
    ) -> lpb.WatchLobbyResponse:
        return self._run(self.aio.poll_lobby(ruleset, after_version=after_version, wait_ms=wait_ms))

    def follow_lobby(
        self,
        ruleset: pb.Ruleset | None = None,
        *,
        poll: bool = False,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
    ) -> Generator[list[lpb.Table], None, None]:
        return self._iterate(self.aio.follow_lobby(ruleset, poll=poll, wait_ms=wait_ms))

    def quick_play(
        self,
        ruleset: pb.Ruleset | None = None,
        *,
        partner_player_id: str = "",
        rated: bool = False,
        request_id: str | None = None,
    ) -> lpb.Ticket:
        return self._run(
            self.aio.quick_play(
                ruleset, partner_player_id=partner_player_id, rated=rated, request_id=request_id
            )
        )

    def get_ticket(
        self, ticket_id: str = "", *, after_version: int = 0, wait_ms: int = 0
    ) -> lpb.Ticket:
        return self._run(
            self.aio.get_ticket(ticket_id, after_version=after_version, wait_ms=wait_ms)
        )

    def watch_ticket(self, ticket_id: str = "") -> Generator[lpb.Ticket, None, None]:
        return self._iterate(self.aio.watch_ticket(ticket_id))

    def cancel_ticket(self, ticket_id: str = "") -> lpb.Ticket:
        return self._run(self.aio.cancel_ticket(ticket_id))

    def wait_for_placement(
        self,
        ticket: lpb.Ticket | str = "",
        *,
        watch: bool = False,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
        timeout: float | None = None,
    ) -> lpb.Placement:
        return self._run(
            self.aio.wait_for_placement(ticket, watch=watch, wait_ms=wait_ms, timeout=timeout)
        )

    # -- rated play ----------------------------------------------------------------------
    def leaderboard(
        self,
        pool: str = "",
        *,
        page_size: int = 0,
        page_token: str = "",
        around_player_id: str = "",
    ) -> lpb.GetLeaderboardResponse:
        return self._run(
            self.aio.leaderboard(
                pool,
                page_size=page_size,
                page_token=page_token,
                around_player_id=around_player_id,
            )
        )

    def leaderboard_pages(
        self,
        pool: str = "",
        *,
        page_size: int = 0,
        page_token: str = "",
        around_player_id: str = "",
        backward: bool = False,
    ) -> Generator[lpb.GetLeaderboardResponse, None, None]:
        return self._iterate(
            self.aio.leaderboard_pages(
                pool,
                page_size=page_size,
                page_token=page_token,
                around_player_id=around_player_id,
                backward=backward,
            )
        )

    def leaderboard_entries(
        self, pool: str = "", *, page_size: int = 0
    ) -> Generator[lpb.LeaderboardEntry, None, None]:
        return self._iterate(self.aio.leaderboard_entries(pool, page_size=page_size))

    def profile(self, player_id: str = "") -> lpb.PlayerProfile:
        return self._run(self.aio.profile(player_id))


class Seat:
    """A synchronous ``spades_client.Seat``."""

    def __init__(self, client: Client, seat: _client.Seat) -> None:
        self._client = client
        self.aio = seat
        self.match_id = seat.match_id

    def claim(self) -> pb.ClaimSeatResponse:
        return self._client._run(self.aio.claim())

    def leave(self) -> int:
        return self._client._run(self.aio.leave())

    def view(self) -> pb.SeatView:
        return self._client._run(self.aio.view())

    def legal_actions(self) -> list[pb.Action]:
        return self._client._run(self.aio.legal_actions())

    def submit(
        self, action: pb.Action, *, action_id: str | None = None, expected_seq: int | None = None
    ) -> pb.SubmitActionResponse:
        return self._client._run(
            self.aio.submit(action, action_id=action_id, expected_seq=expected_seq)
        )

    def chat(self, text: str) -> int:
        return self._client._run(self.aio.chat(text))

    def rematch(
        self, *, decline: bool = False, after_version: int = 0, wait_ms: int = 0
    ) -> lpb.RematchResponse:
        return self._client._run(
            self.aio.rematch(decline=decline, after_version=after_version, wait_ms=wait_ms)
        )

    def wait_for_rematch(
        self, *, wait_ms: int = DEFAULT_POLL_WAIT_MS, timeout: float | None = None
    ) -> lpb.RematchResponse:
        return self._client._run(self.aio.wait_for_rematch(wait_ms=wait_ms, timeout=timeout))

    def session(self, *, after_seq: int = 0, backoff: Backoff | None = None) -> Session:
        """The seat's ``Play`` session, opened (close it, or use ``with``)."""

        async def open_session() -> _session.Session:
            return await self.aio.session(after_seq=after_seq, backoff=backoff).open()

        return Session(self._client, self._client._run(open_session()))


class Session:
    """A synchronous ``spades_client.Session``."""

    def __init__(self, client: Client, session: _session.Session) -> None:
        self._client = client
        self.aio = session

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def last_seq(self) -> int:
        return self.aio.last_seq

    def next_event(self, timeout: float | None = None) -> pb.MatchEvent:
        """The next event; ``TimeoutError`` after ``timeout`` seconds,
        ``SessionClosed`` once the session is closed."""
        return self._client._run(self.aio.next_event(timeout))

    def events(self, timeout: float | None = None) -> Iterator[pb.MatchEvent]:
        """The events until the session closes; ``TimeoutError`` if none comes
        for ``timeout`` seconds."""
        while True:
            try:
                yield self.next_event(timeout)
            except SessionClosed:
                return

    def act(
        self,
        action: pb.Action,
        *,
        action_id: str | None = None,
        expected_seq: int | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> pb.ActionResult:
        """Send an action and wait for its result (``SpadesError`` if refused)."""
        return self._client._run(
            self.aio.act(action, action_id=action_id, expected_seq=expected_seq, timeout=timeout)
        )

    def close(self) -> None:
        self._client._run(self.aio.close())

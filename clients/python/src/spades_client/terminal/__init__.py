"""The ``spades`` terminal client: play, watch and replay Spades in a terminal,
alone against bots or with other players through the lobby.

Built on this package's API only (``spades_client``); the screen is drawn with
rich, the ``terminal`` extra: ``pip install 'spades-client[terminal]'``.

    spades play                   a match against three bots on a server of its own
    spades lobby --guest          the tables waiting for players: sit at one, open one
    spades join CODE --guest      an invite-only table, by its invite code
    spades quickplay --guest      a game with other players (bots fill in after a wait)
    spades me --guest             your profile: ratings, rank, record
    spades top --around me        a leaderboard of rated play, a page at a time
    spades watch MATCH --address HOST:PORT
    spades replay game.json       step through a game record (needs spades_engine)

Modules: ``cards`` (card text in and out), ``parse`` (what is typed, mapped
onto the legal actions), ``model`` (the table, from a view or from events),
``render`` (rich renderables), ``play``, ``lobby`` (lobby, join and quickplay:
a player credential, the wait at a table or for a ticket), ``standings``
(``me`` and ``top``: a profile, a leaderboard's pages), ``watch``,
``replay``, ``embedded`` (the server of one's own), ``lines`` (input that does
not block), ``cli``.
"""

from __future__ import annotations

import sys

__all__ = ["entry_point"]


def entry_point() -> None:
    """The ``spades`` console script."""
    try:
        from .cli import main
    except ModuleNotFoundError as e:
        if e.name != "rich":
            raise
        print(
            "spades: the terminal client needs rich: pip install 'spades-client[terminal]'",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(main())

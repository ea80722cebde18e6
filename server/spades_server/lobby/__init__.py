"""Where players meet: tables, the lobby, invitations, quick play and rematch.

Everything here lives in the lobby store (``store/lobby.py``): small JSON
documents changed by compare-and-set commits, so that any replica may serve
any call and two replicas deciding at once cannot both win. The modules:

- ``docs``: the documents (a table, a ticket, a player) and their keys;
- ``rules``: a request's ruleset, resolved once, and the key equal rules share;
- ``seat_keys``: the seat tokens of tables, derived so that they can be
  handed out again without being stored;
- ``invites``: invite codes;
- ``feed``: the store's change feed, dispatched to the streams and long polls
  of this process;
- ``tables``: opening, joining, leaving and starting tables, and the sweeper
  that starts or closes them when they fall due;
- ``matchmaker``: the matchmaker's decision, a pure function;
- ``quickplay``: tickets, and the loop that places them (atomic claims);
- ``rematch``: another match with the same seats;
- ``listing``: the lobby's pages and its changes;
- ``service``: the ``spades.v1.LobbyService`` servicer.
"""

"""The terminal client's pieces alone: card text, the input parser and its
mapping onto legal actions, the table model, and the renderer (read back
through ``Console(record=True).export_text()``)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console, RenderableType

from spades_client import SpadesError, lobby_pb, pb
from spades_client.terminal.cards import card_text, parse_card, parse_suit, sort_hand
from spades_client.terminal.cli import UsageError, _parser, bot_levels, parse_options
from spades_client.terminal.model import SPECTATOR, Table
from spades_client.terminal.parse import (
    Act,
    Invalid,
    Meta,
    accepted_now,
    parse_command,
    resolve,
)
from spades_client.terminal.render import Renderer
from spades_client.terminal.standings import around_id, leaderboard_page, profile_card

S, H, D, C = pb.SUIT_SPADES, pb.SUIT_HEARTS, pb.SUIT_DIAMONDS, pb.SUIT_CLUBS


def card(text: str) -> pb.Card:
    c = parse_card(text)
    assert c is not None, text
    return c


def play(text: str) -> pb.Action:
    return pb.Action(play_card=pb.PlayCardAction(card=card(text)))


def bid(n: int) -> pb.Action:
    a = pb.Action()
    a.bid.tricks = n
    a.bid.SetInParent()
    return a


def text_of(renderable: RenderableType, width: int = 100) -> str:
    console = Console(record=True, width=width, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


# -- cards -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "suit", "rank"),
    [
        ("QS", S, pb.RANK_QUEEN),
        ("qs", S, pb.RANK_QUEEN),
        ("10h", H, pb.RANK_TEN),
        ("TH", H, pb.RANK_TEN),
        ("10 h", H, pb.RANK_TEN),
        ("a♦", D, pb.RANK_ACE),
        ("2c", C, pb.RANK_TWO),
        ("ace of spades", S, pb.RANK_ACE),
        ("king of hearts", H, pb.RANK_KING),
        ("BJ", S, pb.RANK_BIG_JOKER),
        ("lj", S, pb.RANK_LITTLE_JOKER),
    ],
)
def test_cards_are_typed_rank_then_suit(typed: str, suit: int, rank: int) -> None:
    assert parse_card(typed) == pb.Card(suit=suit, rank=rank)  # type: ignore[arg-type]


@pytest.mark.parametrize("typed", ["", "1h", "11s", "S Q", "QX", "joker", "10", "hq"])
def test_what_is_no_card(typed: str) -> None:
    assert parse_card(typed) is None


def test_card_text_and_suits() -> None:
    assert card_text(card("10h")) == "10♥"
    assert card_text(card("10h"), ascii_only=True) == "10H"
    assert card_text(card("bj")) == "BJ"
    assert [parse_suit(x) for x in ("h", "Hearts", "♥", "heart", "x")] == [H, H, H, H, None]


def test_a_hand_sorts_by_suit_trump_first_high_to_low() -> None:
    hand = [card(x) for x in ("2c", "as", "10h", "kc", "3s", "4d", "jh")]
    groups = sort_hand(hand)
    assert [[card_text(c, ascii_only=True) for c in g] for g in groups] == [
        ["AS", "3S"],
        ["JH", "10H"],
        ["KC", "2C"],
        ["4D"],
    ]
    hearts_trump = sort_hand(hand, trump=H)
    assert card_text(hearts_trump[0][0], ascii_only=True) == "JH"
    # Deuces high: the 2 of diamonds is a spade, above the 2 of spades, under the jokers.
    deuces = sort_hand([card(x) for x in ("2d", "2s", "as", "bj", "kd")], deuces_high=True)
    assert [card_text(c, ascii_only=True) for c in deuces[0]] == ["BJ", "2D", "2S", "AS"]


# -- what is typed -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("QS", play("QS")),
        ("play 10h", play("10h")),
        ("bid 4", bid(4)),
        ("4", bid(4)),
        ("  BID   11 ", bid(11)),
        ("nil", bid(0)),
        ("0", bid(0)),
        ("blind nil", pb.Action(blind_nil=pb.BlindNilAction())),
        ("look", pb.Action(look=pb.LookAction())),
        ("trump H", pb.Action(name_trump=pb.NameTrumpAction(suit=H))),
        ("trump spades", pb.Action(name_trump=pb.NameTrumpAction(suit=S))),
        ("pass AS KH", pb.Action(pass_cards=pb.PassCardsAction(cards=[card("AS"), card("KH")]))),
        ("AS, 10 h", pb.Action(pass_cards=pb.PassCardsAction(cards=[card("AS"), card("10h")]))),
    ],
)
def test_actions_as_typed(typed: str, expected: pb.Action) -> None:
    assert parse_command(typed) == Act(expected)


def test_the_draw_and_the_exchange_decision() -> None:
    keep, discard = parse_command("keep"), parse_command("discard")
    assert isinstance(keep, Act) and keep.action.HasField("draw") and keep.action.draw.keep
    assert isinstance(discard, Act) and discard.action.HasField("draw")
    assert not discard.action.draw.keep
    yes, no = parse_command("exchange"), parse_command("no exchange")
    assert isinstance(yes, Act) and yes.action.exchange_decision.exchange
    assert isinstance(no, Act) and no.action.HasField("exchange_decision")
    assert not no.action.exchange_decision.exchange


@pytest.mark.parametrize(
    ("typed", "name"), [("?", "help"), ("help", "help"), ("q", "quit"), ("t", "table")]
)
def test_commands_of_the_terminal(typed: str, name: str) -> None:
    assert parse_command(typed) == Meta(name)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("", "Type an action, or ? for help."),
        ("bid four", "A bid is a number of tricks"),
        ("trump", "Name a suit"),
        ("play 1h", "'1h' is not a card"),
        ("pass AS ZZ", "'zz' is not a card"),
        ("hello there", "'hello there' is not something I understand."),
        ("xyzzy", "'xyzzy' is not something I understand."),
    ],
)
def test_what_is_not_understood_is_said_politely(typed: str, says: str) -> None:
    got = parse_command(typed)
    assert isinstance(got, Invalid) and says in got.message


def test_input_is_mapped_onto_the_legal_actions() -> None:
    legal = [play("10h"), play("ah")]
    # The legal action itself, however it was typed.
    got = resolve(Act(play("AH")), legal)
    assert isinstance(got, Act) and got.action is legal[1]
    # A card on offer but not this one: sent, for the server to say why not.
    assert resolve(Act(play("AD")), legal) == Act(play("AD"))
    # An action of another kind: refused here, with what is accepted now.
    refused = resolve(Act(bid(3)), legal)
    assert isinstance(refused, Invalid)
    assert refused.message == (
        "Now is not the time for a bid. Accepted now: a card to play: 10H, AH. "
        "(? for help, q to quit)"
    )
    assert isinstance(resolve(Act(bid(3)), []), Invalid)


def test_passes_match_in_any_order_and_one_card_passes() -> None:
    pair = pb.Action(pass_cards=pb.PassCardsAction(cards=[card("AS"), card("KH")]))
    typed = pb.Action(pass_cards=pb.PassCardsAction(cards=[card("KH"), card("AS")]))
    got = resolve(Act(typed), [pair])
    assert isinstance(got, Act) and got.action is pair
    one = pb.Action(pass_cards=pb.PassCardsAction(cards=[card("QD")]))
    got = resolve(Act(play("QD")), [one])  # `QD` where a pass of one card is wanted
    assert isinstance(got, Act) and got.action is one


def test_what_is_accepted_now() -> None:
    bids = [bid(n) for n in range(14)]
    assert accepted_now(bids) == (
        "Accepted now: a bid 1-13 (`bid 4` or `4`) or `nil`. (? for help, q to quit)"
    )
    assert "or `nil`" not in accepted_now([bid(n) for n in range(1, 14)])
    suicide = [bid(0), *(bid(n) for n in range(4, 14))]  # nil, or 4 and more
    assert accepted_now(suicide).startswith("Accepted now: a bid 4-13 (`bid 4` or `4`) or `nil`.")
    assert accepted_now([bid(0), bid(2), bid(5)]).startswith("Accepted now: a bid of 2, 5 or")
    blind = [pb.Action(blind_nil=pb.BlindNilAction()), pb.Action(look=pb.LookAction())]
    assert accepted_now(blind) == (
        "Accepted now: `blind nil`; `look` (see your cards). (? for help, q to quit)"
    )
    trump = [pb.Action(name_trump=pb.NameTrumpAction(suit=s)) for s in (C, D, H, S)]
    assert "`trump H` (clubs, diamonds, hearts, spades)" in accepted_now(trump)


# -- the command line --------------------------------------------------------------------


def test_set_options_become_a_ruleset() -> None:
    rules = parse_options(
        ["target_score=200", "jokers=true", "bag_rule=5_for_50", "mercy_score=none"], "german"
    )
    assert rules.preset == "german" and rules.target_score == 200 and rules.jokers
    assert rules.bag_rule == pb.BAG_RULE_FIVE_FOR_50 and rules.no_mercy_score
    for bad, says in [
        ("target_score=lots", "a whole number"),
        ("first_lead=north", "one of left_of_dealer, dealer, two_of_clubs"),
        ("colour=red", "no option 'colour'"),
        ("players", "expected OPTION=VALUE"),
    ]:
        with pytest.raises(UsageError, match=says):
            parse_options([bad], "classic")


def test_bot_levels() -> None:
    assert bot_levels("hard", 3) == [pb.BOT_LEVEL_HARD] * 3
    assert bot_levels("easy, normal,HARD", 3) == [
        pb.BOT_LEVEL_EASY,
        pb.BOT_LEVEL_NORMAL,
        pb.BOT_LEVEL_HARD,
    ]
    with pytest.raises(UsageError, match="levels are random, easy"):
        bot_levels("genius", 3)


# -- the table and its rendering ---------------------------------------------------------


def a_view() -> pb.SeatView:
    """Seat 0 of a classic table in the middle of trick 2: East led hearts."""
    view = pb.SeatView(
        seat=0,
        ruleset=pb.ResolvedRuleset(players=4, partnerships=True, hand_size=13, target_score=500),
        phase=pb.PHASE_PLAYING,
        hand_number=0,
        dealer=3,
        to_act=0,
        scores=[40, -20],
        bags=[3, 1],
        tricks_won=[0, 1, 0, 0],
        hand_sizes=[12, 11, 11, 11],
        face_down=[False] * 4,
        hand=[card(x) for x in ("AS", "3S", "KH", "9H", "2C", "QD", "JD", "5D", "4D", "3D", "7C")],
        hand_visible=True,
        trick=[card("QH"), card("2H"), card("5H")],
        leader=1,
        tricks=[pb.Trick(leader=0, cards=[card(x) for x in ("AC", "KC", "3C", "JC")], winner=1)],
        legal_actions=[play("KH"), play("9H")],
        winner=-1,
        trump=S,
        as_of_seq=40,
    )
    for seat, (b, name, control) in enumerate(
        [
            (3, "Tess", pb.SEAT_CONTROL_HUMAN),
            (4, "Bot 1", pb.SEAT_CONTROL_BOT),
            (0, "Bot 2", pb.SEAT_CONTROL_BOT),
            (2, "Bot 3", pb.SEAT_CONTROL_BOT),
        ]
    ):
        view.bids.add(has_bid=True, tricks=b)
        view.seats.add(seat=seat, name=name, control=control)
    return view


def test_the_table_from_a_view() -> None:
    t = Table.from_view(a_view())
    assert t.viewer == 0 and t.players == 4 and t.partnerships
    assert t.bids == [3, 4, 0, 2] and t.tricks_won == [0, 1, 0, 0]
    assert [s for s, _ in t.trick] == [1, 2, 3]  # in play order from the leader
    assert t.last_trick is not None and t.last_trick.winner == 1
    assert [card_text(c) for c in t.playable_cards()] == ["K♥", "9♥"]


def test_the_table_renders_seats_bids_trick_and_scores() -> None:
    r = Renderer()
    t = Table.from_view(a_view())
    out = text_of(r.table(t))
    assert "Hand 1 · playing · dealer Bot 3 · trump spades ♠ (not broken) · trick 2/13" in out
    lines = out.splitlines()
    tess = next(x for x in lines if "Tess" in x)
    assert tess.split() == ["▶", "Tess", "(North,", "you)", "3", "0", "12"]
    east = next(x for x in lines if "Bot 1" in x)
    assert east.split() == ["Bot", "1", "(East)", "[bot]", "4", "1", "11", "Q♥", "(led)"]
    south = next(x for x in lines if "Bot 2" in x)
    assert south.split()[-4:] == ["nil", "0", "11", "2♥"]
    assert "Score: N/S (you) 40 (3 bags)   E/W -20 (1 bag)   to 500" in out


def test_the_hand_marks_the_playable_cards() -> None:
    out = text_of(Renderer().hand(Table.from_view(a_view())))
    assert out.strip() == "Your hand: A♠ 3♠  [K♥] [9♥]  7♣ 2♣  Q♦ J♦ 5♦ 4♦ 3♦"
    ascii_out = text_of(Renderer(ascii_only=True).hand(Table.from_view(a_view())))
    assert "[KH] [9H]" in ascii_out


def test_event_lines() -> None:
    r = Renderer()
    t = Table.from_view(a_view())
    played = pb.MatchEvent(card_played=pb.CardPlayed(seat=0, card=card("KH")))
    assert text_of(r.event_line(t, played) or "").strip() == "You play K♥."
    t.apply(played)
    assert t.trick == [] or len(t.trick) == 4
    won = pb.MatchEvent(
        trick_won=pb.TrickWon(
            trick_number=2, winner=0, leader=1, cards=[card(x) for x in ("QH", "2H", "5H", "KH")]
        )
    )
    assert text_of(r.event_line(t, won) or "").strip() == (
        "▶ You win trick 2 with K♥ (1 trick this hand)."
    )
    t.apply(won)
    assert t.tricks_won[0] == 1 and t.to_act == 0 and t.trick == []
    blind = pb.MatchEvent(bid_made=pb.BidMade(seat=2, tricks=0, blind=True))
    assert text_of(r.event_line(t, blind) or "").strip() == "Bot 2 bids blind nil."
    named = pb.MatchEvent(trump_named=pb.TrumpNamed(seat=1, suit=H))
    assert "Bot 1 names hearts ♥ trump" in text_of(r.event_line(t, named) or "")


def test_a_spectator_is_shown_no_hand() -> None:
    t = Table(viewer=SPECTATOR)
    shown = pb.MatchEvent(hand_shown=pb.HandShown(seat=2, cards=[card("AS")]))
    assert Renderer().event_line(t, shown) is None
    assert "not known" in text_of(Renderer().hand(t, 2))


def test_the_hand_result_table() -> None:
    t = Table.from_view(a_view())
    scored = pb.HandScored(
        hand_number=0,
        bids=[3, 4, 0, 2],
        blind=[False, False, False, False],
        tricks=[4, 5, 1, 3],
        sides=[
            pb.SideScore(side=0, contract=3, tricks=5, contract_points=32, nil_points=-100,
                         bags_taken=2, hand_points=-68, score=-28, bags=5),
            pb.SideScore(side=1, contract=6, tricks=8, contract_points=62, bags_taken=2,
                         hand_points=62, score=42, bags=3),
        ],
    )  # fmt: skip
    out = text_of(Renderer().hand_result(t, scored), width=80)
    assert max(len(line) for line in out.splitlines()) <= 80
    blank, *lines = out.splitlines()
    assert not blank.strip()  # a blank line parts it from the log above
    assert lines[0].strip() == "Hand 1 result"
    assert lines[1].split() == [
        "Side",
        "Bid",
        "(won)",
        "Tricks",
        "Contract",
        "Nil",
        "Bags",
        "Hand",
        "Score",
        "Bags",
        "total",
    ]
    ns = next(i for i, x in enumerate(lines) if x.strip().startswith("N/S"))
    assert lines[ns].split() == ["N/S", "(you)", "You", "3", "(4)", "5/3", "+32", "-100", "2",
                                 "-68", "-28", "5"]  # fmt: skip
    assert lines[ns + 1].split() == ["Bot", "2", "nil", "(1)"]
    ew = lines[ns + 2].split()
    assert ew[:2] == ["E/W", "Bot"] and ew[-6:] == ["+62", "0", "2", "+62", "42", "3"]
    history = text_of(Renderer().score_history(_with_results(t, scored)))
    assert "-68 = -28" in history and "+62 = 42" in history


def _with_results(t: Table, scored: pb.HandScored) -> Table:
    t.apply(pb.MatchEvent(hand_scored=scored))
    assert t.scores == [-28, 42] and t.bags == [5, 3]
    return t


def test_a_refusal_is_one_readable_line() -> None:
    import grpc

    err = SpadesError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "you must follow the suit led",
        reason="MUST_FOLLOW_SUIT",
        metadata={"rule": "a player who holds the suit led must follow it"},
    )
    out = text_of(Renderer().refusal(err), width=200).strip()
    assert out == (
        "Refused: you must follow the suit led. "
        "Rule: a player who holds the suit led must follow it. [MUST_FOLLOW_SUIT]"
    )


def test_events_keep_a_spectators_table() -> None:
    """From nothing but events, as ``spades watch`` has them."""
    t = Table(viewer=SPECTATOR)
    t.apply(pb.MatchEvent(hand_started=pb.HandStarted(hand_number=0, dealer=3, hand_size=13)))
    assert t.to_act == 0 and t.phase == "bidding"
    for seat, b in enumerate([3, 4, 0, 2]):
        t.apply(pb.MatchEvent(bid_made=pb.BidMade(seat=seat, tricks=b)))
    t.apply(pb.MatchEvent(bidding_closed=pb.BiddingClosed(bids=[3, 4, 0, 2], contracts=[3, 6])))
    assert t.partnerships and t.players == 4 and t.phase == "playing"
    t.apply(pb.MatchEvent(card_played=pb.CardPlayed(seat=0, card=card("AS"))))
    assert t.spades_broken and t.leader == 0 and t.to_act == 1 and t.hand_sizes[0] == 12
    # A cutthroat table of three tells itself by its hand size and its contracts.
    t3 = Table(viewer=SPECTATOR)
    t3.apply(pb.MatchEvent(hand_started=pb.HandStarted(hand_number=0, dealer=0, hand_size=18)))
    assert t3.players == 3
    t3.apply(pb.MatchEvent(bidding_closed=pb.BiddingClosed(bids=[1, 2, 3], contracts=[1, 2, 3])))
    assert not t3.partnerships and t3.sides == 3


# -- standings: spades me and spades top ----------------------------------------------------


def _profile() -> lobby_pb.PlayerProfile:
    return lobby_pb.PlayerProfile(
        player_id="p-tess",
        name="Tess",
        ratings=[
            lobby_pb.PlayerRating(
                pool="classic", mu=27.5, sigma=7.25, conservative=5.75, games=4, wins=3,
                losses=1, rank=2,
            ),
            lobby_pb.PlayerRating(pool="polish", mu=25, sigma=8, conservative=1, games=1),
        ],
        with_humans=lobby_pb.PlayerStats(
            matches=4, wins=3, hands=20, contracts=18, contracts_made=15, sets=3,
            contracts_made_share=15 / 18, mean_bid=3.25, mean_tricks=3.5, bags=9,
            bags_per_hand=0.45, nils_bid=2, nils_made=1, blind_nils_bid=1, blind_nils_made=0,
        ),
    )  # fmt: skip


def test_a_profile_shows_ratings_per_pool_and_the_record() -> None:
    out = text_of(profile_card(_profile(), Renderer(), mine=True))
    assert "Tess (player id p-tess, you)" in out
    assert re.search(r"^classic\s+#2\s+5\.75\s+27\.50\s+7\.25\s+4\s+3/1$", out, re.M), out
    assert re.search(r"^polish\s+unranked\s+1\.00\s+25\.00\s+8\.00\s+1\s+0/0$", out, re.M), out
    assert re.search(r"^Matches \(won\)\s+4 \(3\)\s+0 \(0\)$", out, re.M), out
    assert re.search(r"^Contracts made\s+15/18 \(83%\)\s+-$", out, re.M), out
    assert re.search(r"^Bags per hand\s+0\.45 \(9 in all\)\s+-$", out, re.M), out
    assert re.search(r"^Nils made/bid\s+1/2\s+-$", out, re.M), out
    assert re.search(r"^Blind nils made/bid\s+0/1\s+-$", out, re.M), out
    assert "last played" not in out
    ascii_out = text_of(profile_card(_profile(), Renderer(ascii_only=True), mine=False))
    assert (
        re.search(r"Rating\s+mu\s+sigma\s+Games", ascii_out) and "(player id p-tess)" in ascii_out
    )


def test_a_leaderboard_page_marks_you() -> None:
    page = lobby_pb.GetLeaderboardResponse(
        pool="classic",
        total_players=30,
        min_games=3,
        entries=[
            lobby_pb.LeaderboardEntry(
                rank=26 + i,
                player_id=f"p-{i}",
                name=name,
                rating=lobby_pb.PlayerRating(conservative=10 - i, mu=30 - i, sigma=6, games=9),
            )
            for i, name in enumerate(["Ann", "Tess"])
        ],
    )
    out = text_of(leaderboard_page(page, Renderer(), me="p-1"))
    assert "Leaderboard · classic · 26-27 of 30 players (3 rated games or more to be listed)" in out
    assert re.search(r"^\s+26\s+Ann\s+10\.00\s+30\.00\s+6\.00\s+9\s+0/0$", out, re.M), out
    assert re.search(r"^\s+27\s+Tess \(you\)\s+9\.00", out, re.M), out
    empty = text_of(leaderboard_page(lobby_pb.GetLeaderboardResponse(pool="german"), Renderer()))
    assert "Nobody is on the german leaderboard yet." in empty
    assert around_id(None, "p-1") == "" and around_id("Me", "p-1") == "p-1"
    assert around_id(" p-9 ", "p-1") == "p-9"


@pytest.mark.parametrize(
    ("argv", "ascii_only"),
    [
        (["--ascii", "play"], True),
        (["play", "--ascii"], True),
        (["me", "--guest", "--ascii"], True),
        (["play"], False),
        (["watch", "M1"], False),
    ],
)
def test_ascii_goes_before_or_after_the_command(argv: list[str], ascii_only: bool) -> None:
    assert _parser().parse_args(argv).ascii is ascii_only

// A seat's legal actions (SeatView.legal_actions) sorted into what the page offers.
import type { Card, SeatView, Suit } from "@spades/client";
import { cardCode } from "./cards.js";

export interface Legal {
  /** Cards that may be played now, by code. */
  readonly play: ReadonlySet<string>;
  /** Bids that may be made now (0 is nil), low to high. */
  readonly bids: readonly number[];
  readonly blindNil: boolean;
  readonly look: boolean;
  /** The exchange: how many cards to pass (0: not passing now), and which cards may be among them. */
  readonly passCount: number;
  readonly passable: ReadonlySet<string>;
  /** The optional exchange: the decisions open (true: take it, false: decline). */
  readonly decisions: readonly boolean[];
  /** Auction trump: the suits that may be named. */
  readonly trumps: readonly Suit[];
  /** Two players' draw: the choices open (true: keep the top card). */
  readonly draws: readonly boolean[];
  readonly any: boolean;
}

export function legalOf(view: SeatView | undefined): Legal {
  const play = new Set<string>();
  const bids: number[] = [];
  const passable = new Set<string>();
  const decisions: boolean[] = [];
  const trumps: Suit[] = [];
  const draws: boolean[] = [];
  let blindNil = false;
  let look = false;
  let passCount = 0;
  for (const a of view?.legalActions ?? []) {
    const k = a.kind;
    switch (k.case) {
      case "playCard":
        if (k.value.card !== undefined) play.add(cardCode(k.value.card));
        break;
      case "bid":
        bids.push(k.value.tricks);
        break;
      case "blindNil":
        blindNil = true;
        break;
      case "look":
        look = true;
        break;
      case "passCards":
        passCount = k.value.cards.length;
        for (const c of k.value.cards) passable.add(cardCode(c));
        break;
      case "exchangeDecision":
        decisions.push(k.value.exchange);
        break;
      case "nameTrump":
        trumps.push(k.value.suit);
        break;
      case "draw":
        draws.push(k.value.keep);
        break;
      default:
        break;
    }
  }
  bids.sort((a, b) => a - b);
  return {
    play,
    bids,
    blindNil,
    look,
    passCount,
    passable,
    decisions,
    trumps,
    draws,
    any: (view?.legalActions.length ?? 0) > 0,
  };
}

/** The cards of a view's hand that a code names. */
export function cardsByCode(hand: readonly Card[], codes: Iterable<string>): Card[] {
  const wanted = new Set(codes);
  return hand.filter((c) => wanted.has(cardCode(c)));
}

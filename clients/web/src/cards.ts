// Cards as people read them, and as the game record writes them.
import { Rank, Suit, type Card } from "@spades/client";

const SUIT_LETTER: Record<number, string> = { [Suit.CLUBS]: "C", [Suit.DIAMONDS]: "D", [Suit.HEARTS]: "H", [Suit.SPADES]: "S" };
const SUIT_SYMBOL: Record<number, string> = { [Suit.CLUBS]: "♣", [Suit.DIAMONDS]: "♦", [Suit.HEARTS]: "♥", [Suit.SPADES]: "♠" };
const SUIT_NAME: Record<number, string> = { [Suit.CLUBS]: "clubs", [Suit.DIAMONDS]: "diamonds", [Suit.HEARTS]: "hearts", [Suit.SPADES]: "spades" };
const RANK_LETTER = "??23456789TJQKA";
const RANK_LABEL: Record<number, string> = { [Rank.TEN]: "10", [Rank.JACK]: "J", [Rank.QUEEN]: "Q", [Rank.KING]: "K", [Rank.ACE]: "A" };

export const SUITS: readonly Suit[] = [Suit.SPADES, Suit.HEARTS, Suit.CLUBS, Suit.DIAMONDS];

export function isJoker(c: Card): boolean {
  return c.rank === Rank.LITTLE_JOKER || c.rank === Rank.BIG_JOKER;
}

/** The game record's name of a card: `QS`, `TH`, `2C`, `LJ`, `BJ`. */
export function cardCode(c: Card): string {
  if (c.rank === Rank.LITTLE_JOKER) {
    return "LJ";
  }
  if (c.rank === Rank.BIG_JOKER) {
    return "BJ";
  }
  return (RANK_LETTER[c.rank] ?? "?") + (SUIT_LETTER[c.suit] ?? "?");
}

/** The rank as printed on the card's corner: `10`, `Q`, `7`, `★` for a joker. */
export function rankLabel(c: Card): string {
  if (isJoker(c)) {
    return "★";
  }
  return RANK_LABEL[c.rank] ?? String(c.rank);
}

export function suitSymbol(s: Suit): string {
  return SUIT_SYMBOL[s] ?? "?";
}

export function suitName(s: Suit): string {
  return SUIT_NAME[s] ?? "no suit";
}

/** A card for a sentence: `10♥`, `Q♠`, `Big Joker`. */
export function cardText(c: Card): string {
  if (c.rank === Rank.LITTLE_JOKER) {
    return "Little Joker";
  }
  if (c.rank === Rank.BIG_JOKER) {
    return "Big Joker";
  }
  return rankLabel(c) + suitSymbol(c.suit);
}

export function isRed(c: Card): boolean {
  return c.rank === Rank.BIG_JOKER || (!isJoker(c) && (c.suit === Suit.HEARTS || c.suit === Suit.DIAMONDS));
}

export function sameCard(a: Card, b: Card): boolean {
  return a.suit === b.suit && a.rank === b.rank;
}

/**
 * A hand sorted by suit, colours alternating (♠ ♥ ♣ ♦, the trump first when
 * it is not spades), high to low within a suit, the jokers above the spades.
 */
export function sortHand(cards: readonly Card[], trump: Suit = Suit.SPADES): Card[] {
  const order = trump === Suit.SPADES || trump === Suit.UNSPECIFIED ? SUITS : [trump, ...SUITS.filter((s) => s !== trump)];
  const suitIndex = (c: Card): number => order.indexOf(c.suit);
  return [...cards].sort((a, b) => suitIndex(a) - suitIndex(b) || b.rank - a.rank);
}

/** Groups a sorted hand into runs of one suit (for the layout). */
export function bySuit(cards: readonly Card[]): Card[][] {
  const groups: Card[][] = [];
  for (const c of cards) {
    const last = groups.at(-1);
    if (last !== undefined && last[0]!.suit === c.suit) {
      last.push(c);
    } else {
      groups.push([c]);
    }
  }
  return groups;
}

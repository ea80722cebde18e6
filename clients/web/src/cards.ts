// Cards as people read them (in the page's language), and as the game record writes them.
import { create } from "@bufbuild/protobuf";
import { CardSchema, Rank, Suit, type Card } from "@spades/client";
import { t } from "./i18n.js";

const SUIT_LETTER: Record<number, string> = { [Suit.CLUBS]: "C", [Suit.DIAMONDS]: "D", [Suit.HEARTS]: "H", [Suit.SPADES]: "S" };
const SUIT_SYMBOL: Record<number, string> = { [Suit.CLUBS]: "♣", [Suit.DIAMONDS]: "♦", [Suit.HEARTS]: "♥", [Suit.SPADES]: "♠" };
/** The suits' keys in the cards namespace. */
const SUIT_KEY: Record<number, string> = { [Suit.CLUBS]: "clubs", [Suit.DIAMONDS]: "diamonds", [Suit.HEARTS]: "hearts", [Suit.SPADES]: "spades" };
const RANK_KEY: Record<number, string> = { [Rank.JACK]: "jack", [Rank.QUEEN]: "queen", [Rank.KING]: "king", [Rank.ACE]: "ace" };
const RANK_LETTER = "??23456789TJQKA";

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

/** The rank as printed on the card's corner, in the page's language: `10`, `Q` (`D` in Polish), `★` for a joker. */
export function rankLabel(c: Card): string {
  if (isJoker(c)) {
    return "★";
  }
  const key = RANK_KEY[c.rank];
  return key !== undefined ? t(`cards:corner.${key}`) : String(c.rank);
}

export function suitSymbol(s: Suit): string {
  return SUIT_SYMBOL[s] ?? "?";
}

/** The suit's name standing alone: "spades", "piki", "Pik", "пика". */
export function suitName(s: Suit): string {
  const key = SUIT_KEY[s];
  return key !== undefined ? t(`cards:suit.${key}`) : "?";
}

/** The suit's word for a data attribute or a CSS class (never shown). */
export function suitId(s: Suit): string {
  return SUIT_KEY[s] ?? "none";
}

/** A card for a sentence, compact: `10♥`, `D♠` (Polish queen), the joker's name. */
export function cardText(c: Card): string {
  if (c.rank === Rank.LITTLE_JOKER) {
    return t("cards:joker.little");
  }
  if (c.rank === Rank.BIG_JOKER) {
    return t("cards:joker.big");
  }
  return rankLabel(c) + suitSymbol(c.suit);
}

/** A card's spoken name, for screen readers: "queen of spades", "dama pik", "Pik-Dame", "дама пика". */
export function cardName(c: Card): string {
  if (c.rank === Rank.LITTLE_JOKER) {
    return t("cards:joker.little");
  }
  if (c.rank === Rank.BIG_JOKER) {
    return t("cards:joker.big");
  }
  const rank = t(`cards:rank.${RANK_KEY[c.rank] ?? String(c.rank)}`);
  const suit = t(`cards:suitOf.${SUIT_KEY[c.suit] ?? "spades"}`);
  return t("cards:card", { rank, suit });
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

const LETTER_SUIT: Record<string, Suit> = { C: Suit.CLUBS, D: Suit.DIAMONDS, H: Suit.HEARTS, S: Suit.SPADES };

/** The card a record code names (`QS`, `TH`, `BJ`), or undefined. */
export function cardFromCode(code: string): Card | undefined {
  if (code === "LJ") return create(CardSchema, { rank: Rank.LITTLE_JOKER });
  if (code === "BJ") return create(CardSchema, { rank: Rank.BIG_JOKER });
  const rank = RANK_LETTER.indexOf(code[0] ?? "");
  const suit = LETTER_SUIT[code[1] ?? ""];
  return rank >= 2 && suit !== undefined && code.length === 2 ? create(CardSchema, { rank, suit }) : undefined;
}

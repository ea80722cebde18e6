// What a table's variants change about how cards read.
import { BagRule, Rank, Suit, type Card, type SeatView } from "@spades/client";

/** Deuces high (with jokers): the 2 of diamonds and the 2 of spades rank above the ace of spades; jokers top every trump. */
export function topTrump(view: SeatView, c: Card): boolean {
  const r = view.ruleset;
  if (c.rank === Rank.LITTLE_JOKER || c.rank === Rank.BIG_JOKER) {
    return true;
  }
  return r?.deucesHigh === true && c.rank === Rank.TWO && (c.suit === Suit.DIAMONDS || c.suit === Suit.SPADES);
}

/** Bags that cost a penalty (10 or 5), or 0 when bags are off or scored otherwise. */
export function bagLimit(view: SeatView): number {
  switch (view.ruleset?.bagRule) {
    case BagRule.FIVE_FOR_50:
      return 5;
    case BagRule.OFF:
      return 0;
    default:
      return 10;
  }
}

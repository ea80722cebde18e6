// Rules shared by server.mjs and loadgen.mjs: cards, the seeded PRNG, legal
// moves. A card is 1..52: suit = floor((card - 1) / 13) (0 clubs, 1 diamonds,
// 2 hearts, 3 spades), rank = (card - 1) % 13 (0 is the two, 12 the ace).
// Not 0..51: @colyseus/schema 3.0.76 loses a 0 pushed into an ArraySchema in
// the patch that emptied it by splice (the last card played and the next
// hand dealt at once); the client then decodes the next value in its place
// (README.md, "A schema bug").

export const SPADES = 3;
export const suitOf = (card) => Math.floor((card - 1) / 13);
export const rankOf = (card) => (card - 1) % 13;

// mulberry32: a small seeded PRNG, floats in [0, 1).
export function prng(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Four hands of 13 cards, each sorted, from a Fisher-Yates shuffle.
export function deal(random) {
  const deck = Array.from({ length: 52 }, (_, i) => i + 1);
  for (let i = 51; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = deck[i];
    deck[i] = deck[j];
    deck[j] = t;
  }
  return [0, 1, 2, 3].map((s) => deck.slice(s * 13, s * 13 + 13).sort((x, y) => x - y));
}

// Why `card` may not be played from `hand` (an array-like of cards) onto
// `trick` (the cards played so far, leader first), or null when it may.
export function refusal(hand, card, trick, spadesBroken) {
  let holds = false;
  let holdsLed = false;
  let onlySpades = true;
  const led = trick.length > 0 ? suitOf(trick[0]) : -1;
  for (let i = 0; i < hand.length; i++) {
    const c = hand[i];
    if (c === card) holds = true;
    const s = suitOf(c);
    if (s === led) holdsLed = true;
    if (s !== SPADES) onlySpades = false;
  }
  if (!holds) return "card not in hand";
  if (led >= 0) {
    if (holdsLed && suitOf(card) !== led) return "must follow suit";
    return null;
  }
  if (suitOf(card) === SPADES && !spadesBroken && !onlySpades) return "spades not broken";
  return null;
}

// The cards of `hand` that may be played.
export function legalCards(hand, trick, spadesBroken) {
  const out = [];
  for (let i = 0; i < hand.length; i++) {
    if (refusal(hand, hand[i], trick, spadesBroken) === null) out.push(hand[i]);
  }
  return out;
}

// The offset (0..3, from the leader) of the card that wins a full trick.
export function trickWinner(trick) {
  let best = 0;
  for (let i = 1; i < trick.length; i++) {
    const c = trick[i];
    const b = trick[best];
    const cs = suitOf(c);
    const bs = suitOf(b);
    if (cs === bs) {
      if (rankOf(c) > rankOf(b)) best = i;
    } else if (cs === SPADES) {
      best = i;
    }
    // else: neither the best card's suit nor a spade: it loses.
  }
  return best;
}

// Classic scoring of one hand for the side of seats `a` and `a + 2`:
// returns [points, bags] to add. Nil (a bid of 0) scores ±100 for its seat;
// the contract is the partners' combined bid and both seats' tricks count.
export function scoreSide(bids, tricks, a) {
  const b = a + 2;
  let points = 0;
  for (const s of [a, b]) {
    if (bids[s] === 0) points += tricks[s] === 0 ? 100 : -100;
  }
  const bid = bids[a] + bids[b];
  const took = tricks[a] + tricks[b];
  let bags = 0;
  if (bid > 0) {
    if (took >= bid) {
      bags = took - bid;
      points += 10 * bid + bags;
    } else {
      points -= 10 * bid;
    }
  } else {
    bags = took; // both nil: every trick is a bag
    points += bags;
  }
  return [points, bags];
}

// Playing cards drawn by the page itself: inline SVG, no images, no fonts
// beyond the system's (the suits are paths, so they look the same
// everywhere). One viewBox, 60 × 84; the caller sets the size through CSS
// (--card-w, see deck.css) and puts the accessible name on the element
// around the card, so the SVGs are aria-hidden and carry no text alternative.
import { Rank, Suit, type Card } from "@spades/client";
import type { JSX } from "preact";
import { t } from "./i18n.js";

const W = 60;
const H = 84;
const RED = "#c8102e"; // 5.9:1 on white
const BLACK = "#1a1a1a";
const GOLD = "#d4a017";
const GOLD_DARK = "#7a5800";
const FONT = 'system-ui, "DejaVu Sans", "Liberation Sans", Arial, sans-serif';

const isJokerRank = (r: Rank): boolean => r === Rank.LITTLE_JOKER || r === Rank.BIG_JOKER;
const isRedSuit = (s: Suit): boolean => s === Suit.HEARTS || s === Suit.DIAMONDS;

const n = (x: number): string => String(Math.round(x * 100) / 100);

/** A five-pointed star around 0,0, outer radius r. */
function starPath(r: number): string {
  const pts: string[] = [];
  for (let i = 0; i < 10; i++) {
    const radius = i % 2 === 0 ? r : r * 0.4;
    const a = -Math.PI / 2 + (i * Math.PI) / 5;
    pts.push(`${n(radius * Math.cos(a))},${n(radius * Math.sin(a))}`);
  }
  return `M${pts.join("L")}Z`;
}

// The suits, each in a 100 × 100 box centred on 0,0.
const HEART =
  "M0,45C-8,32 -50,8 -50,-18C-50,-36 -37,-46 -24,-46C-12,-46 -3,-38 0,-27C3,-38 12,-46 24,-46C37,-46 50,-36 50,-18C50,8 8,32 0,45Z";
const DIAMOND = "M0,-50Q17,-21 38,0Q17,21 0,50Q-17,21 -38,0Q-17,-21 0,-50Z";
const SPADE =
  "M0,-50C9,-35 48,-14 48,10C48,27 36,35 24,35C15,35 8,31 4,24C5,35 9,42 17,50L-17,50C-9,42 -5,35 -4,24C-8,31 -15,35 -24,35C-36,35 -48,27 -48,10C-48,-14 -9,-35 0,-50Z";
const CLUB_STEM = "M-5,8L5,8C5,30 9,41 17,50L-17,50C-9,41 -5,30 -5,8Z";
const STAR = starPath(50);
const CROWN = "M-45,30L-45,-30L-22,5L0,-42L22,5L45,-30L45,30Z";

function SuitShape({ suit }: { suit: Suit }): JSX.Element {
  switch (suit) {
    case Suit.HEARTS:
      return <path d={HEART} />;
    case Suit.DIAMONDS:
      return <path d={DIAMOND} />;
    case Suit.SPADES:
      return <path d={SPADE} />;
    case Suit.CLUBS:
      return (
        <g>
          <circle cx="0" cy="-25" r="21" />
          <circle cx="-24" cy="11" r="21" />
          <circle cx="24" cy="11" r="21" />
          <path d="M0,-10L-14,14L14,14Z" />
          <path d={CLUB_STEM} />
        </g>
      );
    default:
      return <path d={STAR} />;
  }
}

/** A suit symbol centred on x,y, `size` units across, upside down if `flip`. */
function Pip({ suit, x, y, size, flip }: { suit: Suit; x: number; y: number; size: number; flip?: boolean }): JSX.Element {
  return (
    <g transform={`translate(${n(x)} ${n(y)}) scale(${n(size / 100)})${flip === true ? " rotate(180)" : ""}`}>
      <SuitShape suit={suit} />
    </g>
  );
}

// The pip layouts of 2–10: columns L, C, R and rows from top (16) to bottom (68).
const L = 20;
const C = 30;
const R = 40;
const TOP = 16;
const BOT = 68;
const MID = (TOP + BOT) / 2;
const q = (f: number): number => TOP + (BOT - TOP) * f;
const SIDES6: [number, number][] = [
  [L, TOP], [R, TOP], [L, MID], [R, MID], [L, BOT], [R, BOT],
];
const SIDES8: [number, number][] = [
  [L, TOP], [R, TOP], [L, q(1 / 3)], [R, q(1 / 3)], [L, q(2 / 3)], [R, q(2 / 3)], [L, BOT], [R, BOT],
];
const PIPS: Record<number, [number, number][]> = {
  2: [[C, TOP], [C, BOT]],
  3: [[C, TOP], [C, MID], [C, BOT]],
  4: [[L, TOP], [R, TOP], [L, BOT], [R, BOT]],
  5: [[L, TOP], [R, TOP], [C, MID], [L, BOT], [R, BOT]],
  6: SIDES6,
  7: [...SIDES6, [C, q(1 / 4)]],
  8: [...SIDES6, [C, q(1 / 4)], [C, q(3 / 4)]],
  9: [...SIDES8, [C, MID]],
  10: [...SIDES8, [C, q(1 / 6)], [C, q(5 / 6)]],
};

function cornerLabel(rank: Rank): string {
  switch (rank) {
    case Rank.JACK:
      return t("cards:corner.jack");
    case Rank.QUEEN:
      return t("cards:corner.queen");
    case Rank.KING:
      return t("cards:corner.king");
    case Rank.ACE:
      return t("cards:corner.ace");
    default:
      return String(rank);
  }
}

type Marker = "none" | "trump" | "top";

/** The gold badge under the corner index: a star for a trump, a crown for a top trump. */
function Badge({ marker }: { marker: Marker }): JSX.Element | null {
  if (marker === "none") return null;
  return (
    <g transform="translate(7.5 31)">
      <circle r="5.2" fill={GOLD} stroke={GOLD_DARK} stroke-width="0.8" />
      <path d={marker === "top" ? CROWN : STAR} transform={marker === "top" ? "scale(0.068)" : "scale(0.075) translate(0 4)"} fill={GOLD_DARK} />
    </g>
  );
}

/** The index of the top-left corner; the bottom-right one is this turned 180°. */
function Corner({ card, marker }: { card: Card; marker: Marker }): JSX.Element {
  if (isJokerRank(card.rank)) {
    const word = Array.from(t(card.rank === Rank.BIG_JOKER ? "cards:joker.bigShort" : "cards:joker.littleShort"));
    const step = Math.min(8, 44 / Math.max(1, word.length));
    const size = Math.min(7.5, step * 0.95);
    return (
      <g>
        <path d={STAR} transform="translate(7.5 8) scale(0.1)" />
        <text x="7.5" y="14" font-family={FONT} font-weight="700" font-size={n(size)} text-anchor="middle">
          {word.map((ch, i) => (
            <tspan key={i} x="7.5" dy={n(i === 0 ? size + 1 : step)}>
              {ch}
            </tspan>
          ))}
        </text>
      </g>
    );
  }
  const label = cornerLabel(card.rank);
  const wide = Array.from(label).length > 1;
  return (
    <g>
      <text
        x="7.5"
        y="13"
        font-family={FONT}
        font-weight="700"
        font-size="11.5"
        text-anchor="middle"
        {...(wide ? { textLength: "11", lengthAdjust: "spacingAndGlyphs" } : {})}
      >
        {label}
      </text>
      <Pip suit={card.suit} x={7.5} y={20.5} size={7.5} />
      <Badge marker={marker} />
    </g>
  );
}

function Middle({ card }: { card: Card }): JSX.Element {
  const { suit, rank } = card;
  if (isJokerRank(rank)) {
    return (
      <g>
        <circle cx={C} cy={MID} r="15" fill="none" stroke="currentColor" stroke-width="0.8" />
        <path d={STAR} transform={`translate(${C} ${MID + 1}) scale(0.26)`} />
      </g>
    );
  }
  if (rank === Rank.ACE) {
    return <Pip suit={suit} x={C} y={MID} size={suit === Suit.SPADES ? 34 : 24} />;
  }
  if (rank === Rank.JACK || rank === Rank.QUEEN || rank === Rank.KING) {
    const tint = isRedSuit(suit) ? "#fdeef0" : "#eef1f6";
    return (
      <g>
        <rect x="14" y="9" width="32" height="66" rx="2" fill={tint} stroke="currentColor" stroke-width="0.9" />
        <rect x="16" y="11" width="28" height="62" rx="1" fill="none" stroke="currentColor" stroke-width="0.4" />
        <Pip suit={suit} x={C} y={19} size={9} />
        <Pip suit={suit} x={C} y={65} size={9} flip />
        <text x={C} y={MID + 9} font-family={FONT} font-weight="700" font-size="25" text-anchor="middle">
          {cornerLabel(rank)}
        </text>
      </g>
    );
  }
  const layout = PIPS[rank] ?? [];
  return (
    <g>
      {layout.map(([x, y], i) => (
        <Pip key={i} suit={suit} x={x} y={y} size={9} flip={y > MID} />
      ))}
    </g>
  );
}

function cls(base: string, extra: (string | false | undefined)[]): string {
  return [base, ...extra].filter((c): c is string => typeof c === "string" && c !== "").join(" ");
}

/**
 * A card's face. `trump` (when not spades) marks that suit's cards with a gold
 * star badge; `topTrump` (deuces high: 2♦, 2♠, the jokers) adds a gold frame
 * and a crown badge.
 */
export function CardFace(props: { card: Card; trump?: Suit; topTrump?: boolean; className?: string }): JSX.Element {
  const { card, trump, topTrump } = props;
  const joker = isJokerRank(card.rank);
  const red = joker ? card.rank === Rank.BIG_JOKER : isRedSuit(card.suit);
  const namedTrump =
    !joker && trump !== undefined && trump !== Suit.SPADES && trump !== Suit.UNSPECIFIED && card.suit === trump;
  const marker: Marker = topTrump === true ? "top" : namedTrump ? "trump" : "none";
  const colour = red ? RED : BLACK;
  return (
    <svg
      class={cls("cardface", [red ? "cardface--red" : "cardface--black", marker === "trump" && "cardface--trump", marker === "top" && "cardface--toptrump", props.className])}
      viewBox={`0 0 ${W} ${H}`}
      aria-hidden="true"
      focusable="false"
    >
      <rect x="0.5" y="0.5" width={W - 1} height={H - 1} rx="4" fill="#fff" stroke="#8a8a8a" stroke-width="1" />
      {marker === "top" && (
        <rect x="1.7" y="1.7" width={W - 3.4} height={H - 3.4} rx="3" fill="none" stroke={GOLD} stroke-width="1.4" />
      )}
      <g fill={colour} style={{ color: colour }}>
        <Corner card={card} marker={marker} />
        <g transform={`rotate(180 ${W / 2} ${H / 2})`}>
          <Corner card={card} marker={marker} />
        </g>
        <Middle card={card} />
      </g>
    </svg>
  );
}

// The back's lattice: two sets of diagonals inside the inner panel, computed
// once (no <pattern>, so no ids to clash between the cards on the page).
const BX0 = 5;
const BY0 = 5;
const BX1 = W - 5;
const BY1 = H - 5;
const LATTICE = ((): string => {
  const step = 5;
  const [x0, y0, x1, y1] = [BX0 + 1, BY0 + 1, BX1 - 1, BY1 - 1]; // inside the panel's white rule
  const segs: string[] = [];
  // Lines y = x + c (down-right) and y = -x + c (down-left), clipped to the panel.
  for (let c = y0 - x1 + step / 2; c <= y1 - x0; c += step) {
    const xa = Math.max(x0, y0 - c);
    const xb = Math.min(x1, y1 - c);
    if (xb > xa) segs.push(`M${n(xa)},${n(xa + c)}L${n(xb)},${n(xb + c)}`);
  }
  for (let c = y0 + x0 + step / 2; c <= y1 + x1; c += step) {
    const xa = Math.max(x0, c - y1);
    const xb = Math.min(x1, c - y0);
    if (xb > xa) segs.push(`M${n(xa)},${n(c - xa)}L${n(xb)},${n(c - xb)}`);
  }
  return segs.join("");
})();

/** The back of a card: a dark-blue lattice in a white border. */
export function CardBack(props: { className?: string }): JSX.Element {
  return (
    <svg class={cls("cardback", [props.className])} viewBox={`0 0 ${W} ${H}`} aria-hidden="true" focusable="false">
      <rect x="0.5" y="0.5" width={W - 1} height={H - 1} rx="4" fill="#fff" stroke="#8a8a8a" stroke-width="1" />
      <rect x={BX0} y={BY0} width={BX1 - BX0} height={BY1 - BY0} rx="2" fill="#1c3f7a" />
      <path d={LATTICE} stroke="#6f8fc7" stroke-width="0.7" fill="none" />
      <rect x={BX0 + 0.5} y={BY0 + 0.5} width={BX1 - BX0 - 1} height={BY1 - BY0 - 1} rx="1.8" fill="none" stroke="#e8eef9" stroke-width="1" />
      <ellipse cx={W / 2} cy={H / 2} rx="11" ry="14" fill="#1c3f7a" stroke="#e8eef9" stroke-width="1" />
      <g fill="#e8eef9">
        <Pip suit={Suit.SPADES} x={W / 2} y={H / 2} size={12} />
      </g>
    </svg>
  );
}

// The rules of a table, in the page's language: each setting as the server
// resolved it (SeatView.ruleset), so a player can check what a bag or a blind
// nil does here without leaving; and a preset's rules in sentences, for the
// forms that choose one.
import { BagRule, FirstLead, Scoring, SetPenalty, SpadesBroken, type ResolvedRuleset } from "@spades/client";
import { has, t } from "../i18n.js";

function enumValue(field: string, names: Record<number, string>, value: number): string | undefined {
  const name = names[value];
  return name !== undefined && name !== "UNSPECIFIED" ? t(`rules:variant.${field}.values.${name}`) : undefined;
}

/** Each setting of the table as [name, value], the ones that are on or chosen. */
export function settings(r: ResolvedRuleset): [string, string][] {
  const name = (f: string): string => t(`rules:variant.${f}.name`);
  const rows: [string, string | undefined][] = [
    [name("players"), t("rules:variant.players.count", { count: r.players })],
    [name("target_score"), String(r.targetScore)],
    [name("mercy_score"), r.hasMercyScore ? t("rules:variant.mercy_score.value", { score: r.mercyScore }) : t("rules:variant.mercy_score.off")],
    [name("bag_rule"), enumValue("bag_rule", BagRule, r.bagRule)],
    [name("set_penalty"), enumValue("set_penalty", SetPenalty, r.setPenalty)],
    [name("scoring"), enumValue("scoring", Scoring, r.scoring)],
    [name("first_lead"), enumValue("first_lead", FirstLead, r.firstLead)],
    [name("spades_broken"), enumValue("spades_broken", SpadesBroken, r.spadesBroken)],
  ];
  const flags: [string, boolean | undefined][] = [
    ["nil_allowed", r.nilAllowed],
    ["blind_nil", r.blindNil],
    ["blind_nil_exchange_optional", r.blindNil === true && r.blindNilExchangeOptional],
    ["thirteen_bid", r.thirteenBid],
    ["jokers", r.jokers],
    ["deuces_high", r.deucesHigh],
    ["suicide", r.suicide],
    ["auction_trump", r.auctionTrump],
  ];
  if (r.blindNil) {
    rows.push([name("blind_nil_deficit"), r.blindNilDeficit > 0 ? t("rules:variant.blind_nil_deficit.value", { score: r.blindNilDeficit }) : t("rules:variant.blind_nil_deficit.any")]);
    rows.push([
      name("blind_nil_exchange"),
      r.blindNilExchange > 0 ? t("rules:variant.blind_nil_exchange.cards", { count: r.blindNilExchange }) : t("rules:variant.blind_nil_exchange.none"),
    ]);
  }
  const on = flags.filter(([, v]) => v === true).map(([f]): [string, string] => [name(f), t(`rules:variant.${f}.about`)]);
  return [...rows.filter((x): x is [string, string] => x[1] !== undefined), ...on];
}

/** The table's rules, each setting as the server resolved it. */
export function RulesPanel(props: { ruleset: ResolvedRuleset | undefined }) {
  const r = props.ruleset;
  if (r === undefined) {
    return null;
  }
  return (
    <section class="rules-panel" data-rules>
      <details>
        <summary>
          <h2>{t("rulesPanel.title")}</h2>
        </summary>
        <dl>
          {settings(r).map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      </details>
    </section>
  );
}

/** A preset's rules in sentences (for the forms that choose one). */
export function PresetRules(props: { preset: string }) {
  const preset = has(`rules:preset.${props.preset}.name`) ? props.preset : "classic";
  const sentences = t(`rules:preset.${preset}.rules`, { returnObjects: true }) as unknown;
  return (
    <details class="preset-rules" data-preset-rules={preset}>
      <summary>{t("rulesPanel.presetRules", { preset: t(`rules:preset.${preset}.name`) })}</summary>
      {Array.isArray(sentences) ? (
        <ul>
          {sentences.map((s, i) => (
            <li key={i}>{String(s)}</li>
          ))}
        </ul>
      ) : null}
    </details>
  );
}

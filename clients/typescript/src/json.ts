// Canonical JSON, the bytes every client of the conformance suite writes:
// proto3 JSON (defaults left out, enums by name, 64-bit integers as strings),
// object keys sorted at every level, no whitespace.
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { ActionSchema, MatchEventSchema, type Action, type MatchEvent } from "./gen/spades/v1/spades_pb.js";

/** `value` as JSON with the keys of every object sorted by code point and no whitespace. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(sortKeys);
  }
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    // Plain `<` compares UTF-16 code units; for keys that are proto field names (ASCII) that is code point order.
    for (const key of Object.keys(value).sort(byCodePoint)) {
      out[key] = sortKeys((value as Record<string, unknown>)[key]);
    }
    return out;
  }
  return value;
}

function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i] as string).codePointAt(0)! - (y[i] as string).codePointAt(0)!;
    if (d !== 0) {
      return d;
    }
  }
  return x.length - y.length;
}

/** A MatchEvent as proto3 JSON without `timeMs` (which differs every run). */
export function eventJson(event: MatchEvent): JsonValue {
  const json = toJson(MatchEventSchema, event) as { [k: string]: JsonValue };
  delete json["timeMs"];
  return json;
}

/** An Action as proto3 JSON. */
export function actionJson(action: Action): JsonValue {
  return toJson(ActionSchema, action);
}

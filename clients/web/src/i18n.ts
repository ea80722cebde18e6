// Every string the page shows goes through i18next: English, Polish, German
// and Bulgarian, one JSON file per namespace and language under locales/.
// English is bundled; the others load when chosen (a few kB each), so the
// first paint costs one language. The language comes from ?lang=, then the
// player's last choice (localStorage), then the browser's languages.
//
// Strict mode (?i18n=strict, used by the tests) turns the English fallback
// off and records each key a language lacks in window.spadesMissingKeys, so a
// missing translation fails a test instead of quietly showing English.
import i18next, { type TOptions } from "i18next";
import { useEffect, useState } from "preact/hooks";
import enCards from "./locales/en/cards.json";
import enLobby from "./locales/en/lobby.json";
import enReasons from "./locales/en/reasons.json";
import enRules from "./locales/en/rules.json";
import enUi from "./locales/en/ui.json";

export const LANGUAGES = [
  { code: "en", name: "English" },
  { code: "pl", name: "Polski" },
  { code: "de", name: "Deutsch" },
  { code: "bg", name: "Български" },
] as const;

export type Language = (typeof LANGUAGES)[number]["code"];

export const NAMESPACES = ["ui", "lobby", "reasons", "rules", "cards"] as const;

const LANG_KEY = "spades.lang";

const others = import.meta.glob<{ default: Record<string, unknown> }>(["./locales/*/*.json", "!./locales/en/*.json"]);

declare global {
  interface Window {
    /** Keys the current language lacks, as "lng:ns:key" (strict mode only). */
    spadesMissingKeys?: string[];
  }
}

function isLanguage(s: string | null | undefined): s is Language {
  return LANGUAGES.some((l) => l.code === s);
}

/** ?lang=, the saved choice, then the first of the browser's languages we speak. */
export function detectLanguage(search: string, saved: string | null, browser: readonly string[]): Language {
  const asked = new URLSearchParams(search).get("lang")?.toLowerCase();
  if (isLanguage(asked)) return asked;
  if (isLanguage(saved)) return saved;
  for (const tag of browser) {
    const base = tag.toLowerCase().split("-")[0];
    if (isLanguage(base)) return base;
  }
  return "en";
}

function savedLanguage(): string | null {
  try {
    return window.localStorage.getItem(LANG_KEY);
  } catch {
    return null;
  }
}

async function load(lng: Language): Promise<void> {
  if (lng === "en" || i18next.hasResourceBundle(lng, "ui")) return;
  await Promise.all(
    NAMESPACES.map(async (ns) => {
      const loader = others[`./locales/${lng}/${ns}.json`];
      if (loader === undefined) return;
      const mod = await loader();
      i18next.addResourceBundle(lng, ns, mod.default, true, true);
    }),
  );
}

/** Starts i18next in the detected language; the page renders after it. */
export async function initI18n(): Promise<void> {
  const strict = new URLSearchParams(window.location.search).get("i18n") === "strict";
  const lng = detectLanguage(window.location.search, savedLanguage(), navigator.languages ?? [navigator.language]);
  if (strict) window.spadesMissingKeys = [];
  await i18next.init({
    lng,
    fallbackLng: strict ? false : "en",
    supportedLngs: LANGUAGES.map((l) => l.code),
    ns: [...NAMESPACES],
    defaultNS: "ui",
    resources: { en: { ui: enUi, lobby: enLobby, reasons: enReasons, rules: enRules, cards: enCards } },
    interpolation: { escapeValue: false }, // Preact escapes what it renders
    returnNull: false,
    saveMissing: strict,
    missingKeyHandler: (lngs, ns, key) => {
      const entry = `${lngs.join(",")}:${ns}:${key}`;
      window.spadesMissingKeys?.push(entry);
      console.warn(`spades: no translation for ${entry}`);
    },
  });
  await load(lng);
  document.documentElement.lang = lng;
}

/** Switches the page's language and remembers the choice. */
export async function setLanguage(lng: Language): Promise<void> {
  await load(lng);
  await i18next.changeLanguage(lng);
  document.documentElement.lang = lng;
  try {
    window.localStorage.setItem(LANG_KEY, lng);
  } catch {
    // storage disabled: the choice lasts as long as the page
  }
}

export function language(): Language {
  const l = i18next.language;
  return isLanguage(l) ? l : "en";
}

/** Translates a key ("ns:key" or a ui key). */
export function t(key: string, options?: TOptions): string {
  return i18next.t(key, options ?? {}) as string;
}

/** Whether a key exists in the current language (or its fallback). */
export function has(key: string): boolean {
  return i18next.exists(key);
}

/** Re-renders the calling component when the language changes; returns the language. */
export function useLanguage(): Language {
  const [lng, setLng] = useState(language());
  useEffect(() => {
    const on = (l: string): void => setLng(isLanguage(l) ? l : "en");
    i18next.on("languageChanged", on);
    return () => i18next.off("languageChanged", on);
  }, []);
  return lng;
}

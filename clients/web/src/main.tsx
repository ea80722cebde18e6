// The entry point: the app inside its error boundary, and a last line of
// defence for failures outside Preact's drawing (a rejected promise nobody
// awaited, a script error): a banner with the message, never a blank page.
import { render } from "preact";
import { App, ErrorBoundary } from "./app.js";
import { makeClient } from "./api.js";
import { problemOf } from "./errors.js";
import { initI18n } from "./i18n.js";
import { saveTransport, transportFromUrl } from "./storage.js";
import "./deck.css";
import "./styles.css";

function banner(e: unknown): void {
  const p = problemOf(e);
  let box = document.getElementById("fatal");
  if (box === null) {
    box = document.createElement("div");
    box.id = "fatal";
    box.setAttribute("role", "alert");
    document.body.prepend(box);
  }
  box.textContent = `${p.title}: ${p.text}${p.reason ? ` (${p.reason})` : ""}`;
}

window.addEventListener("error", (e) => banner(e.error ?? e.message));
window.addEventListener("unhandledrejection", (e) => banner(e.reason));

// ?transport=poll (or stream) in the address chooses how events come, as the
// lobby does, and is kept for the next visits.
const chosen = transportFromUrl(window.location.search);
if (chosen !== undefined) {
  saveTransport(chosen);
}

async function boot(): Promise<void> {
  const root = document.getElementById("app");
  if (root === null) {
    banner(new Error("the page has no #app element"));
    return;
  }
  try {
    await initI18n();
    root.textContent = "";
    render(
      <ErrorBoundary>
        <App client={makeClient()} />
      </ErrorBoundary>,
      root,
    );
  } catch (e) {
    banner(e);
  }
}

void boot();

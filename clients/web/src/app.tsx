// The page: the route in the URL's fragment (#/, #/play/<match>, #/watch/<match>,
// #/table/<table>, #/join/<code>, #/leaderboard[/<pool>], #/profile[/<player>],
// #/rematch/<match>), and a boundary that turns any failure into a message,
// never a blank page.
import { Component, type ComponentChildren } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { SpadesClient } from "@spades/client";
import { SeatController, WatchController, type TableState } from "./controllers.js";
import { problemOf, type Problem } from "./errors.js";
import { t, useLanguage } from "./i18n.js";
import { Lobby } from "./lobby/home.js";
import { Leaderboard } from "./lobby/leaderboard.js";
import { Profile } from "./lobby/profile.js";
import { RematchPage } from "./lobby/rematch.js";
import { JoinPage, WaitingRoom } from "./lobby/waiting.js";
import { setSharedClient } from "./player.js";
import { forgetSeat, loadSeat, saveSeat } from "./storage.js";
import { ProblemBox, Table, shortCode } from "./table.js";

export type Route =
  | { page: "lobby" }
  | { page: "play"; matchId: string }
  | { page: "watch"; matchId: string }
  | { page: "table"; tableId: string }
  | { page: "join"; code: string }
  | { page: "rematch"; matchId: string }
  | { page: "leaderboard"; pool: string }
  | { page: "profile"; playerId: string };

export function parseRoute(hash: string): Route {
  const m = /^#\/(play|watch|table|join|rematch|leaderboard|profile)(?:\/([^/?#]*))?\/?$/.exec(hash);
  if (m === null) {
    return { page: "lobby" };
  }
  let arg: string;
  try {
    arg = decodeURIComponent(m[2] ?? "");
  } catch {
    return { page: "lobby" };
  }
  switch (m[1]) {
    case "leaderboard":
      return { page: "leaderboard", pool: arg };
    case "profile":
      return { page: "profile", playerId: arg };
  }
  if (arg === "") {
    return { page: "lobby" };
  }
  switch (m[1]) {
    case "table":
      return { page: "table", tableId: arg };
    case "join":
      return { page: "join", code: arg };
    default:
      return { page: m[1] as "play" | "watch" | "rematch", matchId: arg };
  }
}

function useRoute(): Route {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const on = (): void => setHash(window.location.hash);
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return parseRoute(hash);
}

function go(hash: string): void {
  window.location.hash = hash;
}

function useController<C extends SeatController | WatchController>(make: () => C, key: string): [C, TableState] {
  const controller = useMemo(make, [key]);
  const [state, setState] = useState(controller.state);
  useEffect(() => {
    setState(controller.state);
    const off = controller.subscribe(() => setState(controller.state));
    void controller.start();
    return () => {
      off();
      controller.stop();
    };
  }, [controller]);
  return [controller, state];
}

function PlayPage(props: { client: SpadesClient; matchId: string }) {
  const saved = loadSeat(props.matchId);
  if (saved === undefined) {
    return (
      <main class="page">
        <ProblemBox
          problem={{
            title: t("app.noSeatTitle"),
            text: t("app.noSeatText", { match: shortCode(props.matchId) }),
            reason: "",
            code: "",
            rule: undefined,
            transient: false,
          }}
        />
        <p>
          <a href={`#/watch/${encodeURIComponent(props.matchId)}`}>{t("app.watchThis")}</a> · <a href="#/">{t("app.toLobby")}</a>
        </p>
      </main>
    );
  }
  return <Seated client={props.client} matchId={props.matchId} />;
}

function Seated(props: { client: SpadesClient; matchId: string }) {
  const [controller, state] = useController(() => {
    const saved = loadSeat(props.matchId)!;
    return new SeatController(props.client.seat(saved.token), saved);
  }, `play:${props.matchId}`);
  return (
    <Table
      state={state}
      matchId={props.matchId}
      spectator={false}
      actions={{
        act: (action, key) => void controller.act(action, key),
        dismissNotice: () => controller.dismissNotice(),
        dismissScored: () => controller.dismissScored(),
        reconnect: () => (state.view === undefined ? void controller.start() : controller.listen()),
        leave: () => {
          void controller.leave().then(() => {
            forgetSeat();
            go("#/");
          });
        },
        newMatch: () => {
          controller.stop();
          forgetSeat();
          go("#/");
        },
        // A practice match against bots has no table to play again: New match.
        ...(loadSeat(props.matchId)?.lobby === true
          ? {
              rematch: () => {
                controller.stop();
                go(`#/rematch/${encodeURIComponent(props.matchId)}`);
              },
            }
          : {}),
      }}
    />
  );
}

function WatchPage(props: { client: SpadesClient; matchId: string }) {
  const [controller, state] = useController(() => new WatchController(props.client, props.matchId), `watch:${props.matchId}`);
  return (
    <Table
      state={state}
      matchId={props.matchId}
      spectator={true}
      actions={{
        dismissNotice: () => controller.dismissNotice(),
        dismissScored: () => controller.dismissScored(),
        reconnect: () => controller.listen(),
        leave: () => go("#/"),
        newMatch: () => go("#/"),
      }}
    />
  );
}

export function App(props: { client: SpadesClient }) {
  setSharedClient(props.client);
  useLanguage();
  const route = useRoute();
  switch (route.page) {
    case "play":
      return <PlayPage client={props.client} matchId={route.matchId} key={`play:${route.matchId}`} />;
    case "watch":
      return <WatchPage client={props.client} matchId={route.matchId} key={`watch:${route.matchId}`} />;
    case "table":
      return <WaitingRoom tableId={route.tableId} key={`table:${route.tableId}`} />;
    case "join":
      return <JoinPage code={route.code} key={`join:${route.code}`} />;
    case "rematch":
      return <RematchPage matchId={route.matchId} key={`rematch:${route.matchId}`} />;
    case "leaderboard":
      return <Leaderboard pool={route.pool} key={`leaderboard:${route.pool}`} />;
    case "profile":
      return <Profile playerId={route.playerId} key={`profile:${route.playerId}`} />;
    default:
      return (
        <Lobby
          onSeat={(matchId, seat, token) => {
            saveSeat({ matchId, seat, token, lastSeq: "0", log: [] });
            go(`#/play/${encodeURIComponent(matchId)}`);
          }}
        />
      );
  }
}

/** Catches what a component throws while drawing: the page shows it and a way on. */
export class ErrorBoundary extends Component<{ children: ComponentChildren }, { problem: Problem | undefined }> {
  override state = { problem: undefined as Problem | undefined };

  static override getDerivedStateFromError(error: unknown): { problem: Problem } {
    return { problem: problemOf(error) };
  }

  override componentDidCatch(error: unknown): void {
    console.error("the page failed", error);
  }

  override render() {
    const p = this.state.problem;
    if (p === undefined) {
      return this.props.children;
    }
    return (
      <main class="page crashed" data-crashed>
        <h1>♠ Spades</h1>
        <ProblemBox problem={{ ...p, title: t("problem.title.unexpected") }} />
        <p>
          <button type="button" onClick={() => window.location.reload()}>
            {t("app.reload")}
          </button>{" "}
          <button
            type="button"
            onClick={() => {
              this.setState({ problem: undefined });
              go("#/");
            }}
          >
            {t("header.lobby")}
          </button>
        </p>
      </main>
    );
  }
}

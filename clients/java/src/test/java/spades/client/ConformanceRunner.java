package spades.client;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import spades.v1.Lobby.OpenTableRequest;
import spades.v1.Lobby.OpenTableResponse;
import spades.v1.Lobby.Placement;
import spades.v1.Lobby.Table;
import spades.v1.Lobby.TableSeat;
import spades.v1.Lobby.TableVisibility;
import spades.v1.Lobby.Ticket;
import spades.v1.Lobby.TicketState;
import spades.v1.Spades.Action;
import spades.v1.Spades.ActionResult;
import spades.v1.Spades.Card;
import spades.v1.Spades.CreateMatchResponse;
import spades.v1.Spades.MatchEvent;
import spades.v1.Spades.Phase;
import spades.v1.Spades.PlayCardAction;
import spades.v1.Spades.Ruleset;
import spades.v1.Spades.SeatView;

/**
 * Runs one scenario of clients/conformance/ (README.md there) with the wrapper, and returns its
 * transcript: the events received on the session (up to the one that ended the last play step),
 * then the outcomes of the steps. A scenario with {@code lobby} instead of {@code create} (the
 * lobby scenario) gets its credential from serve.py, reaches its seat through quick play with a
 * friend serve.py drives, then opens an invite-only table the friend joins by its code.
 */
final class ConformanceRunner {
  /** The longest any one wait may take (an event, a result, a turn). */
  private static final Duration WAIT = Duration.ofSeconds(30);

  private final SpadesClient client;
  private final Harness harness;
  private final JsonObject scenario;

  private String matchId;
  private SeatClient seat;
  private SeatSession session;
  // The lobby scenario's: its spec, the two players, the rules, the client's lobby, its ticket
  // and the invite-only table it opened.
  private JsonObject lobbySpec;
  private String me;
  private String friend;
  private Ruleset ruleset;
  private LobbyClient lobby;
  private Ticket ticket;
  private OpenTableResponse opened;
  private final List<String> eventLines = new ArrayList<>();
  private final List<String> outcomeLines = new ArrayList<>();
  /** Where each kind's events are in eventLines. */
  private final Map<String, List<Integer>> positions = new HashMap<>();
  /** How many events the transcript keeps: up to the one that ended the last play step. */
  private int lastPlayEnd = -1;
  private long lastRecorded;

  ConformanceRunner(SpadesClient client, Harness harness, JsonObject scenario) {
    this.client = client;
    this.harness = harness;
    this.scenario = scenario;
  }

  /** The transcript, one line each, without the newlines. */
  List<String> run() throws Exception {
    if (scenario.has("lobby")) {
      // Through the lobby: the seat comes from quick play (await_placement).
      lobbySpec = scenario.getAsJsonObject("lobby");
      me = lobbySpec.get("me").getAsString();
      friend = lobbySpec.get("friend").getAsString();
      ruleset = ProtoJson.ruleset(lobbySpec.getAsJsonObject("ruleset"));
      lobby = client.lobby(harness.credential(me, "Me"));
    } else {
      CreateMatchResponse created =
          client.createMatch(ProtoJson.createMatchRequest(scenario.getAsJsonObject("create")));
      int seatNumber = scenario.get("seat").getAsInt();
      String token = null;
      for (var t : created.getSeatTokensList()) {
        if (t.getSeat() == seatNumber) {
          token = t.getToken();
        }
      }
      if (token == null) {
        throw new IllegalStateException("no seat token for seat " + seatNumber);
      }
      matchId = created.getMatch().getMatchId();
      seat = client.seat(matchId, token);
    }
    try {
      for (JsonElement s : scenario.getAsJsonArray("steps")) {
        step(s.getAsJsonObject());
      }
    } finally {
      if (session != null) {
        session.cancel();
      }
    }
    List<String> lines =
        new ArrayList<>(lastPlayEnd < 0 ? eventLines : eventLines.subList(0, lastPlayEnd));
    lines.addAll(outcomeLines);
    return lines;
  }

  private void step(JsonObject step) throws Exception {
    String what = step.get("do").getAsString();
    switch (what) {
      case "claim_wrong_token":
        try {
          client.seat(matchId, matchId + ".wrong-secret").claim();
          throw new AssertionError("a claim with a wrong token was accepted");
        } catch (SpadesException e) {
          Map<String, Object> o = Json.object("step", what);
          o.put("code", e.getCode().name());
          o.put("reason", e.getReason());
          outcome(o);
        }
        break;
      case "claim":
        {
          Map<String, Object> o = Json.object("step", what);
          o.put("seat", seat.claim().getSeat());
          outcome(o);
          break;
        }
      case "open":
        session = seat.openSession(0);
        break;
      case "play":
        {
          Set<Map.Entry<String, JsonElement>> until = step.getAsJsonObject("until").entrySet();
          if (until.size() != 1) {
            throw new IllegalArgumentException("`until` names one event kind: " + until);
          }
          Map.Entry<String, JsonElement> u = until.iterator().next();
          play(u.getKey(), u.getValue().getAsInt());
          break;
        }
      case "cut":
        harness.cut();
        break;
      case "send_then_cut":
        {
          Action action = waitForTurn().getLegalActions(0);
          CompletableFuture<ActionResult> result =
              session.send(UUID.randomUUID().toString(), action, null);
          harness.cut();
          actingLine(what, action, await(result));
          break;
        }
      case "retry":
        {
          Action action = waitForTurn().getLegalActions(0);
          String id = UUID.randomUUID().toString();
          ActionResult first = await(session.send(id, action, null));
          ActionResult again = await(session.send(id, action, null));
          actingLine("retry", action, first);
          actingLine("retry_again", action, again);
          break;
        }
      case "illegal_card":
        illegalCard();
        break;
      case "close":
        session.close(WAIT); // a half-closed Play call stays open: this cancels it
        break;
      case "friend_quickplay":
        {
          JsonObject request = new JsonObject();
          request.addProperty("do", "quickplay");
          request.addProperty("playerId", friend);
          request.addProperty("partner", me);
          request.add("ruleset", lobbySpec.get("ruleset"));
          Map<String, Object> o = Json.object("step", what);
          o.put("state", harness.friend(request).get("state").getAsString());
          outcome(o);
          break;
        }
      case "quickplay":
        {
          ticket = lobby.quickPlay(ruleset, friend);
          Map<String, Object> o = Json.object("step", what);
          o.put("state", ticket.getState().name());
          List<Object> ids = Json.array();
          ids.addAll(ticket.getPlayerIdsList());
          o.put("playerIds", ids);
          outcome(o);
          break;
        }
      case "await_placement":
        {
          Placement placement = lobby.awaitPlacement(ticket, WAIT);
          matchId = placement.getMatchId();
          seat = lobby.seat(placement);
          Integer partnerSeat = null;
          for (TableSeat s : placement.getTable().getSeatsList()) {
            if (s.getPlayerId().equals(friend)) {
              partnerSeat = s.getSeat();
            }
          }
          if (partnerSeat == null) {
            throw new AssertionError("the friend is not at the placed table: " + placement);
          }
          Map<String, Object> o = Json.object("step", what);
          o.put("state", TicketState.TICKET_STATE_PLACED.name());
          o.put("seat", placement.getSeat());
          o.put("partnerSeat", partnerSeat);
          o.put("kind", placement.getTable().getKind().name());
          o.put("seats", seatStates(placement.getTable()));
          outcome(o);
          break;
        }
      case "open_invite_table":
        {
          opened =
              lobby.openTable(
                  OpenTableRequest.newBuilder()
                      .setRuleset(ruleset)
                      .addBotSeats(1)
                      .addBotSeats(3)
                      .setVisibility(TableVisibility.TABLE_VISIBILITY_INVITE_ONLY)
                      .build());
          Map<String, Object> o = Json.object("step", what);
          o.put("seat", opened.getSeat());
          o.put("state", opened.getTable().getState().name());
          o.put("visibility", opened.getTable().getVisibility().name());
          String code = opened.getTable().getInviteCode();
          o.put("inviteCodeLength", code.codePointCount(0, code.length()));
          outcome(o);
          break;
        }
      case "friend_join_by_code":
        {
          JsonObject request = new JsonObject();
          request.addProperty("do", "join");
          request.addProperty("playerId", friend);
          request.addProperty("code", opened.getTable().getInviteCode());
          request.addProperty("seat", 2);
          JsonObject answer = harness.friend(request);
          Map<String, Object> o = Json.object("step", what);
          o.put("seat", answer.get("seat").getAsInt());
          o.put("state", answer.get("state").getAsString());
          outcome(o);
          break;
        }
      case "await_start":
        {
          Table table = lobby.awaitStart(opened.getTable(), WAIT);
          SeatView view = client.seat(table.getMatchId(), opened.getSeatToken()).getView();
          Map<String, Object> o = Json.object("step", what);
          o.put("state", table.getState().name());
          o.put("seats", seatStates(table));
          o.put("viewSeat", view.getSeat());
          outcome(o);
          break;
        }
      default:
        throw new IllegalArgumentException("unknown step " + what);
    }
  }

  /** Each seat's state by name, in the table's order. */
  private static List<Object> seatStates(Table table) {
    List<Object> states = Json.array();
    for (TableSeat s : table.getSeatsList()) {
      states.add(s.getState().name());
    }
    return states;
  }

  /**
   * Acts by the policy at each of the seat's turns until {@code k} events of {@code kind} have
   * come; the k-th ends the step. GetView can be ahead of the stream, so each action carries
   * {@code expected_seq}, the last event received, and {@code until} is checked against those
   * same events just before sending; {@code STALE_SEQUENCE} means events up to its {@code
   * current_seq} are on their way: wait for them, check again, look again.
   */
  private void play(String kind, int k) throws Exception {
    while (true) {
      drain();
      if (reached(kind, k)) {
        return;
      }
      SeatView view = seat.getView();
      if (view.getLegalActionsCount() == 0) {
        awaitEvent();
        continue;
      }
      drain();
      if (reached(kind, k)) {
        return;
      }
      Action action = view.getLegalActions(0);
      ActionResult result;
      try {
        result = await(session.send(UUID.randomUUID().toString(), action, lastRecorded));
      } catch (SpadesException e) {
        if (!"STALE_SEQUENCE".equals(e.getReason()) || e.getCurrentSeq() == null) {
          throw e;
        }
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (lastRecorded < e.getCurrentSeq()) {
          if (System.nanoTime() > deadline) {
            throw new AssertionError("events up to " + e.getCurrentSeq() + " did not come");
          }
          awaitEvent();
        }
        continue;
      }
      actingLine("play", action, result);
    }
  }

  /** Whether k events of kind have come; if so, the k-th ends the step (and maybe the events). */
  private boolean reached(String kind, int k) {
    List<Integer> at = positions.getOrDefault(kind, List.of());
    if (at.size() < k) {
      return false;
    }
    lastPlayEnd = at.get(k - 1) + 1;
    return true;
  }

  private void illegalCard() throws Exception {
    while (true) {
      SeatView view = waitForTurn();
      Card illegal = null;
      if (view.getPhase() == Phase.PHASE_PLAYING) {
        Set<Card> legal = new HashSet<>();
        for (Action a : view.getLegalActionsList()) {
          if (a.hasPlayCard()) {
            legal.add(a.getPlayCard().getCard());
          }
        }
        for (Card c : view.getHandList()) {
          if (!legal.contains(c)) {
            illegal = c;
            break;
          }
        }
      }
      if (illegal == null) {
        Action action = view.getLegalActions(0);
        actingLine("play", action, await(session.send(UUID.randomUUID().toString(), action, null)));
        continue;
      }
      Action action =
          Action.newBuilder().setPlayCard(PlayCardAction.newBuilder().setCard(illegal)).build();
      try {
        ActionResult r = await(session.send(UUID.randomUUID().toString(), action, null));
        throw new AssertionError("an illegal card was accepted: " + r);
      } catch (SpadesException e) {
        Map<String, Object> o = Json.object("step", "illegal_card");
        o.put("action", ProtoJson.action(action));
        o.put("code", e.getCode().name());
        o.put("reason", e.getReason());
        o.put("rule", e.getRule() == null ? "" : e.getRule());
        outcome(o);
        return;
      }
    }
  }

  /** The view at the seat's next turn (now, if it is its turn). */
  private SeatView waitForTurn() throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      drain();
      SeatView view = seat.getView();
      if (view.getLegalActionsCount() > 0) {
        return view;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("the seat's turn did not come within " + WAIT);
      }
      awaitEvent();
    }
  }

  private void drain() throws Exception {
    MatchEvent e;
    while ((e = session.poll(Duration.ZERO)) != null) {
      record(e);
    }
  }

  private void awaitEvent() throws Exception {
    MatchEvent e = session.poll(WAIT);
    if (e == null) {
      throw new AssertionError("no event within " + WAIT + " (session " + session.state() + ")");
    }
    record(e);
  }

  private void record(MatchEvent e) {
    if (e.getSeq() <= lastRecorded) {
      throw new AssertionError("event " + e.getSeq() + " after " + lastRecorded);
    }
    lastRecorded = e.getSeq();
    positions.computeIfAbsent(ProtoJson.kindName(e), x -> new ArrayList<>()).add(eventLines.size());
    eventLines.add(Json.write(Json.object("event", ProtoJson.event(e))));
  }

  private void actingLine(String step, Action action, ActionResult r) {
    Map<String, Object> o = Json.object("step", step);
    o.put("action", ProtoJson.action(action));
    o.put("firstSeq", Long.toUnsignedString(r.getFirstSeq()));
    o.put("lastSeq", Long.toUnsignedString(r.getLastSeq()));
    outcome(o);
  }

  private void outcome(Map<String, Object> o) {
    outcomeLines.add(Json.write(Json.object("outcome", o)));
  }

  /** The result of an action, or the SpadesException it was refused with. */
  private static ActionResult await(CompletableFuture<ActionResult> f) throws Exception {
    try {
      return f.get(WAIT.toNanos(), TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof SpadesException) {
        throw (SpadesException) e.getCause();
      }
      throw e;
    }
  }
}

package spades.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import spades.v1.Spades.Action;
import spades.v1.Spades.ActionResult;
import spades.v1.Spades.BidAction;
import spades.v1.Spades.BotLevel;
import spades.v1.Spades.Card;
import spades.v1.Spades.CreateMatchRequest;
import spades.v1.Spades.CreateMatchResponse;
import spades.v1.Spades.MatchEvent;
import spades.v1.Spades.PlayCardAction;
import spades.v1.Spades.Ruleset;
import spades.v1.Spades.SeatConfig;
import spades.v1.Spades.SeatView;

/**
 * What a user of the wrapper notices, over both transports against a real server: typed
 * refusals, resume without gaps after a cut, safe retries, cancellation, and the attempt limit.
 */
class SessionTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static Harness harness;

  @BeforeAll
  static void startServer() throws Exception {
    harness = Harness.start();
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (harness != null) {
      harness.close();
    }
  }

  private static SpadesClient client(Transport transport) {
    return SpadesClient.builder(harness.address)
        .plaintext()
        .transport(transport)
        .operatorToken(harness.operatorToken)
        .defaultDeadline(Duration.ofSeconds(10))
        .build();
  }

  /** Seed 11, the client at seat 0 (first to bid), three random bots. */
  private static CreateMatchResponse newMatch(SpadesClient client) {
    CreateMatchRequest.Builder b =
        CreateMatchRequest.newBuilder()
            .setRuleset(Ruleset.newBuilder().setPreset("classic"))
            .setSeed(11)
            .setHasSeed(true)
            .addSeats(SeatConfig.newBuilder().setName("You"));
    for (int i = 1; i < 4; i++) {
      b.addSeats(
          SeatConfig.newBuilder()
              .setName("Bot " + i)
              .setBot(true)
              .setBotLevel(BotLevel.BOT_LEVEL_RANDOM));
    }
    return client.createMatch(b.build());
  }

  private static SeatClient claimedSeat(SpadesClient client) {
    SeatClient seat = client.seat(newMatch(client).getSeatTokens(0).getToken());
    seat.claim();
    return seat;
  }

  private static Action bid(int tricks) {
    return Action.newBuilder().setBid(BidAction.newBuilder().setTricks(tricks)).build();
  }

  private static SpadesException refusal(CompletableFuture<ActionResult> f) throws Exception {
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> f.get(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof SpadesException, "not a SpadesException: " + e.getCause());
    return (SpadesException) e.getCause();
  }

  /** The view at the seat's turn, reading (and keeping) the session's events meanwhile. */
  private static SeatView turn(SeatClient seat, SeatSession session, List<MatchEvent> seen)
      throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      MatchEvent e;
      while ((e = session.poll(Duration.ZERO)) != null) {
        seen.add(e);
      }
      SeatView view = seat.getView();
      if (view.getLegalActionsCount() > 0) {
        return view;
      }
      e = session.poll(Duration.ofSeconds(5));
      if (e != null) {
        seen.add(e);
      }
    }
    throw new AssertionError("no turn within " + WAIT);
  }

  private static List<Long> seqs(List<MatchEvent> events) {
    List<Long> out = new ArrayList<>();
    for (MatchEvent e : events) {
      out.add(e.getSeq());
    }
    return out;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void unaryRefusalsCarryCodeReasonRuleAndField(Transport transport) {
    try (SpadesClient client = client(transport)) {
      CreateMatchResponse created = newMatch(client);
      String matchId = created.getMatch().getMatchId();

      SpadesException wrong =
          assertThrows(
              SpadesException.class, () -> client.seat(matchId + ".wrong-secret").claim());
      assertEquals(Status.Code.UNAUTHENTICATED, wrong.getCode());
      assertEquals("UNAUTHENTICATED", wrong.getReason());
      assertEquals("spades.v1", wrong.getDomain());

      SpadesException name =
          assertThrows(
              SpadesException.class,
              () ->
                  client.createMatch(
                      CreateMatchRequest.newBuilder()
                          .addSeats(SeatConfig.newBuilder().setName("x".repeat(65)))
                          .addSeats(SeatConfig.newBuilder().setName("b").setBot(true))
                          .addSeats(SeatConfig.newBuilder().setName("c").setBot(true))
                          .addSeats(SeatConfig.newBuilder().setName("d").setBot(true))
                          .build()));
      assertEquals(Status.Code.INVALID_ARGUMENT, name.getCode());
      assertEquals("NAME_TOO_LONG", name.getReason());
      assertEquals("seats[0].name", name.getFieldViolations().get(0).getField());

      SeatClient seat = client.seat(created.getSeatTokens(0).getToken());
      seat.claim();
      Card card = seat.getView().getHand(0);
      SpadesException rule =
          assertThrows(
              SpadesException.class,
              () ->
                  seat.submitAction(
                      Action.newBuilder()
                          .setPlayCard(PlayCardAction.newBuilder().setCard(card))
                          .build()));
      assertEquals(Status.Code.FAILED_PRECONDITION, rule.getCode());
      assertEquals("WRONG_PHASE", rule.getReason());
      assertNotNull(rule.getRule());
      assertFalse(rule.getRule().isEmpty());
      assertEquals("action", rule.getFieldViolations().get(0).getField());
      assertTrue(rule.getMessage().startsWith("FAILED_PRECONDITION WRONG_PHASE: "));

      try (SpadesClient noOperator =
          SpadesClient.builder(harness.address)
              .plaintext()
              .transport(transport)
              .operatorToken("not-the-token")
              .build()) {
        SpadesException op =
            assertThrows(SpadesException.class, () -> noOperator.getMatch(matchId));
        assertEquals(Status.Code.PERMISSION_DENIED, op.getCode());
        assertEquals("NOT_OPERATOR", op.getReason());
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aViewIsAtLeastAsNewAsWhatTheSeatSaw(Transport transport) {
    try (SpadesClient client = client(transport)) {
      SeatClient seat = client.seat(newMatch(client).getSeatTokens(0).getToken());
      seat.claim();
      assertEquals(0, seat.getSeenSeq());
      SeatView view = seat.getView();
      assertEquals(view.getAsOfSeq(), seat.getSeenSeq());
      SpadesException ahead =
          assertThrows(SpadesException.class, () -> seat.getView(seat.getSeenSeq() + 10_000));
      assertEquals(Status.Code.OUT_OF_RANGE, ahead.getCode());
      assertEquals("SEQ_AHEAD", ahead.getReason());
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void refusedActionOnPlayIsTypedAndTheSessionGoesOn(Transport transport) throws Exception {
    try (SpadesClient client = client(transport)) {
      SeatClient seat = claimedSeat(client);
      try (SeatSession session = seat.openSession()) {
        Card card = seat.getView().getHand(0);
        SpadesException e =
            refusal(
                session.send(
                    Action.newBuilder()
                        .setPlayCard(PlayCardAction.newBuilder().setCard(card))
                        .build()));
        assertEquals(Status.Code.FAILED_PRECONDITION, e.getCode());
        assertEquals("WRONG_PHASE", e.getReason());
        assertNotNull(e.getRule());
        assertEquals("action", e.getFieldViolations().get(0).getField());

        SpadesException range = refusal(session.send(bid(14)));
        assertEquals(Status.Code.INVALID_ARGUMENT, range.getCode());
        assertEquals("BID_OUT_OF_RANGE", range.getReason());

        ActionResult ok = session.send(bid(3)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertTrue(ok.getFirstSeq() > 0 && ok.getLastSeq() >= ok.getFirstSeq());
        assertEquals(SeatSession.State.OPEN, session.state());
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void resumesAfterCutsWithoutGapOrDuplicate(Transport transport) throws Exception {
    try (SpadesClient client = client(transport)) {
      SeatClient seat = claimedSeat(client);
      LinkedBlockingQueue<MatchEvent> events = new LinkedBlockingQueue<>();
      AtomicInteger reconnecting = new AtomicInteger();
      AtomicInteger resumed = new AtomicInteger();
      AtomicReference<String> closed = new AtomicReference<>();
      SeatSession.Listener listener =
          new SeatSession.Listener() {
            @Override
            public void onEvent(MatchEvent event) {
              events.add(event);
            }

            @Override
            public void onReconnecting(SpadesException cause, int attempt, Duration delay) {
              reconnecting.incrementAndGet();
            }

            @Override
            public void onResumed(long afterSeq) {
              resumed.incrementAndGet();
            }

            @Override
            public void onClosed(SpadesException error) {
              closed.set(error == null ? "ok" : error.toString());
            }
          };
      List<MatchEvent> seen = new ArrayList<>();
      SeatSession session = seat.openSession(0, listener);
      for (int turn = 0; turn < 6; turn++) {
        SeatView view = waitTurn(seat, events, seen);
        if (turn == 2 || turn == 4) {
          harness.cut();
        }
        session.send(view.getLegalActions(0)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
      }
      waitTurn(seat, events, seen);
      session.close();
      events.drainTo(seen);
      assertEquals("ok", closed.get());
      assertTrue(session.reconnections() >= 2, "reconnections: " + session.reconnections());
      assertTrue(reconnecting.get() >= 2 && resumed.get() >= 1, reconnecting + " " + resumed);

      // What a fresh session replays from the start is exactly what the cut one delivered.
      long last = seen.get(seen.size() - 1).getSeq();
      List<MatchEvent> replay = new ArrayList<>();
      try (SeatSession fresh = seat.openSession()) {
        while (replay.isEmpty() || replay.get(replay.size() - 1).getSeq() < last) {
          MatchEvent e = fresh.poll(WAIT);
          assertNotNull(e, "the replay stopped at " + seqs(replay));
          replay.add(e);
        }
      }
      assertEquals(seqs(replay), seqs(seen));
      assertEquals(replay, seen);
    }
  }

  private static SeatView waitTurn(
      SeatClient seat, LinkedBlockingQueue<MatchEvent> events, List<MatchEvent> seen)
      throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      events.drainTo(seen);
      SeatView view = seat.getView();
      if (view.getLegalActionsCount() > 0) {
        return view;
      }
      MatchEvent e = events.poll(5, TimeUnit.SECONDS);
      if (e != null) {
        seen.add(e);
      }
    }
    throw new AssertionError("no turn within " + WAIT);
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aRepeatedActionIdIsAnsweredWithTheFirstResult(Transport transport) throws Exception {
    try (SpadesClient client = client(transport)) {
      SeatClient seat = claimedSeat(client);
      List<MatchEvent> seen = new ArrayList<>();
      try (SeatSession session = seat.openSession()) {
        Action action = turn(seat, session, seen).getLegalActions(0);
        ActionResult first =
            session.send("retry-1", action, null).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        ActionResult again =
            session.send("retry-1", action, null).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertEquals(first, again);
        // The same id over SubmitAction, with a stale expected_seq: the first result again.
        assertEquals(
            first.getLastSeq(), seat.submitAction("retry-1", action, 1L).getLastSeq());

        // Sent, then the connection cut at once: resent with the same id, applied once.
        Action next = turn(seat, session, seen).getLegalActions(0);
        CompletableFuture<ActionResult> f = session.send("cut-1", next, null);
        harness.cut();
        ActionResult r = f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertEquals(r, session.send("cut-1", next, null).get(WAIT.toSeconds(), TimeUnit.SECONDS));
        turn(seat, session, seen);
        long mine = seen.stream().filter(e -> e.hasCardPlayed() && e.getCardPlayed().getSeat() == 0
            || e.hasBidMade() && e.getBidMade().getSeat() == 0).count();
        assertEquals(2, mine, "seat 0's actions in " + seen);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void cancelEndsTheSessionAndItsActions(Transport transport) throws Exception {
    try (SpadesClient client = client(transport)) {
      SeatClient seat = claimedSeat(client);
      SeatSession session = seat.openSession();
      assertNotNull(session.poll(WAIT), "no event");
      session.cancel();
      session.done().get(WAIT.toSeconds(), TimeUnit.SECONDS);
      assertEquals(SeatSession.State.CLOSED, session.state());
      SpadesException late = refusal(session.send(bid(3)));
      assertEquals(Status.Code.FAILED_PRECONDITION, late.getCode());
      // Every event already delivered can still be read; then poll says the session is over.
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (session.poll(Duration.ofMillis(100)) != null) {
        assertTrue(System.nanoTime() < deadline);
      }
      assertNull(session.poll(Duration.ZERO));
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aRefusedCallIsNotRetried(Transport transport) throws Exception {
    try (SpadesClient client = client(transport)) {
      String matchId = newMatch(client).getMatch().getMatchId();
      SeatSession session = client.seat(matchId + ".wrong-secret").openSession();
      ExecutionException e =
          assertThrows(
              ExecutionException.class,
              () -> session.done().get(WAIT.toSeconds(), TimeUnit.SECONDS));
      SpadesException cause = (SpadesException) e.getCause();
      assertEquals(Status.Code.UNAUTHENTICATED, cause.getCode());
      assertEquals("UNAUTHENTICATED", cause.getReason());
      assertEquals(0, session.reconnections());
      assertEquals(SeatSession.State.FAILED, session.state());
      assertThrows(SpadesException.class, () -> session.poll(WAIT));
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void givesUpAfterTheAttemptLimit(Transport transport) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    RetryPolicy quick = new RetryPolicy(Duration.ofMillis(20), Duration.ofMillis(80), 2, 0.2, 3);
    try (SpadesClient client =
        SpadesClient.builder("127.0.0.1:" + port)
            .plaintext()
            .transport(transport)
            .retryPolicy(quick)
            .build()) {
      SeatSession session = client.seat("m.secret").openSession();
      CompletableFuture<ActionResult> pending = session.send(bid(3));
      ExecutionException e =
          assertThrows(
              ExecutionException.class,
              () -> session.done().get(WAIT.toSeconds(), TimeUnit.SECONDS));
      assertEquals(Status.Code.UNAVAILABLE, ((SpadesException) e.getCause()).getCode());
      assertEquals(3, session.reconnections());
      assertEquals(Status.Code.UNAVAILABLE, refusal(pending).getCode());
      SpadesException unary =
          assertThrows(SpadesException.class, () -> client.seat("m.secret").getView());
      assertEquals(Status.Code.UNAVAILABLE, unary.getCode());
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void closingTheClientEndsItsSessions(Transport transport) throws Exception {
    SeatSession open;
    try (SpadesClient client = client(transport)) {
      open = claimedSeat(client).openSession();
      assertNotNull(open.poll(WAIT), "no event");
    }
    open.done().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertEquals(SeatSession.State.CLOSED, open.state());

    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    SeatSession waiting;
    try (SpadesClient client =
        SpadesClient.builder("127.0.0.1:" + port)
            .plaintext()
            .transport(transport)
            .retryPolicy(new RetryPolicy(Duration.ofMinutes(1), Duration.ofMinutes(1), 2, 0, 5))
            .build()) {
      waiting = client.seat("m.secret").openSession();
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (waiting.state() != SeatSession.State.RECONNECTING) {
        assertTrue(System.nanoTime() < deadline, "never reconnecting: " + waiting.state());
        Thread.sleep(10);
      }
    }
    waiting.done().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertEquals(SeatSession.State.CLOSED, waiting.state());
  }
}

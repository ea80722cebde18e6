package spades.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.okhttp.OkHttpChannelBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import spades.v1.Lobby.JoinTableResponse;
import spades.v1.Lobby.ListTablesRequest;
import spades.v1.Lobby.ListTablesResponse;
import spades.v1.Lobby.LobbyFilter;
import spades.v1.Lobby.OpenTableRequest;
import spades.v1.Lobby.OpenTableResponse;
import spades.v1.Lobby.Placement;
import spades.v1.Lobby.QuickPlayRequest;
import spades.v1.Lobby.RematchResponse;
import spades.v1.Lobby.Table;
import spades.v1.Lobby.TableKind;
import spades.v1.Lobby.TableSeat;
import spades.v1.Lobby.TableSeatState;
import spades.v1.Lobby.TableState;
import spades.v1.Lobby.TableVisibility;
import spades.v1.Lobby.Ticket;
import spades.v1.Lobby.TicketState;
import spades.v1.Lobby.WatchLobbyResponse;
import spades.v1.LobbyServiceGrpc;
import spades.v1.Spades.MatchEvent;
import spades.v1.Spades.Phase;
import spades.v1.Spades.Ruleset;
import spades.v1.Spades.SeatControl;
import spades.v1.Spades.SeatView;

/**
 * The lobby through the wrapper against a real server (serve.py: player credentials it signs,
 * quick play's bots after 1 s): tables opened, joined, left and started; invitations by code;
 * the lobby listed, watched and long-polled; quick play alone and as a party, resent with its
 * request id and retried after a lost answer; cancelling; a rematch; refused credentials.
 */
class LobbyTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  /** A quick match: the first hand that scores ends it. */
  private static final Ruleset QUICK =
      Ruleset.newBuilder().setPreset("classic").setTargetScore(1).setNoMercyScore(true).build();

  private static final AtomicInteger QUEUES = new AtomicInteger();
  private static Harness harness;
  private static SpadesClient client;

  @BeforeAll
  static void startServer() throws Exception {
    harness = Harness.start();
    // The server itself, not the proxy: a test's cut leaves the other tests' calls alone.
    client =
        SpadesClient.builder(harness.server)
            .plaintext()
            .defaultDeadline(Duration.ofSeconds(10))
            .build();
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (client != null) {
      client.close();
    }
    if (harness != null) {
      harness.close();
    }
  }

  /** A client through serve.py's proxy (which POST /cut resets). */
  private static SpadesClient client(Transport transport) {
    return SpadesClient.builder(harness.address)
        .plaintext()
        .transport(transport)
        .defaultDeadline(Duration.ofSeconds(10))
        .build();
  }

  /** A player with a unique id and a credential serve.py signed. */
  private static final class Player {
    final String id;
    final String credential;
    final LobbyClient lobby;

    Player(SpadesClient on, String prefix) throws Exception {
      this.id = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
      this.credential = harness.credential(id, prefix);
      this.lobby = on.lobby(credential);
    }
  }

  private static Player player(String prefix) throws Exception {
    return new Player(client, prefix);
  }

  /** Rules no other test queues for: a quick play queue of its own. */
  private static Ruleset ownQueue() {
    return Ruleset.newBuilder()
        .setPreset("classic")
        .setTargetScore(300 + QUEUES.incrementAndGet())
        .build();
  }

  private static SpadesException refused(Status.Code code, String reason, Executable call) {
    SpadesException e = assertThrows(SpadesException.class, call);
    assertEquals(code, e.getCode(), e.toString());
    assertEquals(reason, e.getReason(), e.toString());
    return e;
  }

  private static List<TableSeatState> states(Table t) {
    List<TableSeatState> out = new ArrayList<>();
    for (TableSeat s : t.getSeatsList()) {
      out.add(s.getState());
    }
    return out;
  }

  private static final TableSeatState PLAYER = TableSeatState.TABLE_SEAT_STATE_PLAYER;
  private static final TableSeatState OPEN = TableSeatState.TABLE_SEAT_STATE_OPEN;
  private static final TableSeatState BOT = TableSeatState.TABLE_SEAT_STATE_BOT;

  @Test
  void aTableWaitsForItsPlayersAndEachSeatTokenPlaysOnceItStarts() throws Exception {
    Player alice = player("alice");
    Player bob = player("bob");
    Player carol = player("carol");
    OpenTableResponse opened = alice.lobby.openTable();
    Table table = opened.getTable();
    assertEquals(TableState.TABLE_STATE_WAITING, table.getState());
    assertEquals(TableKind.TABLE_KIND_OPENED, table.getKind());
    assertEquals(Arrays.asList(PLAYER, OPEN, OPEN, OPEN), states(table));
    assertEquals(alice.id, table.getHostPlayerId());
    assertEquals(0, opened.getSeat());
    // The token exists from the start, but plays only once the table has started.
    refused(
        Status.Code.FAILED_PRECONDITION,
        "TABLE_NOT_STARTED",
        () -> alice.lobby.seat(opened).getView());
    refused(
        Status.Code.FAILED_PRECONDITION,
        "ALREADY_SEATED",
        () -> alice.lobby.openTable());

    JoinTableResponse joined = bob.lobby.joinTable(table.getTableId(), 2);
    assertEquals(2, joined.getSeat());
    JoinTableResponse again = bob.lobby.joinTable(table.getTableId());
    assertEquals(2, again.getSeat(), "joining again is idempotent");
    assertEquals(joined.getSeatToken(), again.getSeatToken());

    // Carol sits down and stands up again: her seat is open once more.
    JoinTableResponse sat = carol.lobby.joinTable(table.getTableId());
    assertEquals(1, sat.getSeat());
    Table left = carol.lobby.leaveTable(table.getTableId());
    assertEquals(OPEN, left.getSeats(1).getState());
    assertTrue(left.getVersion() > sat.getTable().getVersion());

    refused(
        Status.Code.PERMISSION_DENIED,
        "NOT_HOST",
        () -> bob.lobby.startTable(table.getTableId()));
    Table started = alice.lobby.startTable(table.getTableId());
    assertEquals(TableState.TABLE_STATE_STARTED, started.getState());
    assertEquals(table.getTableId(), started.getMatchId());
    assertEquals(Arrays.asList(PLAYER, BOT, PLAYER, BOT), states(started));
    refused(
        Status.Code.FAILED_PRECONDITION,
        "TABLE_STARTED",
        () -> carol.lobby.joinTable(table.getTableId()));

    // Each seat token now plays like one from CreateMatch.
    SeatView aliceView = alice.lobby.seat(opened).getView();
    assertEquals(0, aliceView.getSeat());
    assertEquals(13, aliceView.getHandCount());
    assertEquals(SeatControl.SEAT_CONTROL_BOT, aliceView.getSeats(1).getControl());
    assertEquals(2, bob.lobby.seat(joined).getView().getSeat());
  }

  @Test
  void theHostsLeavingPassesTheHostAndTheLastOneClosesTheTable() throws Exception {
    Player host = player("host");
    Player guest = player("guest");
    String tableId = host.lobby.openTable().getTable().getTableId();
    guest.lobby.joinTable(tableId, 1);
    Table left = host.lobby.leaveTable(tableId);
    assertEquals(OPEN, left.getSeats(0).getState());
    assertEquals(guest.id, left.getHostPlayerId());
    Table closed = guest.lobby.leaveTable(tableId);
    assertEquals(TableState.TABLE_STATE_CLOSED, closed.getState());
    assertEquals("empty", closed.getCloseReason());
    refused(
        Status.Code.FAILED_PRECONDITION, "TABLE_CLOSED", () -> host.lobby.joinTable(tableId));
    SpadesException e =
        refused(
            Status.Code.FAILED_PRECONDITION,
            "TABLE_CLOSED",
            () -> host.lobby.awaitStart(closed, WAIT));
    assertEquals("spades.client", e.getDomain());
    assertEquals("empty", e.getMetadata().get("close_reason"));
  }

  @Test
  void anInviteOnlyTableIsJoinedByItsCode() throws Exception {
    Player host = player("host");
    Player friend = player("friend");
    Player stranger = player("stranger");
    OpenTableResponse opened =
        host.lobby.openTable(
            OpenTableRequest.newBuilder()
                .addBotSeats(1)
                .addBotSeats(3)
                .setVisibility(TableVisibility.TABLE_VISIBILITY_INVITE_ONLY)
                .build());
    String code = opened.getTable().getInviteCode();
    String tableId = opened.getTable().getTableId();
    assertEquals(11, code.length(), code);
    refused(
        Status.Code.PERMISSION_DENIED, "INVITE_REQUIRED", () -> stranger.lobby.joinTable(tableId));
    refused(
        Status.Code.PERMISSION_DENIED, "INVITE_REQUIRED", () -> stranger.lobby.getTable(tableId));
    refused(
        Status.Code.NOT_FOUND,
        "INVITE_NOT_FOUND",
        () -> stranger.lobby.joinByInviteCode("ZZZZZ-ZZZZZ"));
    // Not in the lobby.
    for (Table t : stranger.lobby.listAllTables(null).getTablesList()) {
      assertNotEquals(tableId, t.getTableId());
    }
    // Read aloud: lower case, a space instead of the dash.
    JoinTableResponse joined =
        friend.lobby.joinByInviteCode(code.toLowerCase().replace('-', ' '), 2);
    assertEquals(2, joined.getSeat());
    assertEquals(code, joined.getTable().getInviteCode());
    // The table filled up: it starts (awaitStart follows it there).
    Table started = host.lobby.awaitStart(opened.getTable(), WAIT);
    assertEquals(TableState.TABLE_STATE_STARTED, started.getState());
    assertEquals(0, host.lobby.seat(opened).getView().getSeat());
    assertEquals(2, friend.lobby.seat(joined).getView().getSeat());
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void theLobbyIsListedWatchedAndPolled(Transport transport) throws Exception {
    try (SpadesClient c = client(transport)) {
      Ruleset rules = ownQueue();
      LobbyFilter filter = LobbyFilter.newBuilder().setRuleset(rules).build();
      Player viewer = new Player(c, "viewer");
      List<OpenTableResponse> tables = new ArrayList<>();
      List<Player> hosts = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        Player host = new Player(c, "host");
        hosts.add(host);
        tables.add(host.lobby.openTable(OpenTableRequest.newBuilder().setRuleset(rules).build()));
      }
      new Player(c, "other").lobby.openTable(); // classic: not in the filter
      List<String> ids = new ArrayList<>();
      for (OpenTableResponse t : tables) {
        ids.add(t.getTable().getTableId());
      }
      // Page by page, oldest first, and all pages at once.
      List<String> paged = new ArrayList<>();
      String token = "";
      long version = 0;
      do {
        ListTablesResponse page =
            viewer.lobby.listTables(
                ListTablesRequest.newBuilder()
                    .setFilter(filter)
                    .setPageSize(2)
                    .setPageToken(token)
                    .build());
        assertTrue(page.getTablesCount() <= 2);
        if (token.isEmpty()) {
          version = page.getVersion();
        }
        for (Table t : page.getTablesList()) {
          paged.add(t.getTableId());
        }
        token = page.getNextPageToken();
      } while (!token.isEmpty());
      assertEquals(ids, paged);
      ListTablesResponse all = viewer.lobby.listAllTables(filter);
      List<String> listed = new ArrayList<>();
      for (Table t : all.getTablesList()) {
        listed.add(t.getTableId());
      }
      assertEquals(ids, listed);
      assertEquals("", all.getNextPageToken());
      assertTrue(all.getVersion() >= version);
      refused(
          Status.Code.INVALID_ARGUMENT,
          "BAD_PAGE_TOKEN",
          () -> viewer.lobby.listTables(ListTablesRequest.newBuilder().setPageToken("x").build()));

      // Watch from the listing's version: a join, then a start (gone from the lobby).
      try (LobbyStream<WatchLobbyResponse> watch =
          viewer.lobby.watchLobby(filter, all.getVersion())) {
        Player guest = new Player(c, "guest");
        guest.lobby.joinTable(ids.get(0));
        hosts.get(1).lobby.startTable(ids.get(1));
        boolean joinSeen = false;
        boolean startSeen = false;
        long last = all.getVersion();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!(joinSeen && startSeen) && System.nanoTime() < deadline) {
          WatchLobbyResponse batch = watch.poll(Duration.ofSeconds(5));
          if (batch == null) {
            continue;
          }
          assertTrue(batch.getVersion() > last, "versions increase");
          last = batch.getVersion();
          for (Table t : batch.getTablesList()) {
            assertTrue(ids.contains(t.getTableId()), "only tables of the filter: " + t);
            for (TableSeat s : t.getSeatsList()) {
              joinSeen |= s.getPlayerId().equals(guest.id);
            }
          }
          startSeen |= batch.getRemovedTableIdsList().contains(ids.get(1));
        }
        assertTrue(joinSeen, "the join came as a change");
        assertTrue(startSeen, "the started table left the lobby");
        assertTrue(watch.lastVersion() >= last);
      }

      // The long poll: the same changes from the same version, at once...
      WatchLobbyResponse polled = viewer.lobby.pollLobby(filter, all.getVersion(), WAIT);
      assertTrue(polled.getRemovedTableIdsList().contains(ids.get(1)), polled.toString());
      // ...and nothing new: an empty batch once the wait has passed.
      long t0 = System.nanoTime();
      WatchLobbyResponse quiet =
          viewer.lobby.pollLobby(filter, polled.getVersion(), Duration.ofMillis(300));
      assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(250));
      assertEquals(0, quiet.getTablesCount());
      assertEquals(0, quiet.getRemovedTableIdsCount());
      assertTrue(quiet.getVersion() >= polled.getVersion());
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aLobbyWatchResumesAfterACutWithoutMissingAChange(Transport transport) throws Exception {
    try (SpadesClient c = client(transport)) {
      Ruleset rules = ownQueue();
      LobbyFilter filter = LobbyFilter.newBuilder().setRuleset(rules).build();
      Player viewer = new Player(c, "viewer");
      long version = viewer.lobby.listAllTables(filter).getVersion();
      LinkedBlockingQueue<WatchLobbyResponse> batches = new LinkedBlockingQueue<>();
      AtomicInteger reconnecting = new AtomicInteger();
      LobbyStream<WatchLobbyResponse> watch =
          viewer.lobby.watchLobby(
              filter,
              version,
              new LobbyStream.Listener<WatchLobbyResponse>() {
                @Override
                public void onNext(WatchLobbyResponse batch) {
                  batches.add(batch);
                }

                @Override
                public void onReconnecting(SpadesException cause, int attempt, Duration delay) {
                  reconnecting.incrementAndGet();
                }
              });
      try {
        String first =
            new Player(c, "host").lobby.openTable(withRules(rules)).getTable().getTableId();
        assertEquals(first, tableOf(batches.poll(WAIT.toSeconds(), TimeUnit.SECONDS)));
        harness.cut();
        // Opened while the stream is down or reconnecting (by another client: the cut dropped
        // this one's connection too): it still comes, once.
        String second =
            new Player(client, "host").lobby.openTable(withRules(rules)).getTable().getTableId();
        assertEquals(second, tableOf(batches.poll(WAIT.toSeconds(), TimeUnit.SECONDS)));
        assertTrue(reconnecting.get() >= 1, "the cut was noticed");
        assertTrue(watch.reconnections() >= 1);
        assertNull(batches.poll(300, TimeUnit.MILLISECONDS), "nothing twice");
        assertThrows(IllegalStateException.class, () -> watch.poll(Duration.ZERO));
      } finally {
        watch.close();
      }
      watch.done().get(5, TimeUnit.SECONDS); // closed by the client: ends normally
    }
  }

  private static OpenTableRequest withRules(Ruleset rules) {
    return OpenTableRequest.newBuilder().setRuleset(rules).build();
  }

  private static String tableOf(WatchLobbyResponse batch) {
    assertNotNull(batch, "no lobby change came");
    assertEquals(1, batch.getTablesCount(), batch.toString());
    return batch.getTables(0).getTableId();
  }

  @Test
  void watchTableFollowsATableUntilItStarts() throws Exception {
    Player host = player("host");
    Player guest = player("guest");
    String tableId =
        host.lobby
            .openTable(OpenTableRequest.newBuilder().addBotSeats(1).addBotSeats(2).build())
            .getTable()
            .getTableId();
    LobbyStream<Table> watch = host.lobby.watchTable(tableId);
    Table first = watch.poll(WAIT);
    assertNotNull(first);
    assertEquals(TableState.TABLE_STATE_WAITING, first.getState());
    guest.lobby.joinTable(tableId);
    List<Table> seen = new ArrayList<>();
    seen.add(first);
    Table t;
    while ((t = watch.poll(WAIT)) != null) {
      seen.add(t);
    }
    watch.done().get(5, TimeUnit.SECONDS); // the server ended it: normally
    assertEquals(TableState.TABLE_STATE_STARTED, seen.get(seen.size() - 1).getState());
    for (int i = 1; i < seen.size(); i++) {
      assertTrue(seen.get(i).getVersion() > seen.get(i - 1).getVersion(), "each version once");
    }
    assertNull(watch.poll(Duration.ZERO), "ended: nothing more");
  }

  @Test
  void quickPlayAloneGetsBotsAfterTheWaitAndTheSeatPlays() throws Exception {
    Player alone = player("alone");
    Ruleset rules = ownQueue();
    Ticket ticket = alone.lobby.quickPlay(rules);
    assertEquals(TicketState.TICKET_STATE_SEARCHING, ticket.getState());
    assertEquals(Arrays.asList(alone.id), ticket.getPlayerIdsList());
    refused(Status.Code.ALREADY_EXISTS, "ALREADY_QUEUED", () -> alone.lobby.quickPlay(rules));
    long t0 = System.nanoTime();
    Placement placement = alone.lobby.awaitPlacement(ticket, WAIT);
    long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertTrue(waited < 5000, "placed after quick play's 1 s wait, not " + waited + " ms");
    Table table = placement.getTable();
    assertEquals(TableKind.TABLE_KIND_QUICK_PLAY, table.getKind());
    assertEquals(placement.getMatchId(), table.getMatchId());
    int bots = 0;
    for (TableSeat s : table.getSeatsList()) {
      bots += s.getState() == BOT ? 1 : 0;
    }
    assertEquals(3, bots);

    // After a lost connection: the latest ticket, with the same seat token, and its placement.
    Ticket latest = alone.lobby.getTicket();
    assertEquals(ticket.getTicketId(), latest.getTicketId());
    assertEquals(placement.getSeatToken(), latest.getPlacement().getSeatToken());
    assertEquals(placement.getSeatToken(), alone.lobby.awaitPlacement(WAIT).getSeatToken());
    refused(
        Status.Code.FAILED_PRECONDITION,
        "TICKET_PLACED",
        () -> alone.lobby.cancelTicket(ticket.getTicketId()));

    // The placement plays exactly like a seat of CreateMatch: a session's events, an action.
    SeatClient seat = alone.lobby.seat(placement);
    SeatView view = seat.getView();
    assertEquals(placement.getSeat(), view.getSeat());
    try (SeatSession session = seat.openSession()) {
      MatchEvent e = session.poll(WAIT);
      assertNotNull(e);
      assertTrue(e.hasHandStarted(), e.toString());
      long deadline = System.nanoTime() + WAIT.toNanos();
      while ((view = seat.getView()).getLegalActionsCount() == 0) {
        assertTrue(System.nanoTime() < deadline, "the seat's turn never came");
        session.poll(Duration.ofSeconds(1));
      }
      long lastSeq = session.send(view.getLegalActions(0)).get(10, TimeUnit.SECONDS).getLastSeq();
      assertTrue(lastSeq > 0);
    }
  }

  @Test
  void aQuickPlayResentWithItsRequestIdAnswersWithTheTicketItMade() throws Exception {
    Player alone = player("resend");
    Ruleset rules = ownQueue();
    Ticket ticket = alone.lobby.quickPlay(rules, "", false, "java-alone-game-1");
    assertEquals(TicketState.TICKET_STATE_SEARCHING, ticket.getState());
    Ticket again = alone.lobby.quickPlay(rules, "", false, "java-alone-game-1");
    assertEquals(ticket.getTicketId(), again.getTicketId(), "resent while searching");
    assertEquals(TicketState.TICKET_STATE_SEARCHING, again.getState());
    Placement placement = alone.lobby.awaitPlacement(ticket, WAIT);

    // Resent once placed (its answer lost): the same ticket, with its placement.
    Ticket resent =
        alone.lobby.quickPlay(
            QuickPlayRequest.newBuilder()
                .setRuleset(rules)
                .setRequestId("java-alone-game-1")
                .build());
    assertEquals(ticket.getTicketId(), resent.getTicketId());
    assertEquals(TicketState.TICKET_STATE_PLACED, resent.getState());
    assertEquals(placement.getSeatToken(), resent.getPlacement().getSeatToken());
    assertEquals(placement, resent.getPlacement());

    SpadesException tooLong =
        refused(
            Status.Code.INVALID_ARGUMENT,
            "BAD_REQUEST_ID",
            () -> alone.lobby.quickPlay(rules, "", false, "x".repeat(65)));
    assertEquals(1, tooLong.getFieldViolations().size(), tooLong.toString());
    assertEquals("request_id", tooLong.getFieldViolations().get(0).getField());
  }

  @Test
  void aQuickPlayWhoseAnswerIsLostIsRetriedWithItsRequestId() throws Exception {
    // The first QuickPlay reaches the server, which opens the ticket, but its answer is lost
    // (UNAVAILABLE): the retry, with the same request id, gets that ticket, not ALREADY_QUEUED.
    String quickPlay = LobbyServiceGrpc.getQuickPlayMethod().getFullMethodName();
    List<String> ids = new CopyOnWriteArrayList<>();
    AtomicInteger attempts = new AtomicInteger();
    ClientInterceptor loseFirstAnswer =
        new ClientInterceptor() {
          @Override
          public <Q, R> ClientCall<Q, R> interceptCall(
              MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
            ClientCall<Q, R> call = next.newCall(method, options);
            if (!method.getFullMethodName().equals(quickPlay)) {
              return call;
            }
            return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(call) {
              @Override
              public void start(ClientCall.Listener<R> listener, Metadata headers) {
                if (attempts.incrementAndGet() > 1) {
                  super.start(listener, headers);
                  return;
                }
                super.start(
                    new ForwardingClientCallListener.SimpleForwardingClientCallListener<R>(
                        listener) {
                      @Override
                      public void onMessage(R message) {}

                      @Override
                      public void onClose(Status status, Metadata trailers) {
                        super.onClose(
                            status.isOk()
                                ? Status.UNAVAILABLE.withDescription("the answer was lost")
                                : status,
                            status.isOk() ? new Metadata() : trailers);
                      }
                    },
                    headers);
              }

              @Override
              public void sendMessage(Q message) {
                ids.add(((QuickPlayRequest) message).getRequestId());
                super.sendMessage(message);
              }
            };
          }
        };
    ManagedChannel channel =
        OkHttpChannelBuilder.forTarget(harness.server)
            .usePlaintext()
            .intercept(loseFirstAnswer)
            .build();
    try (SpadesClient lossy =
        SpadesClient.builder(channel)
            .defaultDeadline(Duration.ofSeconds(10))
            .retryPolicy(new RetryPolicy(Duration.ofMillis(5), Duration.ofMillis(20), 2, 0, 3))
            .build()) {
      Player p = new Player(lossy, "lost");
      Ruleset rules = ownQueue();
      Ticket ticket = p.lobby.quickPlay(rules);
      assertEquals(TicketState.TICKET_STATE_SEARCHING, ticket.getState());
      assertEquals(2, ids.size(), "attempts: " + ids);
      assertFalse(ids.get(0).isEmpty());
      assertEquals(ids.get(0), ids.get(1), "one request id for both attempts");
      assertEquals(ticket.getTicketId(), p.lobby.getTicket().getTicketId(), "one ticket");

      // Another call is another game: a fresh id, refused while the ticket waits.
      SpadesException twice =
          refused(Status.Code.ALREADY_EXISTS, "ALREADY_QUEUED", () -> p.lobby.quickPlay(rules));
      assertEquals(ticket.getTicketId(), twice.getMetadata().get("ticket_id"));
      assertEquals(3, ids.size(), "attempts: " + ids);
      assertFalse(ids.get(2).isEmpty());
      assertNotEquals(ids.get(0), ids.get(2), "a fresh request id for another call");
      p.lobby.cancelTicket(ticket.getTicketId());
    } finally {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void aPartyOfTwoSitsAsPartners() throws Exception {
    Ruleset rules = ownQueue();
    Player ann = player("ann");
    Player ben = player("ben");
    Ticket first = ann.lobby.quickPlay(rules, ben.id);
    assertEquals(TicketState.TICKET_STATE_WAITING_FOR_PARTNER, first.getState());
    Ticket joined = ben.lobby.quickPlay(rules, ann.id);
    assertEquals(first.getTicketId(), joined.getTicketId());
    assertEquals(TicketState.TICKET_STATE_SEARCHING, joined.getState());
    assertEquals(Arrays.asList(ann.id, ben.id), joined.getPlayerIdsList());
    Placement a = ann.lobby.awaitPlacement(first, WAIT);
    Placement b = ben.lobby.awaitPlacement(joined, WAIT);
    assertEquals(a.getMatchId(), b.getMatchId());
    assertEquals(2, Math.abs(a.getSeat() - b.getSeat()), "partners sit opposite");
    assertNotEquals(a.getSeatToken(), b.getSeatToken());
    assertEquals(a.getSeat(), ann.lobby.seat(a).getView().getSeat());
    assertEquals(b.getSeat(), ben.lobby.seat(b).getView().getSeat());
  }

  @Test
  void aTicketIsWatchedAndCancelled() throws Exception {
    Ruleset rules = ownQueue();
    Player p = player("p");
    // Waiting for a partner who never asks: never placed while the test runs.
    Ticket ticket = p.lobby.quickPlay(rules, player("absent").id);
    assertEquals(TicketState.TICKET_STATE_WAITING_FOR_PARTNER, ticket.getState());
    SpadesException twice =
        refused(Status.Code.ALREADY_EXISTS, "ALREADY_QUEUED", () -> p.lobby.quickPlay(rules));
    assertEquals(ticket.getTicketId(), twice.getMetadata().get("ticket_id"));
    CompletableFuture<Void> ended = new CompletableFuture<>();
    LinkedBlockingQueue<Ticket> seen = new LinkedBlockingQueue<>();
    LobbyStream<Ticket> watch =
        p.lobby.watchTicket(
            "",
            new LobbyStream.Listener<Ticket>() {
              @Override
              public void onNext(Ticket t) {
                seen.add(t);
              }

              @Override
              public void onClosed(SpadesException error) {
                if (error == null) {
                  ended.complete(null);
                } else {
                  ended.completeExceptionally(error);
                }
              }
            });
    Ticket now = seen.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertNotNull(now);
    assertEquals(ticket.getTicketId(), now.getTicketId());
    assertEquals(TicketState.TICKET_STATE_WAITING_FOR_PARTNER, now.getState());

    Ticket cancelled = p.lobby.cancelTicket(ticket.getTicketId());
    assertEquals(TicketState.TICKET_STATE_CANCELLED, cancelled.getState());
    assertEquals("cancelled", cancelled.getCancelReason());
    Ticket last = seen.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertNotNull(last);
    assertEquals(TicketState.TICKET_STATE_CANCELLED, last.getState());
    ended.get(5, TimeUnit.SECONDS); // the stream ends normally once cancelled
    watch.done().get(5, TimeUnit.SECONDS);
    // Idempotent; and waiting for its placement says why there will be none.
    assertEquals(TicketState.TICKET_STATE_CANCELLED, p.lobby.cancelTicket().getState());
    SpadesException never =
        refused(
            Status.Code.FAILED_PRECONDITION,
            "TICKET_CANCELLED",
            () -> p.lobby.awaitPlacement(cancelled, WAIT));
    assertEquals("cancelled", never.getMetadata().get("cancel_reason"));
    assertEquals("spades.client", never.getDomain());
    // Free to ask again.
    Ticket fresh = p.lobby.quickPlay(rules, player("absent").id);
    assertNotEquals(ticket.getTicketId(), fresh.getTicketId());
    p.lobby.cancelTicket();
    refused(
        Status.Code.NOT_FOUND,
        "TICKET_NOT_FOUND",
        () -> player("nobody").lobby.getTicket(ticket.getTicketId()));
  }

  @Test
  void aRematchWithTheSameSeatsOnceEveryHumanAccepts() throws Exception {
    Player host = player("host");
    Player guest = player("guest");
    OpenTableResponse opened =
        host.lobby.openTable(
            OpenTableRequest.newBuilder().setRuleset(QUICK).addBotSeats(1).addBotSeats(3).build());
    JoinTableResponse joined = guest.lobby.joinTable(opened.getTable().getTableId());
    assertEquals(TableState.TABLE_STATE_STARTED, joined.getTable().getState());
    SeatClient hostSeat = host.lobby.seat(opened);
    SeatClient guestSeat = guest.lobby.seat(joined);
    refused(Status.Code.FAILED_PRECONDITION, "MATCH_NOT_OVER", hostSeat::rematch);
    playOut(hostSeat, guestSeat);

    RematchResponse first = hostSeat.rematch();
    assertEquals(TableState.TABLE_STATE_WAITING, first.getTable().getState());
    assertEquals(TableKind.TABLE_KIND_REMATCH, first.getTable().getKind());
    assertEquals(opened.getTable().getTableId(), first.getTable().getRematchOf());
    assertEquals(0, first.getSeat());
    List<Boolean> accepted = new ArrayList<>();
    for (TableSeat s : first.getTable().getSeatsList()) {
      accepted.add(s.getAccepted());
    }
    assertEquals(Arrays.asList(true, false, false, false), accepted);

    RematchResponse second = guestSeat.awaitRematch(WAIT); // accepts: every human has
    assertEquals(TableState.TABLE_STATE_STARTED, second.getTable().getState());
    String newMatch = second.getTable().getMatchId();
    assertNotEquals(opened.getTable().getTableId(), newMatch);
    // The first asker learns it by asking again (a long poll) and gets its token.
    RematchResponse again = hostSeat.rematch(first.getTable().getVersion(), WAIT);
    assertEquals(TableState.TABLE_STATE_STARTED, again.getTable().getState());
    SeatView view = hostSeat.rematchSeat(again).getView();
    assertEquals(0, view.getSeat());
    assertEquals(newMatch, hostSeat.rematchSeat(again).getMatchId());
    assertEquals(SeatControl.SEAT_CONTROL_BOT, view.getSeats(1).getControl());
    assertEquals(2, guestSeat.rematchSeat(second).getView().getSeat());
    // A player credential is no seat token. (The server reads a JWT of at most 256 characters
    // as <match_id>.<secret> of another match, PERMISSION_DENIED WRONG_MATCH; a longer one as a
    // malformed seat token, UNAUTHENTICATED.)
    SpadesException notASeat =
        assertThrows(
            SpadesException.class,
            () -> client.seat(opened.getTable().getTableId(), host.credential).rematch());
    assertTrue(
        notASeat.getCode() == Status.Code.UNAUTHENTICATED
            || "WRONG_MATCH".equals(notASeat.getReason()),
        notASeat.toString());
  }

  @Test
  void aDeclinedRematchCloses() throws Exception {
    Player host = player("host");
    Player guest = player("guest");
    OpenTableResponse opened =
        host.lobby.openTable(
            OpenTableRequest.newBuilder().setRuleset(QUICK).addBotSeats(1).addBotSeats(3).build());
    JoinTableResponse joined = guest.lobby.joinTable(opened.getTable().getTableId());
    SeatClient hostSeat = host.lobby.seat(opened);
    SeatClient guestSeat = guest.lobby.seat(joined);
    playOut(hostSeat, guestSeat);
    CompletableFuture<RematchResponse> waiting =
        CompletableFuture.supplyAsync(() -> hostSeat.awaitRematch(WAIT));
    // The guest declines, most likely while the host waits (or first: it closes all the same).
    Thread.sleep(200);
    RematchResponse declined = guestSeat.declineRematch();
    assertEquals(TableState.TABLE_STATE_CLOSED, declined.getTable().getState());
    assertEquals("declined", declined.getTable().getCloseReason());
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> waiting.get(30, TimeUnit.SECONDS));
    SpadesException closed = (SpadesException) e.getCause();
    assertEquals("TABLE_CLOSED", closed.getReason());
    assertEquals("declined", closed.getMetadata().get("close_reason"));
  }

  /** Plays both human seats with the first legal action until the match is over. */
  private static void playOut(SeatClient... seats) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      assertTrue(System.nanoTime() < deadline, "the match did not end within 60 s");
      boolean acted = false;
      for (SeatClient seat : seats) {
        SeatView v = seat.getView();
        if (v.getPhase() == Phase.PHASE_MATCH_OVER) {
          return;
        }
        if (v.getLegalActionsCount() > 0) {
          seat.submitAction(v.getLegalActions(0));
          acted = true;
        }
      }
      if (!acted) {
        Thread.sleep(5);
      }
    }
  }

  @Test
  void refusedCredentialsSayWhy() throws Exception {
    String good = harness.credential("cred-" + UUID.randomUUID(), "Cred");
    String[] parts = good.split("\\.");
    byte[] otherSignature = new byte[32];
    String forged =
        parts[0]
            + "."
            + parts[1]
            + "."
            + Base64.getUrlEncoder().withoutPadding().encodeToString(otherSignature);
    String[][] cases = {
      {"", "CREDENTIAL_REQUIRED"},
      {"not.a.jwt", "MALFORMED_CREDENTIAL"},
      {forged, "BAD_SIGNATURE"},
    };
    for (String[] c : cases) {
      LobbyClient lobby = client.lobby(c[0]);
      refused(
          Status.Code.UNAUTHENTICATED,
          c[1],
          () -> lobby.listTables(ListTablesRequest.getDefaultInstance()));
      refused(Status.Code.UNAUTHENTICATED, c[1], () -> lobby.quickPlay(Ruleset.getDefaultInstance()));
      // A stream is refused the same way, and not retried.
      LobbyStream<Ticket> watch = lobby.watchTicket("");
      SpadesException e = assertThrows(SpadesException.class, () -> watch.poll(WAIT));
      assertEquals(c[1], e.getReason());
      assertEquals(0, watch.reconnections());
      assertThrows(ExecutionException.class, () -> watch.done().get(5, TimeUnit.SECONDS));
    }
    // A supplier is asked for the credential on every call: a refreshed one is used at once.
    AtomicInteger asked = new AtomicInteger();
    Supplier<String> refreshing = () -> asked.incrementAndGet() == 1 ? "not.a.jwt" : good;
    LobbyClient lobby = client.lobby(refreshing);
    refused(
        Status.Code.UNAUTHENTICATED,
        "MALFORMED_CREDENTIAL",
        () -> lobby.listTables(ListTablesRequest.getDefaultInstance()));
    assertNotNull(lobby.listTables(ListTablesRequest.getDefaultInstance()));
    assertEquals(2, asked.get());
  }

  @Test
  void closingTheClientEndsItsLobbyStreams() throws Exception {
    SpadesClient c = client(Transport.OKHTTP);
    Player viewer = new Player(c, "viewer");
    LobbyStream<WatchLobbyResponse> watch = viewer.lobby.watchLobby(null, 0);
    c.close();
    watch.done().get(10, TimeUnit.SECONDS);
    assertNull(watch.poll(Duration.ZERO));
    assertFalse(watch.done().isCompletedExceptionally());
  }
}

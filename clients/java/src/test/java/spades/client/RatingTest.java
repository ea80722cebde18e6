package spades.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import spades.v1.Lobby.GetLeaderboardRequest;
import spades.v1.Lobby.GetLeaderboardResponse;
import spades.v1.Lobby.JoinTableResponse;
import spades.v1.Lobby.LeaderboardEntry;
import spades.v1.Lobby.OpenTableRequest;
import spades.v1.Lobby.OpenTableResponse;
import spades.v1.Lobby.PlayerProfile;
import spades.v1.Lobby.PlayerRating;
import spades.v1.Lobby.Table;
import spades.v1.Lobby.TableState;
import spades.v1.Lobby.Ticket;
import spades.v1.Lobby.TicketState;
import spades.v1.Spades.Action;
import spades.v1.Spades.Phase;
import spades.v1.Spades.Ruleset;
import spades.v1.Spades.SeatView;

/**
 * Rated play through the wrapper against a real server of its own ({@code --rating-min-games 1}:
 * one rated match puts a player on the leaderboard): a rated table of four players played out,
 * then each player's profile and the leaderboard's pages; rated quick play; the refusals.
 *
 * <p>Only {@link #aRatedMatchRatesItsPlayersAndTheLeaderboardPagesThroughThem} finishes a rated
 * match on this server, so the leaderboard holds exactly its four players.
 */
class RatingTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  /** The classic preset, ended by the first hand that scores. */
  private static final Ruleset QUICK =
      Ruleset.newBuilder().setPreset("classic").setTargetScore(1).setNoMercyScore(true).build();

  private static Harness harness;
  private static SpadesClient client;

  @BeforeAll
  static void startServer() throws Exception {
    harness = Harness.start("--", "--rating-min-games", "1");
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

  /** A player with a unique id and a credential serve.py signed. */
  private static final class Player {
    final String id;
    final String name;
    final LobbyClient lobby;

    Player(String prefix) throws Exception {
      this.id = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
      this.name = prefix;
      this.lobby = client.lobby(harness.credential(id, prefix));
    }
  }

  private static SpadesException refused(Status.Code code, String reason, Executable call) {
    SpadesException e = assertThrows(SpadesException.class, call);
    assertEquals(code, e.getCode(), e.toString());
    assertEquals(reason, e.getReason(), e.toString());
    return e;
  }

  @Test
  void aRatedMatchRatesItsPlayersAndTheLeaderboardPagesThroughThem() throws Exception {
    Player[] players = {
      new Player("north"), new Player("east"), new Player("south"), new Player("west")
    };
    OpenTableResponse opened = players[0].lobby.openTable(QUICK, true);
    assertTrue(opened.getTable().getRated(), opened.getTable().toString());
    assertEquals("classic", opened.getTable().getRatingPool());
    String tableId = opened.getTable().getTableId();
    List<SeatClient> seats = new ArrayList<>();
    seats.add(players[0].lobby.seat(opened));
    for (int i = 1; i < 4; i++) {
      JoinTableResponse joined = players[i].lobby.joinTable(tableId, i);
      assertEquals(i, joined.getSeat());
      seats.add(players[i].lobby.seat(joined));
    }
    Table started = players[0].lobby.awaitStart(tableId, WAIT);
    assertEquals(TableState.TABLE_STATE_STARTED, started.getState());
    assertTrue(started.getRated(), "four humans: still rated");
    assertEquals("classic", started.getRatingPool());

    playOut(seats);

    // The result is recorded just after the match ends: each profile shows it a moment later.
    Map<String, PlayerProfile> profiles = new HashMap<>();
    for (Player p : players) {
      PlayerProfile profile = awaitRated(p.lobby, p.id);
      profiles.put(p.id, profile);
      assertEquals(p.id, profile.getPlayerId());
      assertEquals(p.name, profile.getName());
      PlayerRating rating = rating(profile, "classic");
      assertEquals(1, rating.getGames());
      assertEquals(1, rating.getWins() + rating.getLosses());
      assertEquals(rating.getMu() - 3 * rating.getSigma(), rating.getConservative(), 1e-6);
      assertTrue(rating.getRank() >= 1 && rating.getRank() <= 4, rating.toString());
      assertEquals(1, profile.getWithHumans().getMatches());
      assertTrue(profile.getWithHumans().getHands() >= 1);
      assertEquals(0, profile.getWithBots().getMatches());
      assertTrue(profile.getLastPlayedMs() > 0);
    }
    // The caller's own profile when no id is given; everyone sees the same one.
    assertEquals(profiles.get(players[1].id), players[1].lobby.getProfile());
    assertEquals(profiles.get(players[1].id), players[0].lobby.getProfile(players[1].id));

    // The top page: ranks from 1, best first, the same as the profiles say.
    LobbyClient lobby = players[0].lobby;
    GetLeaderboardResponse top = lobby.getLeaderboard("classic");
    assertEquals("classic", top.getPool());
    assertEquals(4, top.getTotalPlayers());
    assertEquals(1, top.getMinGames());
    assertEquals(4, top.getEntriesCount());
    assertEquals("", top.getNextPageToken());
    assertEquals("", top.getPreviousPageToken());
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < 4; i++) {
      LeaderboardEntry e = top.getEntries(i);
      assertEquals(i + 1, e.getRank());
      assertEquals(i + 1, e.getRating().getRank());
      assertEquals(rating(profiles.get(e.getPlayerId()), "classic"), e.getRating());
      assertEquals(profiles.get(e.getPlayerId()).getName(), e.getName());
      if (i > 0) {
        assertTrue(
            top.getEntries(i - 1).getRating().getConservative()
                >= e.getRating().getConservative(),
            "best first");
      }
      ids.add(e.getPlayerId());
    }
    assertEquals(profiles.keySet(), ids);
    assertEquals(top, lobby.getLeaderboard(""), "the server's default pool is classic");

    // Pages of three: the first has a next token only, the second a previous one only.
    GetLeaderboardResponse first = lobby.getLeaderboard("classic", 3, "");
    assertEquals(3, first.getEntriesCount());
    assertFalse(first.getNextPageToken().isEmpty());
    assertEquals("", first.getPreviousPageToken());
    assertNull(lobby.previousLeaderboardPage(first, 3));
    GetLeaderboardResponse second = lobby.nextLeaderboardPage(first, 3);
    assertNotNull(second);
    assertEquals(1, second.getEntriesCount());
    assertEquals(4, second.getEntries(0).getRank());
    assertEquals(top.getEntries(3), second.getEntries(0));
    assertEquals("", second.getNextPageToken());
    assertFalse(second.getPreviousPageToken().isEmpty());
    assertNull(lobby.nextLeaderboardPage(second, 3));
    assertEquals(first.getEntriesList(), lobby.previousLeaderboardPage(second, 3).getEntriesList());

    // Walking pages of one: four pages, ranks 1..4, the same players in the same order.
    List<LeaderboardEntry> walked = new ArrayList<>();
    int pages = 0;
    for (GetLeaderboardResponse page : lobby.leaderboardPages("classic", 1)) {
      pages++;
      assertEquals(1, page.getEntriesCount());
      assertEquals(pages == 1, page.getPreviousPageToken().isEmpty());
      assertEquals(pages == 4, page.getNextPageToken().isEmpty());
      walked.addAll(page.getEntriesList());
    }
    assertEquals(4, pages);
    assertEquals(top.getEntriesList(), walked);

    // Around a player: the page (of two) that holds them, cut from the top.
    for (LeaderboardEntry e : top.getEntriesList()) {
      GetLeaderboardResponse around = lobby.getLeaderboardAround("classic", e.getPlayerId(), 2);
      assertEquals(2, around.getEntriesCount());
      int firstRank = (e.getRank() - 1) / 2 * 2 + 1;
      assertEquals(firstRank, around.getEntries(0).getRank());
      assertTrue(around.getEntriesList().contains(e), around.toString());
      assertEquals(firstRank == 1, around.getPreviousPageToken().isEmpty());
      assertEquals(firstRank == 3, around.getNextPageToken().isEmpty());
    }
    GetLeaderboardResponse last =
        lobby.getLeaderboardAround("classic", top.getEntries(3).getPlayerId(), 2);
    List<LeaderboardEntry> fromLast = new ArrayList<>();
    for (GetLeaderboardResponse page :
        lobby.leaderboardPages(
            GetLeaderboardRequest.newBuilder()
                .setPool("classic")
                .setPageSize(2)
                .setPageToken(last.getPreviousPageToken())
                .build())) {
      fromLast.addAll(page.getEntriesList());
    }
    assertEquals(top.getEntriesList(), fromLast, "from the page before the last, to the end");

    // A token is its pool's only.
    refused(
        Status.Code.INVALID_ARGUMENT,
        "BAD_PAGE_TOKEN",
        () -> lobby.getLeaderboard("polish", 3, first.getNextPageToken()));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "TOKEN_AND_PLAYER",
        () ->
            lobby.getLeaderboard(
                GetLeaderboardRequest.newBuilder()
                    .setPool("classic")
                    .setPageToken(first.getNextPageToken())
                    .setAroundPlayerId(players[0].id)
                    .build()));
    // Another pool has nobody yet.
    GetLeaderboardResponse polish = lobby.getLeaderboard("polish");
    assertEquals("polish", polish.getPool());
    assertEquals(0, polish.getTotalPlayers());
    assertEquals(0, polish.getEntriesCount());
    refused(
        Status.Code.NOT_FOUND,
        "PLAYER_NOT_RATED",
        () -> lobby.getLeaderboardAround("polish", players[0].id, 0));
  }

  @Test
  void aRatedTableRefusesBotSeatsAndBecomesUnratedWhenBotsFillIt() throws Exception {
    Player host = new Player("host");
    refused(
        Status.Code.INVALID_ARGUMENT,
        "RATED_WITHOUT_BOTS",
        () ->
            host.lobby.openTable(
                OpenTableRequest.newBuilder()
                    .setRuleset(QUICK)
                    .setRated(true)
                    .addBotSeats(1)
                    .build()));
    OpenTableResponse opened = host.lobby.openTable(QUICK, true);
    assertTrue(opened.getTable().getRated());
    Table started = host.lobby.startTable(opened.getTable().getTableId());
    assertEquals(TableState.TABLE_STATE_STARTED, started.getState());
    assertFalse(started.getRated(), "a bot seated at the start: not rated");
    // An unrated table is the default.
    Player other = new Player("other");
    OpenTableResponse unrated = other.lobby.openTable(QUICK, false);
    assertFalse(unrated.getTable().getRated());
    assertEquals("", unrated.getTable().getRatingPool());
    other.lobby.leaveTable(unrated.getTable().getTableId());
  }

  @Test
  void aRatedTicketSaysSo() throws Exception {
    Player p = new Player("rated");
    // Waiting for a partner who never asks: never placed while the test runs.
    Ticket ticket = p.lobby.quickPlay(QUICK, new Player("absent").id, true);
    assertTrue(ticket.getRated());
    assertEquals(TicketState.TICKET_STATE_WAITING_FOR_PARTNER, ticket.getState());
    assertTrue(p.lobby.getTicket(ticket.getTicketId()).getRated());
    assertEquals(TicketState.TICKET_STATE_CANCELLED, p.lobby.cancelTicket().getState());
    Ticket unrated = p.lobby.quickPlay(QUICK, new Player("absent").id);
    assertFalse(unrated.getRated());
    p.lobby.cancelTicket();
  }

  @Test
  void badInputsAreRefusedWithTheirReasons() throws Exception {
    Player p = new Player("asker");
    refused(Status.Code.NOT_FOUND, "POOL_NOT_FOUND", () -> p.lobby.getLeaderboard("no-such-pool"));
    refused(Status.Code.INVALID_ARGUMENT, "BAD_POOL", () -> p.lobby.getLeaderboard("Not A Pool!"));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "BAD_PAGE_TOKEN",
        () -> p.lobby.getLeaderboard("classic", 0, "bogus-token"));
    refused(
        Status.Code.INVALID_ARGUMENT,
        "BAD_PAGE_SIZE",
        () -> p.lobby.getLeaderboard("classic", 201, ""));
    refused(
        Status.Code.NOT_FOUND,
        "PLAYER_NOT_RATED",
        () -> p.lobby.getLeaderboardAround("classic", "nobody-" + UUID.randomUUID(), 0));
    refused(
        Status.Code.NOT_FOUND,
        "PLAYER_NOT_FOUND",
        () -> p.lobby.getProfile("nobody-" + UUID.randomUUID()));
    refused(Status.Code.NOT_FOUND, "PLAYER_NOT_FOUND", () -> p.lobby.getProfile());
    refused(
        Status.Code.INVALID_ARGUMENT, "BAD_PLAYER_ID", () -> p.lobby.getProfile("x".repeat(129)));
    // Like every lobby call, they need a player credential.
    refused(
        Status.Code.UNAUTHENTICATED,
        "CREDENTIAL_REQUIRED",
        () -> client.lobby("").getLeaderboard("classic"));
    refused(
        Status.Code.UNAUTHENTICATED, "CREDENTIAL_REQUIRED", () -> client.lobby("").getProfile());
  }

  /** The player's profile once it holds a rated game (up to 20 s after the match ended). */
  private static PlayerProfile awaitRated(LobbyClient lobby, String playerId) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      try {
        PlayerProfile profile = lobby.getProfile(playerId);
        for (PlayerRating r : profile.getRatingsList()) {
          if (r.getPool().equals("classic") && r.getGames() > 0) {
            return profile;
          }
        }
      } catch (SpadesException e) {
        if (!"PLAYER_NOT_FOUND".equals(e.getReason())) {
          throw e;
        }
      }
      assertTrue(System.nanoTime() < deadline, playerId + "'s result was not recorded in time");
      Thread.sleep(100);
    }
  }

  private static PlayerRating rating(PlayerProfile profile, String pool) {
    for (PlayerRating r : profile.getRatingsList()) {
      if (r.getPool().equals(pool)) {
        return r;
      }
    }
    throw new AssertionError(profile.getPlayerId() + " has no rating in " + pool + ": " + profile);
  }

  /**
   * Plays the seats until the match is over: looks at the cards when it may (never blind nil),
   * bids 3 when it may, else the first legal action, so one hand ends a match to 1 point.
   */
  private static void playOut(List<SeatClient> seats) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (true) {
      assertTrue(System.nanoTime() < deadline, "the match did not end within 120 s");
      boolean acted = false;
      for (SeatClient seat : seats) {
        SeatView v = seat.getView();
        if (v.getPhase() == Phase.PHASE_MATCH_OVER) {
          return;
        }
        if (v.getLegalActionsCount() > 0) {
          seat.submitAction(choose(v.getLegalActionsList()));
          acted = true;
        }
      }
      if (!acted) {
        Thread.sleep(5);
      }
    }
  }

  private static Action choose(List<Action> legal) {
    for (Action a : legal) {
      if (a.hasLook()) {
        return a;
      }
    }
    for (Action a : legal) {
      if (a.hasBid() && a.getBid().getTricks() == 3) {
        return a;
      }
    }
    return legal.get(0);
  }
}

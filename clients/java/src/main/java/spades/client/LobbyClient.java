package spades.client;

import io.grpc.Status;
import io.grpc.stub.MetadataUtils;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.UUID;
import java.util.function.Supplier;
import spades.v1.Lobby.CancelTicketRequest;
import spades.v1.Lobby.GetLeaderboardRequest;
import spades.v1.Lobby.GetLeaderboardResponse;
import spades.v1.Lobby.GetProfileRequest;
import spades.v1.Lobby.GetTableRequest;
import spades.v1.Lobby.GetTicketRequest;
import spades.v1.Lobby.JoinTableRequest;
import spades.v1.Lobby.JoinTableResponse;
import spades.v1.Lobby.LeaveTableRequest;
import spades.v1.Lobby.ListTablesRequest;
import spades.v1.Lobby.ListTablesResponse;
import spades.v1.Lobby.LobbyFilter;
import spades.v1.Lobby.OpenTableRequest;
import spades.v1.Lobby.OpenTableResponse;
import spades.v1.Lobby.Placement;
import spades.v1.Lobby.PlayerProfile;
import spades.v1.Lobby.PollLobbyRequest;
import spades.v1.Lobby.QuickPlayRequest;
import spades.v1.Lobby.StartTableRequest;
import spades.v1.Lobby.Table;
import spades.v1.Lobby.TableState;
import spades.v1.Lobby.Ticket;
import spades.v1.Lobby.TicketState;
import spades.v1.Lobby.WatchLobbyRequest;
import spades.v1.Lobby.WatchLobbyResponse;
import spades.v1.Lobby.WatchTableRequest;
import spades.v1.Lobby.WatchTableResponse;
import spades.v1.Lobby.WatchTicketRequest;
import spades.v1.Lobby.WatchTicketResponse;
import spades.v1.LobbyServiceGrpc;
import spades.v1.LobbyServiceGrpc.LobbyServiceBlockingStub;
import spades.v1.Spades.Ruleset;

/**
 * The lobby as one player sees it ({@code spades.v1.LobbyService}, made by {@link
 * SpadesClient#lobby}): tables that wait for players, the lobby that lists them, invitations by
 * code, quick play, and rated play's leaderboards and profiles. Every call carries the player's
 * credential, a JWT the game's identity provider signed ({@code authorization: Bearer <jwt>}).
 *
 * <p>A table is a match that is not dealt yet: its id is the id of the match it becomes, and the
 * seat token a player gets on sitting down ({@link #openTable}, {@link #joinTable}) or on being
 * placed by quick play ({@link #awaitPlacement}) plays that seat once the table has started,
 * exactly like a token from {@code CreateMatch}: {@link #seat(Placement)} and its siblings give
 * the {@link SeatClient} (its {@link SeatClient#openSession() session}, views, actions). Before
 * the start the match does not exist: {@code FAILED_PRECONDITION TABLE_NOT_STARTED}.
 *
 * <p>Every change to a table or a ticket raises its {@code version}; the long polls ({@link
 * #getTable(String, long, Duration)}, {@link #getTicket(String, long, Duration)}, {@link
 * #pollLobby}) take the version last seen and answer as soon as there is a newer one, or
 * unchanged once {@code wait} has passed (the server cuts a longer wait to its {@code
 * --poll-max-wait-ms}, 25 s by default). The streams ({@link #watchTable}, {@link #watchTicket},
 * {@link #watchLobby}) deliver the same through a {@link LobbyStream}.
 *
 * <p>Calls block the calling thread (not Android's main thread) for at most the client's default
 * deadline, plus the wait of a long poll, and throw {@link SpadesException} when refused: switch
 * on {@link SpadesException#getReason()} ({@code INVITE_NOT_FOUND}, {@code ALREADY_SEATED},
 * {@code TABLE_STARTED}, {@code CREDENTIAL_EXPIRED}, ...). The calls that change nothing or are
 * idempotent on the server ({@code getTable}, {@code listTables}, {@code pollLobby}, {@code
 * getTicket}, {@code joinTable}, {@code quickPlay}, {@code cancelTicket}, {@code getLeaderboard},
 * {@code getProfile}) are retried after a dropped connection ({@code quickPlay} with one request
 * id, so a retry whose first answer was lost gets the ticket that first attempt made); {@code
 * openTable}, {@code leaveTable} and {@code startTable} are not. The object is thread-safe and
 * cheap: make one per player.
 */
public final class LobbyClient {
  /** The longest single long poll the waiting helpers make (below the server's usual 25 s cap). */
  private static final Duration LONG_POLL = Duration.ofSeconds(20);

  private final SpadesClient client;
  private final Supplier<String> credential;

  LobbyClient(SpadesClient client, Supplier<String> credential) {
    this.client = client;
    this.credential = credential;
  }

  private LobbyServiceBlockingStub stub() {
    return client.lobbyStub(credential.get(), Duration.ZERO);
  }

  private LobbyServiceBlockingStub stub(Duration wait) {
    return client.lobbyStub(credential.get(), wait);
  }

  /** A wait in milliseconds as the requests take it (0 to Integer.MAX_VALUE). */
  static int waitMs(Duration wait) {
    if (wait == null || wait.isNegative()) {
      return 0;
    }
    return wait.toMillis() > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) wait.toMillis();
  }

  // -- tables ---------------------------------------------------------------------------------

  /**
   * Opens a public table of the classic rules and sits at seat 0; it waits for three more
   * players. See {@link #openTable(OpenTableRequest)}.
   *
   * @return the table, the caller's seat and its seat token
   * @throws SpadesException if refused
   */
  public OpenTableResponse openTable() {
    return openTable(OpenTableRequest.getDefaultInstance());
  }

  /**
   * Opens a table: the caller sits at it ({@code seat}, seat 0 by default), bots take {@code
   * bot_seats}, and it waits for players until its seats are taken, then it is dealt; {@code
   * TABLE_VISIBILITY_INVITE_ONLY} keeps it out of the lobby, to be joined by its {@code
   * invite_code} (the answer's table has it). A player sits at one waiting table at a time and
   * holds no ticket meanwhile ({@code ALREADY_SEATED}, {@code ALREADY_QUEUED}). {@code rated}
   * asks for a rated table (see {@link #openTable(Ruleset, boolean)}); with {@code bot_seats} it
   * is refused, {@code INVALID_ARGUMENT RATED_WITHOUT_BOTS}. Not retried.
   *
   * @param request the table's rules, seats and settings
   * @return the table, the caller's seat and its seat token (it plays once the table started)
   * @throws SpadesException if refused ({@code INVALID_RULESET}, {@code BAD_SEAT}, ...)
   */
  public OpenTableResponse openTable(OpenTableRequest request) {
    return SpadesClient.call(() -> stub().openTable(request));
  }

  /**
   * Opens a public table of {@code ruleset} and sits at seat 0, rated or not. A rated table is
   * for humans only: its match counts in the rating pool of its rules ({@code Table.rating_pool})
   * once all its seats are taken by players; bots filling open seats (the host's {@link
   * #startTable}, or the wait running out) make it unrated ({@code Table.rated} false) unless the
   * server allows bots in rated play. Not retried.
   *
   * @param ruleset the rules (null or empty: classic)
   * @param rated whether the match rates its players
   * @return the table ({@code rated} and {@code rating_pool} set if rated), the caller's seat and
   *     its seat token
   * @throws SpadesException if refused ({@code INVALID_RULESET}, {@code ALREADY_SEATED}, ...)
   */
  public OpenTableResponse openTable(Ruleset ruleset, boolean rated) {
    OpenTableRequest.Builder b = OpenTableRequest.newBuilder().setRated(rated);
    if (ruleset != null) {
      b.setRuleset(ruleset);
    }
    return openTable(b.build());
  }

  /**
   * Sits at a public table (or one the caller sits at already), at its lowest open seat.
   *
   * @param tableId the table's id
   * @return the table after the caller sat down, the seat and its seat token
   * @throws SpadesException if refused ({@code TABLE_NOT_FOUND}, {@code TABLE_STARTED}, {@code
   *     INVITE_REQUIRED}, ...)
   */
  public JoinTableResponse joinTable(String tableId) {
    return joinTable(JoinTableRequest.newBuilder().setTableId(tableId).build());
  }

  /**
   * Sits at a public table at {@code seat}.
   *
   * @param tableId the table's id
   * @param seat the seat wanted
   * @return the table after the caller sat down, the seat and its seat token
   * @throws SpadesException if refused ({@code SEAT_TAKEN}, ...)
   */
  public JoinTableResponse joinTable(String tableId, int seat) {
    return joinTable(JoinTableRequest.newBuilder().setTableId(tableId).setSeat(seat).build());
  }

  /**
   * Sits at an invite-only table by its invite code (as shown or read aloud: case, spaces and
   * dashes do not matter), at its lowest open seat. A wrong code is {@code NOT_FOUND
   * INVITE_NOT_FOUND}; too many of them, {@code RESOURCE_EXHAUSTED INVITE_ATTEMPTS} (its
   * metadata {@code retry_after_ms} says how long to wait).
   *
   * @param inviteCode the code
   * @return the table after the caller sat down, the seat and its seat token
   * @throws SpadesException if refused
   */
  public JoinTableResponse joinByInviteCode(String inviteCode) {
    return joinTable(JoinTableRequest.newBuilder().setInviteCode(inviteCode).build());
  }

  /**
   * Sits at an invite-only table by its invite code, at {@code seat}.
   *
   * @param inviteCode the code
   * @param seat the seat wanted
   * @return the table after the caller sat down, the seat and its seat token
   * @throws SpadesException if refused
   */
  public JoinTableResponse joinByInviteCode(String inviteCode, int seat) {
    return joinTable(
        JoinTableRequest.newBuilder().setInviteCode(inviteCode).setSeat(seat).build());
  }

  /**
   * Sits at a table (its id or its invite code, and maybe a seat). Idempotent on the server (a
   * player seated there gets the same seat and token again), so retried after a dropped
   * connection. The table starts when its last seat is taken: the answer's table is then {@code
   * STARTED} (or {@code STARTING} for a moment).
   *
   * @param request the table and the seat
   * @return the table after the caller sat down, the seat and its seat token
   * @throws SpadesException if refused
   */
  public JoinTableResponse joinTable(JoinTableRequest request) {
    return client.retrying(() -> stub().joinTable(request));
  }

  /**
   * Stands up from a waiting table: the seat is open again and its seat token worthless; the
   * host's leaving passes the host on, the last player's closes the table ({@code close_reason}
   * "empty"). Not retried.
   *
   * @param tableId the table's id
   * @return the table after the caller left
   * @throws SpadesException if refused ({@code NOT_SEATED}, {@code TABLE_STARTED}, ...)
   */
  public Table leaveTable(String tableId) {
    LeaveTableRequest request = LeaveTableRequest.newBuilder().setTableId(tableId).build();
    return SpadesClient.call(() -> stub().leaveTable(request)).getTable();
  }

  /**
   * Starts the table now (the host only): bots take the open seats and the match is dealt. Not
   * retried.
   *
   * @param tableId the table's id
   * @return the table, {@code STARTED}
   * @throws SpadesException if refused ({@code NOT_HOST}, ...)
   */
  public Table startTable(String tableId) {
    StartTableRequest request = StartTableRequest.newBuilder().setTableId(tableId).build();
    return SpadesClient.call(() -> stub().startTable(request)).getTable();
  }

  /**
   * A table as it is now: a public one, or one the caller sits at.
   *
   * @param tableId the table's id
   * @return the table
   * @throws SpadesException if refused ({@code TABLE_NOT_FOUND}, {@code INVITE_REQUIRED})
   */
  public Table getTable(String tableId) {
    return getTable(GetTableRequest.newBuilder().setTableId(tableId).build());
  }

  /**
   * A table as a long poll: at once if its version is past {@code afterVersion}, else as soon as
   * it changes, or as it is once {@code wait} has passed.
   *
   * @param tableId the table's id
   * @param afterVersion the version last seen (0: answer at once)
   * @param wait how long to wait for a change
   * @return the table
   * @throws SpadesException if refused
   */
  public Table getTable(String tableId, long afterVersion, Duration wait) {
    return getTable(
        GetTableRequest.newBuilder()
            .setTableId(tableId)
            .setAfterVersion(afterVersion)
            .setWaitMs(waitMs(wait))
            .build());
  }

  /**
   * A table, by its id or (an invite-only one, before joining) by its invite code, as a long poll
   * if the request says so. Retried after a dropped connection.
   *
   * @param request the table, the version last seen and the wait
   * @return the table
   * @throws SpadesException if refused
   */
  public Table getTable(GetTableRequest request) {
    Duration wait = Duration.ofMillis(request.getWaitMs());
    return client.retrying(() -> stub(wait).getTable(request)).getTable();
  }

  /**
   * Waits until the table has started (long polls), then returns it: its {@code match_id} plays
   * with the seat token the caller got on sitting down.
   *
   * @param table the table as last seen (its id and version)
   * @param timeout how long to wait at most
   * @return the table, {@code STARTED}
   * @throws SpadesException if refused; {@code FAILED_PRECONDITION TABLE_CLOSED} (made by this
   *     client, domain {@code spades.client}, metadata {@code close_reason}) if it closed
   *     instead; {@code DEADLINE_EXCEEDED} if it did not start in time
   */
  public Table awaitStart(Table table, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Table t = table;
    while (t.getState() != TableState.TABLE_STATE_STARTED) {
      if (t.getState() == TableState.TABLE_STATE_CLOSED) {
        throw LobbyStream.clientError(
            Status.Code.FAILED_PRECONDITION,
            "TABLE_CLOSED",
            "table " + t.getTableId() + " closed: " + t.getCloseReason(),
            "table_id",
            t.getTableId(),
            "close_reason",
            t.getCloseReason());
      }
      Duration left = Duration.ofNanos(deadline - System.nanoTime());
      if (left.isNegative() || left.isZero()) {
        throw LobbyStream.clientError(
            Status.Code.DEADLINE_EXCEEDED,
            "",
            "table " + t.getTableId() + " did not start within " + timeout);
      }
      t = getTable(t.getTableId(), t.getVersion(), min(left, LONG_POLL));
    }
    return t;
  }

  /**
   * Waits until the table has started; see {@link #awaitStart(Table, Duration)}.
   *
   * @param tableId the table's id
   * @param timeout how long to wait at most
   * @return the table, {@code STARTED}
   * @throws SpadesException as {@link #awaitStart(Table, Duration)}
   */
  public Table awaitStart(String tableId, Duration timeout) {
    return awaitStart(getTable(tableId), timeout);
  }

  /**
   * A table as it changes: the table now, then again after every change, until it has started
   * or closed (then the stream ends normally). Read it with {@link LobbyStream#poll}.
   *
   * @param tableId the table's id
   * @return the stream (already connecting)
   */
  public LobbyStream<Table> watchTable(String tableId) {
    return watchTable(tableId, null);
  }

  /**
   * A table as it changes, each version handed to {@code listener} in order on a thread of the
   * client's.
   *
   * @param tableId the table's id
   * @param listener what to tell, or null to read with {@link LobbyStream#poll}
   * @return the stream (already connecting)
   */
  public LobbyStream<Table> watchTable(String tableId, LobbyStream.Listener<Table> listener) {
    WatchTableRequest request = WatchTableRequest.newBuilder().setTableId(tableId).build();
    return open(
        0,
        new LobbyStream.Spec<>(
            LobbyServiceGrpc.getWatchTableMethod(),
            after -> request,
            WatchTableResponse::getTable,
            Table::getVersion),
        listener);
  }

  // -- the lobby ------------------------------------------------------------------------------

  /**
   * One page of the public tables waiting for players, oldest first, with the lobby's version
   * (follow it from there: {@link #watchLobby}, {@link #pollLobby}). Retried after a dropped
   * connection.
   *
   * @param request the filter, the page size and the page token
   * @return the page
   * @throws SpadesException if refused ({@code BAD_PAGE_TOKEN}, ...)
   */
  public ListTablesResponse listTables(ListTablesRequest request) {
    return client.retrying(() -> stub().listTables(request));
  }

  /**
   * Every page of the lobby, read one after the other: the tables of all pages, oldest first,
   * and the lobby's version when the first page was read (follow the lobby from it and no
   * change is missed; a table that changed meanwhile comes again as a change).
   *
   * @param filter which tables (null or the default instance: every ruleset)
   * @return all the tables, the version, and no page token
   * @throws SpadesException if refused
   */
  public ListTablesResponse listAllTables(LobbyFilter filter) {
    ListTablesRequest.Builder request = ListTablesRequest.newBuilder();
    if (filter != null) {
      request.setFilter(filter);
    }
    ListTablesResponse first = listTables(request.build());
    ListTablesResponse.Builder all = first.toBuilder();
    String token = first.getNextPageToken();
    while (!token.isEmpty()) {
      ListTablesResponse page = listTables(request.setPageToken(token).build());
      all.addAllTables(page.getTablesList());
      token = page.getNextPageToken();
    }
    return all.setNextPageToken("").build();
  }

  /**
   * The lobby's changes after {@code afterVersion} as a long poll: at once if there are any,
   * else the first to come, or none (an empty batch at the latest version) once {@code wait}
   * has passed. Follow on from the answer's {@code version}. A batch with {@code reset} means
   * the version asked for is too old: list the lobby again. Retried after a dropped connection.
   *
   * @param filter which tables (null: every ruleset)
   * @param afterVersion the version to follow from ({@code ListTablesResponse.version}, then each
   *     answer's; 0: from now)
   * @param wait how long to wait for a change
   * @return the changes
   * @throws SpadesException if refused
   */
  public WatchLobbyResponse pollLobby(LobbyFilter filter, long afterVersion, Duration wait) {
    PollLobbyRequest.Builder b =
        PollLobbyRequest.newBuilder().setAfterVersion(afterVersion).setWaitMs(waitMs(wait));
    if (filter != null) {
      b.setFilter(filter);
    }
    PollLobbyRequest request = b.build();
    Duration w = Duration.ofMillis(request.getWaitMs());
    return client.retrying(() -> stub(w).pollLobby(request)).getChanges();
  }

  /**
   * The lobby's changes after {@code afterVersion}, then live ones, as batches ({@code tables}
   * opened or changed: replace what you hold; {@code removed_table_ids}: gone; {@code reset}:
   * list again). Read it with {@link LobbyStream#poll}; it runs until closed.
   *
   * @param filter which tables (null: every ruleset)
   * @param afterVersion the version to follow from ({@code ListTablesResponse.version}; 0: from
   *     now)
   * @return the stream (already connecting)
   */
  public LobbyStream<WatchLobbyResponse> watchLobby(LobbyFilter filter, long afterVersion) {
    return watchLobby(filter, afterVersion, null);
  }

  /**
   * The lobby's changes, each batch handed to {@code listener} in order on a thread of the
   * client's; see {@link #watchLobby(LobbyFilter, long)}.
   *
   * @param filter which tables (null: every ruleset)
   * @param afterVersion the version to follow from (0: from now)
   * @param listener what to tell, or null to read with {@link LobbyStream#poll}
   * @return the stream (already connecting)
   */
  public LobbyStream<WatchLobbyResponse> watchLobby(
      LobbyFilter filter, long afterVersion, LobbyStream.Listener<WatchLobbyResponse> listener) {
    return open(
        afterVersion,
        new LobbyStream.Spec<>(
            LobbyServiceGrpc.getWatchLobbyMethod(),
            after -> {
              WatchLobbyRequest.Builder b = WatchLobbyRequest.newBuilder().setAfterVersion(after);
              if (filter != null) {
                b.setFilter(filter);
              }
              return b.build();
            },
            (WatchLobbyResponse r) -> r,
            WatchLobbyResponse::getVersion),
        listener);
  }

  // -- quick play -----------------------------------------------------------------------------

  /**
   * Asks for a game alone: the matchmaker seats players first come first served per ruleset, and
   * fills the seats still open after a wait with bots. Follow the ticket with {@link
   * #awaitPlacement(Ticket, Duration)}. Retried after a dropped connection, with a fresh random
   * request id (see {@link #quickPlay(QuickPlayRequest)}); a second call while the ticket is
   * neither placed nor cancelled is {@code ALREADY_QUEUED}.
   *
   * @param ruleset the rules (null or empty: classic)
   * @return the ticket, {@code SEARCHING}
   * @throws SpadesException if refused ({@code ALREADY_QUEUED}, {@code ALREADY_SEATED}, {@code
   *     INVALID_RULESET}, ...)
   */
  public Ticket quickPlay(Ruleset ruleset) {
    return quickPlay(ruleset, "");
  }

  /**
   * Asks for a game as a party of two partners: both players ask, naming each other, for the
   * same rules; the first one's ticket waits ({@code WAITING_FOR_PARTNER}) until the second asks
   * and joins it. Partners sit opposite each other (partnership tables of four only).
   *
   * @param ruleset the rules (null or empty: classic)
   * @param partnerPlayerId the partner's player id ("" to play alone)
   * @return the ticket ({@code WAITING_FOR_PARTNER} for the first of a party, else {@code
   *     SEARCHING}, with both {@code player_ids})
   * @throws SpadesException if refused ({@code BAD_PARTNER}, {@code PARTY_NEEDS_PARTNERSHIPS},
   *     {@code PARTY_RULESET_MISMATCH}, ...)
   */
  public Ticket quickPlay(Ruleset ruleset, String partnerPlayerId) {
    return quickPlay(ruleset, partnerPlayerId, false);
  }

  /**
   * Asks for a game alone, rated or not. A rated ticket ({@code Ticket.rated}) is queued apart
   * from unrated ones and placed with players of a similar rating first (a band that widens while
   * it waits); if bots fill the table's open seats, the match is not rated (unless the server
   * allows bots in rated play). Retried as {@link #quickPlay(QuickPlayRequest)} is.
   *
   * @param ruleset the rules (null or empty: classic)
   * @param rated whether the game is rated
   * @return the ticket, {@code SEARCHING}
   * @throws SpadesException if refused
   */
  public Ticket quickPlay(Ruleset ruleset, boolean rated) {
    return quickPlay(ruleset, "", rated);
  }

  /**
   * Asks for a game as a party of two partners, rated or not (both must ask for the same); see
   * {@link #quickPlay(Ruleset, String)} and {@link #quickPlay(Ruleset, boolean)}.
   *
   * @param ruleset the rules (null or empty: classic)
   * @param partnerPlayerId the partner's player id ("" or null to play alone)
   * @param rated whether the game is rated
   * @return the ticket
   * @throws SpadesException if refused
   */
  public Ticket quickPlay(Ruleset ruleset, String partnerPlayerId, boolean rated) {
    return quickPlay(ruleset, partnerPlayerId, rated, null);
  }

  /**
   * Asks for a game with a request id of the caller's, to ask again safely after a call that
   * gave up (its retries spent, or the app restarted): pick the id before the first call (a
   * {@link UUID}, say), pass it to both, and the second gets the ticket the first made, whatever
   * its state (placed: with its placement), instead of opening another. See {@link
   * #quickPlay(QuickPlayRequest)}.
   *
   * @param ruleset the rules (null or empty: classic)
   * @param partnerPlayerId the partner's player id ("" or null to play alone)
   * @param rated whether the game is rated
   * @param requestId the request id, new for each game (at most 64 characters; "" or null: a
   *     fresh random one)
   * @return the ticket
   * @throws SpadesException if refused ({@code INVALID_ARGUMENT BAD_REQUEST_ID} for an id over
   *     64 characters, ...)
   */
  public Ticket quickPlay(
      Ruleset ruleset, String partnerPlayerId, boolean rated, String requestId) {
    QuickPlayRequest.Builder b = QuickPlayRequest.newBuilder().setRated(rated);
    if (ruleset != null) {
      b.setRuleset(ruleset);
    }
    if (partnerPlayerId != null) {
      b.setPartnerPlayerId(partnerPlayerId);
    }
    if (requestId != null) {
      b.setRequestId(requestId);
    }
    return quickPlay(b.build());
  }

  /**
   * Asks for a game; see {@link #quickPlay(Ruleset, String)} and {@link #quickPlay(Ruleset,
   * boolean)}. The request carries a request id: the request's own {@code request_id}, or a
   * fresh random one (a UUID) if it has none. The server answers a QuickPlay repeated with the
   * request id that made the caller's latest ticket with that ticket, whatever its state now
   * (placed: with its placement), instead of opening another; so the call is retried after a
   * dropped connection, as {@link #getTicket(String, long, Duration)} is, with the same id. To
   * ask again after this call gave up, send the same request id again (an id of your own, set
   * in the request or with {@link #quickPlay(Ruleset, String, boolean, String)}).
   *
   * @param request the rules, the partner, whether it is rated and the request id
   * @return the ticket
   * @throws SpadesException if refused ({@code ALREADY_QUEUED} while another ticket is neither
   *     placed nor cancelled, {@code BAD_REQUEST_ID} for an id over 64 characters, ...)
   */
  public Ticket quickPlay(QuickPlayRequest request) {
    QuickPlayRequest r =
        request.getRequestId().isEmpty()
            ? request.toBuilder().setRequestId(UUID.randomUUID().toString()).build()
            : request;
    return client.retrying(() -> stub().quickPlay(r)).getTicket();
  }

  /**
   * The caller's latest ticket as it is now (after a lost connection or a restart: once placed,
   * it holds the same seat token as many times as it is asked).
   *
   * @return the ticket
   * @throws SpadesException if refused ({@code TICKET_NOT_FOUND} if there is none)
   */
  public Ticket getTicket() {
    return getTicket("", 0, Duration.ZERO);
  }

  /**
   * A ticket as it is now.
   *
   * @param ticketId the ticket's id ("": the caller's latest)
   * @return the ticket
   * @throws SpadesException if refused
   */
  public Ticket getTicket(String ticketId) {
    return getTicket(ticketId, 0, Duration.ZERO);
  }

  /**
   * A ticket as a long poll: at once if its version is past {@code afterVersion}, else as soon as
   * it changes, or as it is once {@code wait} has passed. Retried after a dropped connection.
   *
   * @param ticketId the ticket's id ("": the caller's latest)
   * @param afterVersion the version last seen (0: answer at once)
   * @param wait how long to wait for a change
   * @return the ticket
   * @throws SpadesException if refused
   */
  public Ticket getTicket(String ticketId, long afterVersion, Duration wait) {
    GetTicketRequest request =
        GetTicketRequest.newBuilder()
            .setTicketId(ticketId == null ? "" : ticketId)
            .setAfterVersion(afterVersion)
            .setWaitMs(waitMs(wait))
            .build();
    Duration w = Duration.ofMillis(request.getWaitMs());
    return client.retrying(() -> stub(w).getTicket(request)).getTicket();
  }

  /**
   * Waits (long polls) until the ticket is placed, and returns where: the match id, the caller's
   * seat and its seat token ({@link #seat(Placement)} plays it), and the table as it started.
   *
   * @param ticket the ticket as last seen (its id and version)
   * @param timeout how long to wait at most
   * @return the placement
   * @throws SpadesException if refused; {@code FAILED_PRECONDITION TICKET_CANCELLED} (made by
   *     this client, domain {@code spades.client}, metadata {@code cancel_reason}: "cancelled" or
   *     "partner_did_not_join") if it was cancelled instead; {@code DEADLINE_EXCEEDED} if it was
   *     not placed in time
   */
  public Placement awaitPlacement(Ticket ticket, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Ticket t = ticket;
    while (t.getState() != TicketState.TICKET_STATE_PLACED) {
      if (t.getState() == TicketState.TICKET_STATE_CANCELLED) {
        throw LobbyStream.clientError(
            Status.Code.FAILED_PRECONDITION,
            "TICKET_CANCELLED",
            "ticket " + t.getTicketId() + " cancelled: " + t.getCancelReason(),
            "ticket_id",
            t.getTicketId(),
            "cancel_reason",
            t.getCancelReason());
      }
      Duration left = Duration.ofNanos(deadline - System.nanoTime());
      if (left.isNegative() || left.isZero()) {
        throw LobbyStream.clientError(
            Status.Code.DEADLINE_EXCEEDED,
            "",
            "ticket " + t.getTicketId() + " was not placed within " + timeout);
      }
      t = getTicket(t.getTicketId(), t.getVersion(), min(left, LONG_POLL));
    }
    return t.getPlacement();
  }

  /**
   * Waits until the caller's latest ticket is placed (after a restart, say); see {@link
   * #awaitPlacement(Ticket, Duration)}.
   *
   * @param timeout how long to wait at most
   * @return the placement
   * @throws SpadesException as {@link #awaitPlacement(Ticket, Duration)}
   */
  public Placement awaitPlacement(Duration timeout) {
    return awaitPlacement(getTicket(), timeout);
  }

  /**
   * A ticket as it changes: the ticket now, then again after every change, until it is placed
   * or cancelled (then the stream ends normally).
   *
   * @param ticketId the ticket's id ("": the caller's latest)
   * @return the stream (already connecting)
   */
  public LobbyStream<Ticket> watchTicket(String ticketId) {
    return watchTicket(ticketId, null);
  }

  /**
   * A ticket as it changes, each version handed to {@code listener} in order on a thread of the
   * client's.
   *
   * @param ticketId the ticket's id ("": the caller's latest)
   * @param listener what to tell, or null to read with {@link LobbyStream#poll}
   * @return the stream (already connecting)
   */
  public LobbyStream<Ticket> watchTicket(String ticketId, LobbyStream.Listener<Ticket> listener) {
    WatchTicketRequest request =
        WatchTicketRequest.newBuilder().setTicketId(ticketId == null ? "" : ticketId).build();
    return open(
        0,
        new LobbyStream.Spec<>(
            LobbyServiceGrpc.getWatchTicketMethod(),
            after -> request,
            WatchTicketResponse::getTicket,
            Ticket::getVersion),
        listener);
  }

  /**
   * Withdraws the caller's latest ticket; see {@link #cancelTicket(String)}.
   *
   * @return the ticket, {@code CANCELLED}
   * @throws SpadesException if refused
   */
  public Ticket cancelTicket() {
    return cancelTicket("");
  }

  /**
   * Withdraws a ticket that is not placed yet (a party's: for both players). Idempotent on the
   * server, so retried after a dropped connection.
   *
   * @param ticketId the ticket's id ("": the caller's latest)
   * @return the ticket, {@code CANCELLED}
   * @throws SpadesException if refused ({@code TICKET_PLACED}: too late, play it)
   */
  public Ticket cancelTicket(String ticketId) {
    CancelTicketRequest request =
        CancelTicketRequest.newBuilder().setTicketId(ticketId == null ? "" : ticketId).build();
    return client.retrying(() -> stub().cancelTicket(request)).getTicket();
  }

  // -- ratings --------------------------------------------------------------------------------

  /**
   * The top page of a rating pool's leaderboard, best first, of the server's default size (25).
   * See {@link #getLeaderboard(GetLeaderboardRequest)}.
   *
   * @param pool the rating pool ({@code Table.rating_pool}: a preset such as "classic"); "" or
   *     null: the server's default pool
   * @return the page
   * @throws SpadesException if refused ({@code NOT_FOUND POOL_NOT_FOUND}, ...)
   */
  public GetLeaderboardResponse getLeaderboard(String pool) {
    return getLeaderboard(pool, 0, "");
  }

  /**
   * A page of a rating pool's leaderboard: the top, or the page after or before an earlier
   * page's token.
   *
   * @param pool the rating pool ("" or null: the server's default); a token is valid for its own
   *     pool only
   * @param pageSize players per page (0: 25; at most 200)
   * @param pageToken a {@code next_page_token} or {@code previous_page_token} of an earlier page
   *     ("" or null: the top)
   * @return the page
   * @throws SpadesException if refused ({@code INVALID_ARGUMENT BAD_PAGE_TOKEN}, {@code
   *     BAD_PAGE_SIZE}, {@code NOT_FOUND POOL_NOT_FOUND}, ...)
   */
  public GetLeaderboardResponse getLeaderboard(String pool, int pageSize, String pageToken) {
    return getLeaderboard(
        GetLeaderboardRequest.newBuilder()
            .setPool(pool == null ? "" : pool)
            .setPageSize(pageSize)
            .setPageToken(pageToken == null ? "" : pageToken)
            .build());
  }

  /**
   * The page of a rating pool's leaderboard that holds {@code playerId} (pages are cut from the
   * top, so the player is anywhere on it); walk on from its tokens.
   *
   * @param pool the rating pool ("" or null: the server's default)
   * @param playerId the player
   * @param pageSize players per page (0: 25; at most 200)
   * @return the page
   * @throws SpadesException if refused ({@code NOT_FOUND PLAYER_NOT_RATED}: the player is not on
   *     this leaderboard, not rated in the pool or with fewer games than {@code min_games})
   */
  public GetLeaderboardResponse getLeaderboardAround(String pool, String playerId, int pageSize) {
    return getLeaderboard(
        GetLeaderboardRequest.newBuilder()
            .setPool(pool == null ? "" : pool)
            .setPageSize(pageSize)
            .setAroundPlayerId(playerId == null ? "" : playerId)
            .build());
  }

  /**
   * A page of a rating pool's leaderboard, best first: the top, the page after or before a page
   * token, or the page holding {@code around_player_id} (not both). Each entry has the player's
   * {@code rank} (from 1), id, display name and {@code PlayerRating} (OpenSkill's {@code mu} and
   * {@code sigma}, ordered by {@code conservative} = mu - 3 sigma, games, wins, losses); the
   * answer also has {@code total_players} and {@code min_games}, the rated games a player needs
   * to appear. The tokens name the player at the page's edge, so a page follows its players when
   * ratings move meanwhile. Retried after a dropped connection.
   *
   * @param request the pool, the page size, and the page token or the player
   * @return the page, with {@code next_page_token} (empty at the end) and {@code
   *     previous_page_token} (empty at the top)
   * @throws SpadesException if refused: {@code NOT_FOUND POOL_NOT_FOUND}, {@code INVALID_ARGUMENT
   *     BAD_POOL}, {@code BAD_PAGE_TOKEN} (not given by this server, or of another pool), {@code
   *     BAD_PAGE_SIZE}, {@code TOKEN_AND_PLAYER}, {@code NOT_FOUND PLAYER_NOT_RATED}
   */
  public GetLeaderboardResponse getLeaderboard(GetLeaderboardRequest request) {
    return client.retrying(() -> stub().getLeaderboard(request));
  }

  /**
   * The page after {@code page} (same pool), or null if {@code page} is the last.
   *
   * @param page a page this client read
   * @param pageSize players per page, as for {@code page} (0: 25)
   * @return the next page, or null
   * @throws SpadesException if refused
   */
  public GetLeaderboardResponse nextLeaderboardPage(GetLeaderboardResponse page, int pageSize) {
    String token = page.getNextPageToken();
    return token.isEmpty() ? null : getLeaderboard(page.getPool(), pageSize, token);
  }

  /**
   * The page before {@code page} (same pool), or null if {@code page} is the top.
   *
   * @param page a page this client read
   * @param pageSize players per page, as for {@code page} (0: 25)
   * @return the previous page, or null
   * @throws SpadesException if refused
   */
  public GetLeaderboardResponse previousLeaderboardPage(
      GetLeaderboardResponse page, int pageSize) {
    String token = page.getPreviousPageToken();
    return token.isEmpty() ? null : getLeaderboard(page.getPool(), pageSize, token);
  }

  /**
   * A rating pool's leaderboard from the top, page after page, each read when the iteration
   * comes to it ({@code for (GetLeaderboardResponse page : lobby.leaderboardPages("classic",
   * 50))}). See {@link #leaderboardPages(GetLeaderboardRequest)}.
   *
   * @param pool the rating pool ("" or null: the server's default)
   * @param pageSize players per page (0: 25; at most 200)
   * @return the pages (each iterator starts again from the top)
   */
  public Iterable<GetLeaderboardResponse> leaderboardPages(String pool, int pageSize) {
    return leaderboardPages(
        GetLeaderboardRequest.newBuilder()
            .setPool(pool == null ? "" : pool)
            .setPageSize(pageSize)
            .build());
  }

  /**
   * A leaderboard page by page: the page {@code first} asks for (the top, a token's, or a
   * player's), then the ones after it, following {@code next_page_token} until the end. Each page
   * is read when the iteration comes to it; a refusal is thrown from {@code hasNext()} or {@code
   * next()} as a {@link SpadesException}. Each {@code iterator()} starts again from {@code
   * first}.
   *
   * @param first the first page's request
   * @return the pages
   */
  public Iterable<GetLeaderboardResponse> leaderboardPages(GetLeaderboardRequest first) {
    return () ->
        new Iterator<GetLeaderboardResponse>() {
          /** The request of the page not read yet, or null at the end. */
          private GetLeaderboardRequest request = first;
          /** The page read by hasNext() and not handed out yet. */
          private GetLeaderboardResponse page;

          @Override
          public boolean hasNext() {
            if (page == null && request != null) {
              page = getLeaderboard(request);
              String token = page.getNextPageToken();
              request =
                  token.isEmpty()
                      ? null
                      : GetLeaderboardRequest.newBuilder()
                          .setPool(page.getPool())
                          .setPageSize(first.getPageSize())
                          .setPageToken(token)
                          .build();
            }
            return page != null;
          }

          @Override
          public GetLeaderboardResponse next() {
            if (!hasNext()) {
              throw new NoSuchElementException();
            }
            GetLeaderboardResponse out = page;
            page = null;
            return out;
          }
        };
  }

  /**
   * The caller's own profile; see {@link #getProfile(String)}.
   *
   * @return the profile
   * @throws SpadesException if refused ({@code NOT_FOUND PLAYER_NOT_FOUND}: no finished lobby
   *     match yet)
   */
  public PlayerProfile getProfile() {
    return getProfile("");
  }

  /**
   * A player's public profile: their rating in every pool they played a rated match in ({@code
   * ratings}: mu, sigma, conservative, games, wins, losses, and {@code rank}, 0 while they have
   * fewer than the leaderboard's {@code min_games}), and their record over finished lobby matches
   * ({@code with_humans}: every seat a human; {@code with_bots}: a bot seated), and when they last
   * played. Everyone sees the same profile. A match's result is recorded just after it ends, so
   * the profile shows it a moment later. Retried after a dropped connection.
   *
   * @param playerId the player's id ("" or null: the caller)
   * @return the profile
   * @throws SpadesException if refused ({@code NOT_FOUND PLAYER_NOT_FOUND}: the player finished
   *     no lobby match here; {@code INVALID_ARGUMENT BAD_PLAYER_ID}: over 128 characters)
   */
  public PlayerProfile getProfile(String playerId) {
    GetProfileRequest request =
        GetProfileRequest.newBuilder().setPlayerId(playerId == null ? "" : playerId).build();
    return client.retrying(() -> stub().getProfile(request)).getProfile();
  }

  // -- seats ----------------------------------------------------------------------------------

  /**
   * The seat quick play placed the caller at: it plays like any seat ({@link
   * SeatClient#openSession()}).
   *
   * @param placement the placement ({@link #awaitPlacement}, or {@code Ticket.getPlacement()})
   * @return the seat
   */
  public SeatClient seat(Placement placement) {
    return client.seat(placement.getMatchId(), placement.getSeatToken());
  }

  /**
   * The seat of the table the caller opened; it plays once the table has started ({@link
   * #awaitStart}), {@code TABLE_NOT_STARTED} before.
   *
   * @param opened what {@link #openTable} answered
   * @return the seat
   */
  public SeatClient seat(OpenTableResponse opened) {
    return client.seat(opened.getTable().getTableId(), opened.getSeatToken());
  }

  /**
   * The seat the caller sat at; it plays once the table has started.
   *
   * @param joined what {@link #joinTable} answered
   * @return the seat
   */
  public SeatClient seat(JoinTableResponse joined) {
    return client.seat(joined.getTable().getTableId(), joined.getSeatToken());
  }

  /**
   * The generated asynchronous stub with the player's credential on every call (as it is now),
   * for what this class does not wrap. Its calls have no deadline.
   *
   * @return the stub
   */
  public LobbyServiceGrpc.LobbyServiceStub asyncStub() {
    return LobbyServiceGrpc.newStub(client.getChannel())
        .withInterceptors(
            MetadataUtils.newAttachHeadersInterceptor(
                Credentials.bearerOrNone(credential.get())));
  }

  private <T> LobbyStream<T> open(
      long afterVersion, LobbyStream.Spec<?, ?, T> spec, LobbyStream.Listener<T> listener) {
    LobbyStream<T> s = new LobbyStream<>(client, credential, afterVersion, spec, listener);
    s.start();
    return s;
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }
}

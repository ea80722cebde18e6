package spades.client;

import io.grpc.Status;
import java.time.Duration;
import java.util.UUID;
import spades.v1.Lobby.RematchRequest;
import spades.v1.Lobby.RematchResponse;
import spades.v1.Lobby.TableState;
import spades.v1.Spades.Action;
import spades.v1.Spades.ClaimSeatRequest;
import spades.v1.Spades.ClaimSeatResponse;
import spades.v1.Spades.GetViewRequest;
import spades.v1.Spades.LeaveSeatRequest;
import spades.v1.Spades.SeatView;
import spades.v1.Spades.SubmitActionRequest;
import spades.v1.Spades.SubmitActionResponse;
import spades.v1.SpadesServiceGrpc.SpadesServiceBlockingStub;

/**
 * One seat of one match, acting with its seat token: claim or leave the seat, read its view, act,
 * open a {@link SeatSession} (the {@code Play} call) for its events and actions, and, once the
 * match is over, ask for a {@link #rematch() rematch}. The token may come from {@code
 * CreateMatch} or from the lobby (a table, quick play, a rematch): they play alike.
 *
 * <p>Calls block for at most the client's default deadline and throw {@link SpadesException}.
 */
public final class SeatClient {
  private final SpadesClient client;
  private final String matchId;
  private final String token;
  // The newest sequence number seen through this object (its views and its actions' results):
  // getView asks for a view at least as new, so that a server replica a moment behind the one
  // the client left answers only once it has caught up.
  private final java.util.concurrent.atomic.AtomicLong seenSeq =
      new java.util.concurrent.atomic.AtomicLong();

  SeatClient(SpadesClient client, String matchId, String token) {
    this.client = client;
    this.matchId = matchId;
    this.token = token;
  }

  /**
   * The match id.
   *
   * @return the id ("" when the token's own is meant)
   */
  public String getMatchId() {
    return matchId;
  }

  private SpadesServiceBlockingStub stub() {
    return client.stub(token);
  }

  /**
   * Claims the seat: the token's holder plays it from now on (taking it back from a bot standing
   * in). Not retried: a second claim would count as another seat change.
   *
   * @return the seat number and its view
   * @throws SpadesException if refused ({@code UNAUTHENTICATED} for a token the match does not
   *     know, {@code MATCH_OVER}, ...)
   */
  public ClaimSeatResponse claim() {
    ClaimSeatRequest request = ClaimSeatRequest.newBuilder().setMatchId(matchId).build();
    return SpadesClient.call(() -> stub().claimSeat(request));
  }

  /**
   * Leaves the seat: a bot plays it until it is claimed again.
   *
   * @return the seat left
   * @throws SpadesException if refused
   */
  public int leave() {
    LeaveSeatRequest request = LeaveSeatRequest.newBuilder().setMatchId(matchId).build();
    return SpadesClient.call(() -> stub().leaveSeat(request)).getSeat();
  }

  /**
   * The match as this seat may see it, with its legal actions. Retried after a dropped connection.
   *
   * @return the view
   * @throws SpadesException if refused
   */
  public SeatView getView() {
    return getView(seenSeq.get());
  }

  /**
   * The view at least as new as {@code minSeq} (the last sequence number the caller saw, as after
   * moving to another server replica). Retried after a dropped connection.
   *
   * @param minSeq the sequence number the view must include
   * @return the view
   * @throws SpadesException if refused: OUT_OF_RANGE, reason SEQ_AHEAD, when the match has not
   *     reached {@code minSeq}
   */
  public SeatView getView(long minSeq) {
    GetViewRequest request =
        GetViewRequest.newBuilder().setMatchId(matchId).setMinSeq(minSeq).build();
    SeatView view = client.retrying(() -> stub().getView(request).getView());
    saw(view.getAsOfSeq());
    return view;
  }

  /**
   * The newest sequence number this object has seen (its views and its actions' results).
   *
   * @return the sequence number, 0 before any
   */
  public long getSeenSeq() {
    return seenSeq.get();
  }

  private void saw(long seq) {
    seenSeq.accumulateAndGet(seq, Math::max);
  }

  /**
   * Acts with a fresh action id (a UUID), over a unary call; see {@link #submitAction(String,
   * Action, Long)}.
   *
   * @param action the action
   * @return the events it caused, as this seat sees them
   * @throws SpadesException if refused
   */
  public SubmitActionResponse submitAction(Action action) {
    return submitAction(UUID.randomUUID().toString(), action, null);
  }

  /**
   * Acts over a unary call (for clients that do not hold a session). Retried with the same
   * {@code actionId} on {@code UNAVAILABLE}: the server applies an action id once and answers a
   * repeat with the first result.
   *
   * @param actionId the client's id of this decision (1 to 64 characters)
   * @param action the action
   * @param expectedSeq the last sequence number seen, or null not to check
   * @return the events it caused, as this seat sees them
   * @throws SpadesException if refused
   */
  public SubmitActionResponse submitAction(String actionId, Action action, Long expectedSeq) {
    SubmitActionRequest.Builder b =
        SubmitActionRequest.newBuilder().setMatchId(matchId).setActionId(actionId).setAction(action);
    if (expectedSeq != null) {
      b.setExpectedSeq(expectedSeq);
    }
    SubmitActionRequest request = b.build();
    SubmitActionResponse response = client.retrying(() -> stub().submitAction(request));
    saw(response.getLastSeq());
    return response;
  }

  /**
   * Opens a session from the match's first event, its events to be read with {@link
   * SeatSession#poll}.
   *
   * @return the session (already connecting)
   */
  public SeatSession openSession() {
    return openSession(0);
  }

  /**
   * Opens a session that delivers the events after {@code afterSeq} (a view's {@code as_of_seq},
   * or the last one a previous session delivered), to be read with {@link SeatSession#poll}.
   *
   * @param afterSeq the last sequence number already known (0: from the start)
   * @return the session (already connecting)
   */
  public SeatSession openSession(long afterSeq) {
    SeatSession s = new SeatSession(client, matchId, token, afterSeq, null);
    s.start();
    return s;
  }

  /**
   * Opens a session that hands each event to {@code listener}, in order, on a thread of the
   * client's (one callback at a time).
   *
   * @param afterSeq the last sequence number already known (0: from the start)
   * @param listener what to tell
   * @return the session (already connecting)
   */
  public SeatSession openSession(long afterSeq, SeatSession.Listener listener) {
    SeatSession s = new SeatSession(client, matchId, token, afterSeq, listener);
    s.start();
    return s;
  }

  // -- rematch ---------------------------------------------------------------------------------

  /**
   * Asks for a rematch of this seat's finished match, with the same seats (its seat token is the
   * credential: no player credential is needed). The first seat to ask opens the rematch; each
   * human seat's call accepts it and gets that seat's token for the new match, which is dealt
   * once every human seat has accepted; unless all accept in time it closes ({@code close_reason}
   * "expired", or "declined"). Answers at once. Retried after a dropped connection (accepting
   * twice is accepting).
   *
   * @return the rematch table ({@code WAITING}, or {@code STARTED} once all accepted), this
   *     seat's number and its token for the new match
   * @throws SpadesException if refused ({@code MATCH_NOT_OVER}, {@code UNAUTHENTICATED}, ...)
   */
  public RematchResponse rematch() {
    return rematch(0, Duration.ZERO);
  }

  /**
   * Accepts the rematch as a long poll: at once if the rematch table's version is past {@code
   * afterVersion}, else as soon as it changes, or as it is once {@code wait} has passed.
   *
   * @param afterVersion the rematch table's version last seen (0: answer at once)
   * @param wait how long to wait for a change
   * @return the rematch table, this seat's number and its token for the new match
   * @throws SpadesException if refused
   */
  public RematchResponse rematch(long afterVersion, Duration wait) {
    return rematch(
        RematchRequest.newBuilder()
            .setMatchId(rematchOf())
            .setAfterVersion(afterVersion)
            .setWaitMs(LobbyClient.waitMs(wait))
            .build());
  }

  /**
   * Declines the rematch: it closes for every seat ({@code close_reason} "declined").
   *
   * @return the rematch table, {@code CLOSED} (or as it was, if it had started or closed already)
   * @throws SpadesException if refused
   */
  public RematchResponse declineRematch() {
    return rematch(RematchRequest.newBuilder().setMatchId(rematchOf()).setDecline(true).build());
  }

  /**
   * Accepts the rematch and waits (long polls) until every human seat has accepted and the new
   * match is dealt; {@link #rematchSeat} then plays it.
   *
   * @param timeout how long to wait at most
   * @return the rematch, {@code STARTED}
   * @throws SpadesException if refused; {@code FAILED_PRECONDITION TABLE_CLOSED} (made by this
   *     client, domain {@code spades.client}, metadata {@code close_reason}) if the rematch
   *     closed instead; {@code DEADLINE_EXCEEDED} if it did not start in time
   */
  public RematchResponse awaitRematch(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    RematchResponse r = rematch();
    while (r.getTable().getState() != TableState.TABLE_STATE_STARTED) {
      if (r.getTable().getState() == TableState.TABLE_STATE_CLOSED) {
        throw LobbyStream.clientError(
            Status.Code.FAILED_PRECONDITION,
            "TABLE_CLOSED",
            "the rematch of " + rematchOf() + " closed: " + r.getTable().getCloseReason(),
            "table_id",
            r.getTable().getTableId(),
            "close_reason",
            r.getTable().getCloseReason());
      }
      Duration left = Duration.ofNanos(deadline - System.nanoTime());
      if (left.isNegative() || left.isZero()) {
        throw LobbyStream.clientError(
            Status.Code.DEADLINE_EXCEEDED,
            "",
            "the rematch of " + rematchOf() + " did not start within " + timeout);
      }
      Duration slice = left.compareTo(Duration.ofSeconds(20)) < 0 ? left : Duration.ofSeconds(20);
      r = rematch(r.getTable().getVersion(), slice);
    }
    return r;
  }

  /**
   * This seat in the rematch's new match (the rematch table's id is the new match's id).
   *
   * @param rematch what {@link #rematch()} or {@link #awaitRematch} answered
   * @return the seat
   */
  public SeatClient rematchSeat(RematchResponse rematch) {
    return client.seat(rematch.getTable().getTableId(), rematch.getSeatToken());
  }

  private RematchResponse rematch(RematchRequest request) {
    Duration wait = Duration.ofMillis(request.getWaitMs());
    return client.retrying(() -> client.lobbyStub(token, wait).rematch(request));
  }

  /** The finished match's id: this seat's, or the token's own. */
  private String rematchOf() {
    if (!matchId.isEmpty()) {
      return matchId;
    }
    int dot = token.indexOf('.');
    return dot > 0 ? token.substring(0, dot) : "";
  }
}

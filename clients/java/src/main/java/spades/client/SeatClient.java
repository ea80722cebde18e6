package spades.client;

import java.util.UUID;
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
 * and open a {@link SeatSession} (the {@code Play} call) for its events and actions.
 *
 * <p>Calls block for at most the client's default deadline and throw {@link SpadesException}.
 */
public final class SeatClient {
  private final SpadesClient client;
  private final String matchId;
  private final String token;

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
    GetViewRequest request = GetViewRequest.newBuilder().setMatchId(matchId).build();
    return client.retrying(() -> stub().getView(request).getView());
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
    return client.retrying(() -> stub().submitAction(request));
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
}

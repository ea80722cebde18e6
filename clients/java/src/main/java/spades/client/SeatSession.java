package spades.client;

import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import spades.v1.Spades.Action;
import spades.v1.Spades.ActionResult;
import spades.v1.Spades.MatchEvent;
import spades.v1.Spades.PlayAction;
import spades.v1.Spades.PlayOpen;
import spades.v1.Spades.PlayRequest;
import spades.v1.Spades.PlayResponse;
import spades.v1.SpadesServiceGrpc;

/**
 * A seat's session on the bidirectional {@code Play} call: the seat's events in order, and its
 * actions with their results.
 *
 * <p>When the connection drops (a call ending with {@code UNAVAILABLE}, or another failure that
 * carries no ErrorInfo), the session reconnects by itself with exponential backoff and jitter
 * ({@link RetryPolicy}) and reopens {@code Play} after the last sequence number it delivered: no
 * event is missed, and none is delivered twice (an event at or below the last sequence number is
 * dropped). Actions whose result had not come are sent again, with the same action id, on the new
 * call; the server answers a repeated id with the first result and applies nothing. After {@link
 * RetryPolicy#getMaxAttempts()} failed reconnections in a row, or on a refusal of the call itself
 * ({@code UNAUTHENTICATED}, {@code NOT_FOUND}, ...), the session ends with that error.
 *
 * <p>Events are read with {@link #poll} or handed to a {@link Listener}. Every method is
 * thread-safe.
 */
public final class SeatSession implements AutoCloseable {
  private static final Object END = new Object();
  /** A call that stayed open this long counts as a success even if it never answered. */
  private static final long HEALTHY_CALL_NANOS = TimeUnit.SECONDS.toNanos(10);

  /** What a session tells a listener. Callbacks come one at a time, in order. */
  public interface Listener {
    /**
     * An event for the seat, in sequence order, never twice.
     *
     * @param event the event
     */
    void onEvent(MatchEvent event);

    /**
     * The connection dropped; the session reconnects after {@code delay}.
     *
     * @param cause why the call ended
     * @param attempt the reconnection's number in a row, from 1
     * @param delay the wait before it
     */
    default void onReconnecting(SpadesException cause, int attempt, Duration delay) {}

    /**
     * A reconnected call answered; events resume after {@code afterSeq}.
     *
     * @param afterSeq the last sequence number delivered before the drop
     */
    default void onResumed(long afterSeq) {}

    /**
     * The session ended, for good.
     *
     * @param error null when it was closed or cancelled by the client (or ended by the server
     *     with OK), the error otherwise
     */
    default void onClosed(SpadesException error) {}
  }

  /** Where a session is. */
  public enum State {
    /** The first call is being made. */
    CONNECTING,
    /** A call has answered. */
    OPEN,
    /** The connection dropped; a new call is on its way. */
    RECONNECTING,
    /** {@link #close()} was called; waiting for the server to end the call. */
    CLOSING,
    /** Ended without error. */
    CLOSED,
    /** Ended with an error ({@link #done()} says which). */
    FAILED
  }

  /** An action sent, waiting for its result. */
  private static final class Pending {
    final String actionId;
    final PlayRequest request;
    final CompletableFuture<ActionResult> future = new CompletableFuture<>();

    Pending(String actionId, PlayRequest request) {
      this.actionId = actionId;
      this.request = request;
    }
  }

  private final SpadesClient client;
  private final String matchId;
  private final String token;
  private final Listener listener;
  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  private final SerialExecutor callbacks;
  private final CompletableFuture<Void> done = new CompletableFuture<>();

  private final Object lock = new Object();
  // Everything below is guarded by lock.
  private long lastSeq;
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  private ClientCall<PlayRequest, PlayResponse> call;
  private int generation;
  private long callStartedNanos;
  private boolean answered;
  private int failures;
  private State state = State.CONNECTING;
  private boolean closing;
  private ScheduledFuture<?> reconnectTimer;
  private SpadesException failure;
  private int reconnections;

  SeatSession(
      SpadesClient client, String matchId, String token, long afterSeq, Listener listener) {
    this.client = client;
    this.matchId = matchId;
    this.token = token;
    this.lastSeq = afterSeq;
    this.listener = listener;
    this.callbacks = new SerialExecutor(client.callbackExecutor());
  }

  void start() {
    client.opened(this);
    synchronized (lock) {
      openCallLocked();
    }
  }

  private void openCallLocked() {
    int gen = ++generation;
    reconnectTimer = null;
    answered = false;
    callStartedNanos = System.nanoTime();
    ClientCall<PlayRequest, PlayResponse> c =
        client.getChannel().newCall(SpadesServiceGrpc.getPlayMethod(), client.playCallOptions());
    call = c;
    c.start(new CallListener(gen), Credentials.bearer(token));
    c.request(1);
    c.sendMessage(
        PlayRequest.newBuilder()
            .setOpen(PlayOpen.newBuilder().setMatchId(matchId).setAfterSeq(lastSeq))
            .build());
    for (Pending p : pending) {
      c.sendMessage(p.request);
    }
  }

  /** Listens to one call; a call that was replaced is ignored. */
  private final class CallListener extends ClientCall.Listener<PlayResponse> {
    private final int gen;

    CallListener(int gen) {
      this.gen = gen;
    }

    @Override
    public void onHeaders(Metadata headers) {
      synchronized (lock) {
        if (gen == generation) {
          answeredLocked();
        }
      }
    }

    @Override
    public void onMessage(PlayResponse message) {
      List<Runnable> completions = new ArrayList<>();
      ClientCall<PlayRequest, PlayResponse> c;
      synchronized (lock) {
        if (gen != generation || call == null) {
          return;
        }
        c = call;
        answeredLocked();
        for (MatchEvent e : message.getEventsList()) {
          if (e.getSeq() > lastSeq) { // a resumed call never repeats one, but never trust it
            lastSeq = e.getSeq();
            deliverLocked(e);
          }
        }
        for (ActionResult r : message.getResultsList()) {
          Pending p = removePendingLocked(r.getActionId());
          if (p != null) {
            completions.add(() -> complete(p, r));
          }
        }
        if (!completions.isEmpty()) {
          lock.notifyAll();
        }
      }
      for (Runnable r : completions) {
        callbacks.execute(r);
      }
      c.request(1);
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      synchronized (lock) {
        if (gen != generation) {
          return;
        }
        call = null;
        lock.notifyAll();
        SpadesException error =
            status.isOk() ? null : SpadesException.fromStatus(status, trailers, null);
        if (closing) {
          finishLocked(error == null || error.getCode() == Status.Code.CANCELLED ? null : error);
        } else if (error == null) {
          finishLocked(null); // the server ended the call
        } else if (retryable(error)) {
          if (answered || System.nanoTime() - callStartedNanos >= HEALTHY_CALL_NANOS) {
            failures = 0;
          }
          if (failures >= client.retryPolicy().getMaxAttempts()) {
            finishLocked(error);
            return;
          }
          failures++;
          Duration delay = client.retryPolicy().delay(failures);
          state = State.RECONNECTING;
          int attempt = failures;
          if (listener != null) {
            callbacks.execute(() -> listener.onReconnecting(error, attempt, delay));
          }
          try {
            reconnectTimer =
                client
                    .scheduler()
                    .schedule(SeatSession.this::reconnect, delay.toNanos(), TimeUnit.NANOSECONDS);
          } catch (RejectedExecutionException e) {
            finishLocked(error); // the client was closed
          }
        } else {
          finishLocked(error);
        }
      }
    }
  }

  /**
   * Whether a failed call is a dropped connection worth reopening: {@code UNAVAILABLE}, or a
   * failure of the transport that carries no ErrorInfo (a reset stream: {@code INTERNAL}, {@code
   * UNKNOWN}, {@code CANCELLED} not asked for).
   */
  static boolean retryable(SpadesException e) {
    switch (e.getCode()) {
      case UNAVAILABLE:
        return true;
      case INTERNAL:
      case UNKNOWN:
      case CANCELLED:
        return e.getReason().isEmpty();
      default:
        return false;
    }
  }

  private void reconnect() {
    synchronized (lock) {
      if (state == State.RECONNECTING && !closing) {
        reconnections++;
        openCallLocked();
      }
    }
  }

  private void answeredLocked() {
    if (!answered) {
      answered = true;
      failures = 0;
      if (state == State.RECONNECTING) {
        long after = lastSeq;
        if (listener != null) {
          callbacks.execute(() -> listener.onResumed(after));
        }
      }
      if (state == State.CONNECTING || state == State.RECONNECTING) {
        state = State.OPEN;
      }
    }
  }

  private void deliverLocked(MatchEvent e) {
    if (listener == null) {
      queue.add(e);
    } else {
      callbacks.execute(() -> listener.onEvent(e));
    }
  }

  private Pending removePendingLocked(String actionId) {
    for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
      Pending p = it.next();
      if (p.actionId.equals(actionId)) {
        it.remove();
        return p;
      }
    }
    return null;
  }

  private static void complete(Pending p, ActionResult r) {
    if (r.hasError()) {
      p.future.completeExceptionally(SpadesException.fromActionError(r.getError()));
    } else {
      p.future.complete(r);
    }
  }

  private void finishLocked(SpadesException error) {
    if (done.isDone()) {
      return;
    }
    call = null;
    lock.notifyAll();
    if (reconnectTimer != null) {
      reconnectTimer.cancel(false);
      reconnectTimer = null;
    }
    state = error == null ? State.CLOSED : State.FAILED;
    failure = error;
    client.ended(this);
    SpadesException unanswered =
        error != null
            ? error
            : new SpadesException(
                Status.Code.CANCELLED,
                "the session ended before the action's result came",
                "",
                "",
                Collections.emptyMap(),
                Collections.emptyList(),
                null);
    List<Pending> left = new ArrayList<>(pending);
    pending.clear();
    queue.add(END);
    callbacks.execute(
        () -> {
          for (Pending p : left) {
            p.future.completeExceptionally(unanswered);
          }
          if (listener != null) {
            listener.onClosed(error);
          }
          if (error == null) {
            done.complete(null);
          } else {
            done.completeExceptionally(error);
          }
        });
  }

  /**
   * Sends an action with a fresh action id (a UUID).
   *
   * @param action the action
   * @return its result: completes with the {@link ActionResult} when accepted, and exceptionally
   *     with a {@link SpadesException} when refused or when the session ends first
   */
  public CompletableFuture<ActionResult> send(Action action) {
    return send(UUID.randomUUID().toString(), action, null);
  }

  /**
   * Sends an action.
   *
   * @param actionId the client's id for this decision (1 to 64 characters): the same id again,
   *     on this session or any other call, is answered with the first result
   * @param action the action
   * @param expectedSeq if set, the last sequence number the client has seen: the action is
   *     refused ({@code STALE_SEQUENCE}) if the seat may see a later event
   * @return its result: completes with the {@link ActionResult} when accepted, and exceptionally
   *     with a {@link SpadesException} when refused or when the session ends first
   */
  public CompletableFuture<ActionResult> send(String actionId, Action action, Long expectedSeq) {
    Objects.requireNonNull(actionId, "actionId");
    PlayAction.Builder a = PlayAction.newBuilder().setActionId(actionId).setAction(action);
    if (expectedSeq != null) {
      a.setExpectedSeq(expectedSeq);
    }
    Pending p = new Pending(actionId, PlayRequest.newBuilder().setAction(a).build());
    synchronized (lock) {
      if (closing || done.isDone()) {
        p.future.completeExceptionally(
            new SpadesException(
                Status.Code.FAILED_PRECONDITION,
                "the session is closed",
                "",
                "",
                Collections.emptyMap(),
                Collections.emptyList(),
                null));
        return p.future;
      }
      pending.addLast(p);
      if (call != null) {
        call.sendMessage(p.request);
      }
    }
    return p.future;
  }

  /**
   * The next event, waiting up to {@code timeout}. Only without a {@link Listener}.
   *
   * @param timeout how long to wait
   * @return the event; null if none came in time, or if the session has ended and every event
   *     was read
   * @throws SpadesException once every event was read, if the session ended with an error
   * @throws InterruptedException if interrupted while waiting
   */
  public MatchEvent poll(Duration timeout) throws InterruptedException {
    if (listener != null) {
      throw new IllegalStateException("this session hands its events to a listener");
    }
    Object o = queue.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
    if (o == END) {
      queue.add(END); // for the next caller
      SpadesException f;
      synchronized (lock) {
        f = failure;
      }
      if (f != null) {
        throw f;
      }
      return null;
    }
    return (MatchEvent) o;
  }

  /**
   * The sequence number of the last event delivered (or the {@code afterSeq} the session was
   * opened with): where the session resumes after a drop.
   *
   * @return the sequence number
   */
  public long lastSeq() {
    synchronized (lock) {
      return lastSeq;
    }
  }

  /**
   * Where the session is.
   *
   * @return the state
   */
  public State state() {
    synchronized (lock) {
      return state;
    }
  }

  /**
   * How many times the session has reopened its call after a drop.
   *
   * @return the count
   */
  public int reconnections() {
    synchronized (lock) {
      return reconnections;
    }
  }

  /**
   * Completes when the session has ended: normally after {@link #close()}, {@link #cancel()} or
   * an OK end from the server, exceptionally with a {@link SpadesException} otherwise.
   *
   * @return the future
   */
  public CompletableFuture<Void> done() {
    return done;
  }

  /**
   * Ends the session politely: half-closes the call (no more actions), waits up to {@code
   * timeout} for the results of the actions already sent, then ends the call. (The server does
   * not end a Play call when the client half-closes it: it goes on delivering events.) Actions
   * still without a result fail with {@code CANCELLED}.
   *
   * @param timeout how long to wait for results
   */
  public void close(Duration timeout) {
    synchronized (lock) {
      if (done.isDone() || closing) {
        return;
      }
      closing = true;
      state = State.CLOSING;
      if (reconnectTimer != null || call == null) {
        finishLocked(null);
      } else {
        call.halfClose();
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
          long left;
          while (!pending.isEmpty()
              && call != null
              && (left = deadline - System.nanoTime()) > 0) {
            TimeUnit.NANOSECONDS.timedWait(lock, left);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
    cancel();
    try {
      done.get(1, TimeUnit.SECONDS);
    } catch (TimeoutException | ExecutionException e) {
      // ended with an error (done() says which), or still ending
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Ends the session politely, waiting up to 5 s ({@link #close(Duration)}). */
  @Override
  public void close() {
    close(Duration.ofSeconds(5));
  }

  /**
   * Ends the session at once: cancels the call. Actions without a result fail with {@code
   * CANCELLED}.
   */
  public void cancel() {
    synchronized (lock) {
      if (done.isDone()) {
        return;
      }
      closing = true;
      state = State.CLOSING;
      if (reconnectTimer != null) {
        finishLocked(null);
      } else if (call != null) {
        call.cancel("cancelled by the client", null);
      } else {
        finishLocked(null);
      }
    }
  }
}

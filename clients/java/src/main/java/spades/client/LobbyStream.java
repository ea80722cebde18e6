package spades.client;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * One of the lobby's streams: {@link LobbyClient#watchTable a table} (each {@code Table} as it
 * changes, until it has started or closed), {@link LobbyClient#watchTicket a ticket} (until it is
 * placed or cancelled) or {@link LobbyClient#watchLobby the lobby} (its change batches, {@code
 * WatchLobbyResponse}, for as long as it is open).
 *
 * <p>Like a {@link SeatSession}, the stream reconnects by itself when the connection drops ({@code
 * UNAVAILABLE}, or a failure without ErrorInfo), with the client's {@link RetryPolicy}, asking
 * the player credential again each time (a supplier's fresh one): a table or a ticket is asked
 * for again and delivered only if its {@code version} is past the last one delivered; the lobby
 * is followed again from the last batch's {@code version}, so no change is missed (a lobby
 * stream opened from version 0, "from now", that drops before its first batch resumes from now
 * again). A refusal ({@code UNAUTHENTICATED} with its reason, {@code NOT_FOUND}, ...) ends it.
 *
 * <p>Items are read with {@link #poll} or handed to a {@link Listener}. Every method is
 * thread-safe.
 *
 * @param <T> what the stream delivers: {@code Table}, {@code Ticket} or {@code
 *     WatchLobbyResponse}
 */
public final class LobbyStream<T> implements AutoCloseable {
  private static final Object END = new Object();
  /** A call that stayed open this long counts as a success even if it never answered. */
  private static final long HEALTHY_CALL_NANOS = TimeUnit.SECONDS.toNanos(10);

  /**
   * What a stream tells a listener. Callbacks come one at a time, in order.
   *
   * @param <T> what the stream delivers
   */
  public interface Listener<T> {
    /**
     * The next item: a table or a ticket as it is now, or a batch of lobby changes.
     *
     * @param item the item
     */
    void onNext(T item);

    /**
     * The connection dropped; the stream reconnects after {@code delay}.
     *
     * @param cause why the call ended
     * @param attempt the reconnection's number in a row, from 1
     * @param delay the wait before it
     */
    default void onReconnecting(SpadesException cause, int attempt, Duration delay) {}

    /**
     * The stream ended, for good.
     *
     * @param error null when the server ended it (the table started or closed, the ticket was
     *     placed or cancelled) or the client closed it; the error otherwise
     */
    default void onClosed(SpadesException error) {}
  }

  /** How to open one kind of stream, and read what it sends. */
  static final class Spec<Q, R, T> {
    final MethodDescriptor<Q, R> method;
    /** The request, given the version of the last item delivered (0: none yet). */
    final LongFunction<Q> request;
    final Function<R, T> item;
    final ToLongFunction<T> version;

    Spec(
        MethodDescriptor<Q, R> method,
        LongFunction<Q> request,
        Function<R, T> item,
        ToLongFunction<T> version) {
      this.method = method;
      this.request = request;
      this.item = item;
      this.version = version;
    }
  }

  private final SpadesClient client;
  private final Supplier<String> credential;
  private final Spec<?, ?, T> spec;
  private final Listener<T> listener;
  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  private final SerialExecutor callbacks;
  private final CompletableFuture<Void> done = new CompletableFuture<>();

  private final Object lock = new Object();
  // Everything below is guarded by lock.
  private long lastVersion;
  private ClientCall<?, ?> call;
  private int generation;
  private long callStartedNanos;
  private boolean answered;
  private int failures;
  private boolean closing;
  private boolean finished;
  private ScheduledFuture<?> reconnectTimer;
  private SpadesException failure;
  private int reconnections;

  LobbyStream(
      SpadesClient client,
      Supplier<String> credential,
      long afterVersion,
      Spec<?, ?, T> spec,
      Listener<T> listener) {
    this.client = client;
    this.credential = credential;
    this.lastVersion = afterVersion;
    this.spec = spec;
    this.listener = listener;
    this.callbacks = new SerialExecutor(client.callbackExecutor());
  }

  void start() {
    client.opened(this);
    synchronized (lock) {
      openLocked(spec);
    }
  }

  private <Q, R> void openLocked(Spec<Q, R, T> s) {
    int gen = ++generation;
    reconnectTimer = null;
    answered = false;
    callStartedNanos = System.nanoTime();
    Metadata headers;
    try {
      headers = Credentials.bearerOrNone(credential.get());
    } catch (RuntimeException e) {
      finishLocked(SpadesException.from(e));
      return;
    }
    ClientCall<Q, R> c = client.getChannel().newCall(s.method, CallOptions.DEFAULT);
    call = c;
    c.start(new CallListener<Q, R>(gen, c, s), headers);
    c.sendMessage(s.request.apply(lastVersion));
    c.halfClose();
    c.request(1);
  }

  /** Listens to one call; a call that was replaced is ignored. */
  private final class CallListener<Q, R> extends ClientCall.Listener<R> {
    private final int gen;
    private final ClientCall<Q, R> c;
    private final Spec<Q, R, T> s;

    CallListener(int gen, ClientCall<Q, R> c, Spec<Q, R, T> s) {
      this.gen = gen;
      this.c = c;
      this.s = s;
    }

    @Override
    public void onHeaders(Metadata headers) {
      synchronized (lock) {
        if (gen == generation) {
          answered();
        }
      }
    }

    @Override
    public void onMessage(R message) {
      synchronized (lock) {
        if (gen != generation || call == null) {
          return;
        }
        answered();
        T item = s.item.apply(message);
        long v = s.version.applyAsLong(item);
        // After a reconnection a table or ticket comes again as it is: deliver it only if changed.
        if (Long.compareUnsigned(v, lastVersion) > 0) {
          lastVersion = v;
          if (listener == null) {
            queue.add(item);
          } else {
            callbacks.execute(() -> listener.onNext(item));
          }
        }
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
        SpadesException error =
            status.isOk() ? null : SpadesException.fromStatus(status, trailers, null);
        if (closing) {
          finishLocked(null);
        } else if (error == null) {
          finishLocked(null); // the table started or closed, the ticket was placed or cancelled
        } else if (SeatSession.retryable(error)) {
          if (answered || System.nanoTime() - callStartedNanos >= HEALTHY_CALL_NANOS) {
            failures = 0;
          }
          if (failures >= client.retryPolicy().getMaxAttempts()) {
            finishLocked(error);
            return;
          }
          failures++;
          Duration delay = client.retryPolicy().delay(failures);
          int attempt = failures;
          if (listener != null) {
            callbacks.execute(() -> listener.onReconnecting(error, attempt, delay));
          }
          try {
            reconnectTimer =
                client
                    .scheduler()
                    .schedule(LobbyStream.this::reconnect, delay.toNanos(), TimeUnit.NANOSECONDS);
          } catch (RejectedExecutionException e) {
            finishLocked(error); // the client was closed
          }
        } else {
          finishLocked(error);
        }
      }
    }
  }

  private void answered() {
    if (!answered) {
      answered = true;
      failures = 0;
    }
  }

  private void reconnect() {
    synchronized (lock) {
      if (reconnectTimer != null && !closing && !finished) {
        reconnections++;
        openLocked(spec);
      }
    }
  }

  private void finishLocked(SpadesException error) {
    if (finished) {
      return;
    }
    finished = true;
    call = null;
    if (reconnectTimer != null) {
      reconnectTimer.cancel(false);
      reconnectTimer = null;
    }
    failure = error;
    client.ended(this);
    queue.add(END);
    callbacks.execute(
        () -> {
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
   * The next item, waiting up to {@code timeout}. Only without a {@link Listener}.
   *
   * @param timeout how long to wait
   * @return the item; null if none came in time, or if the stream has ended and every item was
   *     read
   * @throws SpadesException once every item was read, if the stream ended with an error
   * @throws InterruptedException if interrupted while waiting
   */
  public T poll(Duration timeout) throws InterruptedException {
    if (listener != null) {
      throw new IllegalStateException("this stream hands its items to a listener");
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
    @SuppressWarnings("unchecked") // only items of type T and END are queued
    T item = (T) o;
    return item;
  }

  /**
   * The version of the last item delivered (or the {@code afterVersion} the stream was opened
   * with): where it resumes after a drop.
   *
   * @return the version
   */
  public long lastVersion() {
    synchronized (lock) {
      return lastVersion;
    }
  }

  /**
   * How many times the stream has reopened its call after a drop.
   *
   * @return the count
   */
  public int reconnections() {
    synchronized (lock) {
      return reconnections;
    }
  }

  /**
   * Completes when the stream has ended: normally when the server ended it or the client closed
   * it, exceptionally with a {@link SpadesException} otherwise.
   *
   * @return the future
   */
  public CompletableFuture<Void> done() {
    return done;
  }

  /** Ends the stream at once (cancels its call); {@link #done()} completes normally. */
  @Override
  public void close() {
    synchronized (lock) {
      if (closing || finished) {
        return;
      }
      closing = true;
      if (call != null) {
        call.cancel("closed by the client", null);
      } else {
        finishLocked(null);
      }
    }
  }

  /** An error made by the client, not the server, for the lobby's waiting helpers. */
  static SpadesException clientError(
      Status.Code code, String reason, String message, String... metadata) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i + 1 < metadata.length; i += 2) {
      m.put(metadata[i], metadata[i + 1]);
    }
    return new SpadesException(
        code,
        message,
        reason,
        reason.isEmpty() ? "" : "spades.client",
        m,
        Collections.emptyList(),
        null);
  }
}

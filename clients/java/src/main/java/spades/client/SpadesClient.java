package spades.client;

import io.grpc.CallOptions;
import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.MetadataUtils;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import spades.v1.Spades.CreateMatchRequest;
import spades.v1.Spades.CreateMatchResponse;
import spades.v1.Spades.GetMatchRequest;
import spades.v1.Spades.ListMatchesRequest;
import spades.v1.Spades.ListMatchesResponse;
import spades.v1.Spades.MatchSummary;
import spades.v1.Spades.ReissueSeatTokenRequest;
import spades.v1.Spades.ReissueSeatTokenResponse;
import spades.v1.Spades.SetSpectatorsRequest;
import spades.v1.Spades.SetSpectatorsResponse;
import spades.v1.Spades.Spectators;
import spades.v1.LobbyServiceGrpc;
import spades.v1.LobbyServiceGrpc.LobbyServiceBlockingStub;
import spades.v1.SpadesServiceGrpc;
import spades.v1.SpadesServiceGrpc.SpadesServiceBlockingStub;

/**
 * A client of one Spades server: the operator's calls, {@link #seat seats} to play, and {@link
 * #lobby the lobby} of a player (tables, invitations, quick play).
 *
 * <pre>{@code
 * try (SpadesClient client = SpadesClient.builder("127.0.0.1:50051")
 *         .plaintext()
 *         .transport(Transport.OKHTTP)
 *         .operatorToken(token)
 *         .build()) {
 *   CreateMatchResponse created = client.createMatch(request);
 *   SeatClient seat = client.seat(created.getSeatTokens(0).getToken());
 *   ...
 * }
 * }</pre>
 *
 * <p>Calls block the calling thread (not the Android main thread, then) for at most the default
 * deadline, and throw {@link SpadesException} when refused. The client is thread-safe; one client
 * (one channel) serves any number of seats and sessions.
 */
public final class SpadesClient implements AutoCloseable {
  private final ManagedChannel channel;
  private final boolean ownsChannel;
  private final Duration deadline;
  private final String operatorToken;
  private final RetryPolicy retryPolicy;
  private final ScheduledExecutorService scheduler;
  private final ExecutorService callbackExecutor;
  private final Set<SeatSession> sessions = ConcurrentHashMap.newKeySet();
  private final Set<LobbyStream<?>> streams = ConcurrentHashMap.newKeySet();

  private SpadesClient(Builder b, ManagedChannel channel, boolean ownsChannel) {
    this.channel = channel;
    this.ownsChannel = ownsChannel;
    this.deadline = b.deadline;
    this.operatorToken = b.operatorToken;
    this.retryPolicy = b.retryPolicy;
    this.scheduler = Executors.newSingleThreadScheduledExecutor(daemon("spades-client-timer"));
    this.callbackExecutor = Executors.newCachedThreadPool(daemon("spades-client-callback"));
  }

  /**
   * A builder for a client of the server at {@code target} ({@code host:port}, or any gRPC target
   * string).
   *
   * @param target where the server is
   * @return the builder
   */
  public static Builder builder(String target) {
    return new Builder(Objects.requireNonNull(target, "target"), null);
  }

  /**
   * A builder for a client on a channel the caller made (and closes: {@link #close()} leaves it
   * open). Its transport, TLS and keepalive settings are the caller's.
   *
   * @param channel the channel
   * @return the builder
   */
  public static Builder builder(ManagedChannel channel) {
    return new Builder(null, Objects.requireNonNull(channel, "channel"));
  }

  /** Settings of a {@link SpadesClient}. */
  public static final class Builder {
    private final String target;
    private final ManagedChannel channel;
    private Transport transport = Transport.OKHTTP;
    private boolean tls = true;
    private byte[] trustedCertificates; // PEM; null: the platform's
    private byte[] clientCertificate; // PEM chain, with clientKey: mutual TLS
    private byte[] clientKey;
    private ChannelCredentials credentials; // the caller's own, over all of the above
    private Duration deadline = Duration.ofSeconds(10);
    private Duration keepAlive = Duration.ofSeconds(30);
    private String operatorToken;
    private RetryPolicy retryPolicy = RetryPolicy.DEFAULT;

    private Builder(String target, ManagedChannel channel) {
      this.target = target;
      this.channel = channel;
    }

    /**
     * Plaintext HTTP/2, for a server on this machine or behind a TLS-terminating proxy in a
     * network you trust. (The default is TLS.)
     *
     * @return this builder
     */
    public Builder plaintext() {
      this.tls = false;
      return this;
    }

    /**
     * TLS with the platform's trusted certificates (the default).
     *
     * @return this builder
     */
    public Builder tls() {
      this.tls = true;
      return this;
    }

    /**
     * TLS trusting the CA certificates of a PEM file (a private CA that signed the server's
     * certificate) instead of the platform's. The file is read now.
     *
     * @param caCertificates PEM file of the CA certificates
     * @return this builder
     * @throws UncheckedIOException if the file cannot be read
     */
    public Builder tls(Path caCertificates) {
      this.trustedCertificates = read(caCertificates);
      this.tls = true;
      return this;
    }

    /**
     * Mutual TLS: presents this client certificate, which a server started with {@code
     * --tls-client-ca} requires on its operator port (operator calls are refused elsewhere,
     * PERMISSION_DENIED CLIENT_CERT_REQUIRED). Combine it with {@link #tls(Path)} for a private
     * CA. The files are read now.
     *
     * @param certificateChain PEM file of the certificate (and any intermediates)
     * @param privateKey PEM file of its unencrypted PKCS#8 private key
     * @return this builder
     * @throws UncheckedIOException if a file cannot be read
     */
    public Builder clientCertificate(Path certificateChain, Path privateKey) {
      this.clientCertificate = read(certificateChain);
      this.clientKey = read(privateKey);
      this.tls = true;
      return this;
    }

    /**
     * The channel's credentials as the caller made them (a {@code TlsChannelCredentials} with a
     * key manager of its own, say); they take the place of {@link #plaintext()}, {@link
     * #tls(Path)} and {@link #clientCertificate}.
     *
     * @param credentials the credentials
     * @return this builder
     */
    public Builder credentials(ChannelCredentials credentials) {
      this.credentials = Objects.requireNonNull(credentials, "credentials");
      return this;
    }

    private static byte[] read(Path path) {
      try {
        return Files.readAllBytes(path);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + path, e);
      }
    }

    private ChannelCredentials channelCredentials() {
      if (credentials != null) {
        return credentials;
      }
      if (!tls) {
        return InsecureChannelCredentials.create();
      }
      TlsChannelCredentials.Builder b = TlsChannelCredentials.newBuilder();
      try {
        if (trustedCertificates != null) {
          b.trustManager(new ByteArrayInputStream(trustedCertificates));
        }
        if (clientCertificate != null) {
          b.keyManager(
              new ByteArrayInputStream(clientCertificate), new ByteArrayInputStream(clientKey));
        }
      } catch (IOException e) {
        throw new IllegalArgumentException("the TLS certificates or key are not usable PEM", e);
      }
      return b.build();
    }

    /**
     * The transport: {@link Transport#OKHTTP} (the default; Android) or {@link Transport#NETTY}.
     *
     * @param transport the transport
     * @return this builder
     */
    public Builder transport(Transport transport) {
      this.transport = Objects.requireNonNull(transport, "transport");
      return this;
    }

    /**
     * The deadline of each unary call (10 s by default). A session's Play call has none.
     *
     * @param deadline the deadline
     * @return this builder
     */
    public Builder defaultDeadline(Duration deadline) {
      if (deadline.isNegative() || deadline.isZero()) {
        throw new IllegalArgumentException("deadline must be positive");
      }
      this.deadline = deadline;
      return this;
    }

    /**
     * How long a connection may carry nothing before the client pings it (30 s by default; the
     * server refuses pings more often than every 10 s). A dead connection is noticed within about
     * this time plus 20 s.
     *
     * @param keepAlive the interval
     * @return this builder
     */
    public Builder keepAlive(Duration keepAlive) {
      this.keepAlive = Objects.requireNonNull(keepAlive, "keepAlive");
      return this;
    }

    /**
     * The operator credential, for {@link #createMatch}, {@link #getMatch}, {@link #listMatches},
     * {@link #reissueSeatToken} and {@link #setSpectators}.
     *
     * @param token the server's operator token
     * @return this builder
     */
    public Builder operatorToken(String token) {
      this.operatorToken = token;
      return this;
    }

    /**
     * How sessions reconnect and safe calls retry ({@link RetryPolicy#DEFAULT} by default).
     *
     * @param policy the policy
     * @return this builder
     */
    public Builder retryPolicy(RetryPolicy policy) {
      this.retryPolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * The client.
     *
     * @return a new client
     */
    public SpadesClient build() {
      if (channel != null) {
        return new SpadesClient(this, channel, false);
      }
      ManagedChannelBuilder<?> b = transport.builder(target, channelCredentials());
      if (!keepAlive.isZero()) {
        b.keepAliveTime(keepAlive.toNanos(), TimeUnit.NANOSECONDS)
            .keepAliveTimeout(20, TimeUnit.SECONDS)
            .keepAliveWithoutCalls(false);
      }
      return new SpadesClient(this, b.build(), true);
    }
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /**
   * The channel the client calls on.
   *
   * @return the channel
   */
  public ManagedChannel getChannel() {
    return channel;
  }

  /**
   * A seat of a match, acting with its seat token ({@code <match_id>.<secret>}, as CreateMatch
   * returned it); the match id is the token's.
   *
   * @param seatToken the seat token
   * @return the seat
   */
  public SeatClient seat(String seatToken) {
    int dot = seatToken.indexOf('.');
    return seat(dot > 0 ? seatToken.substring(0, dot) : "", seatToken);
  }

  /**
   * A seat of match {@code matchId}, acting with {@code seatToken}.
   *
   * @param matchId the match id (may be "" for the token's own)
   * @param seatToken the seat token
   * @return the seat
   */
  public SeatClient seat(String matchId, String seatToken) {
    return new SeatClient(this, matchId, seatToken);
  }

  /**
   * The lobby as one player sees it ({@code spades.v1.LobbyService}): tables, invitations, quick
   * play. Every call sends {@code playerCredential}, the JWT the game's identity provider signed
   * for the player ({@code authorization: Bearer <jwt>}); the client never makes one. A refused
   * credential is {@code UNAUTHENTICATED} with a reason ({@code CREDENTIAL_EXPIRED}, {@code
   * BAD_SIGNATURE}, ..., {@code CREDENTIAL_REQUIRED} for an empty one, which sends no header).
   *
   * @param playerCredential the player's credential
   * @return the player's lobby
   */
  public LobbyClient lobby(String playerCredential) {
    Objects.requireNonNull(playerCredential, "playerCredential");
    return new LobbyClient(this, () -> playerCredential);
  }

  /**
   * The lobby of a player whose credential changes: {@code playerCredential} is asked before
   * every call, every retry and every reconnection of a stream, so it can hand out a fresh JWT
   * once the old one is about to expire. It is called on the calling thread or on one of the
   * client's, and should answer quickly (a cached token).
   *
   * @param playerCredential gives the player's current credential
   * @return the player's lobby
   */
  public LobbyClient lobby(Supplier<String> playerCredential) {
    return new LobbyClient(this, Objects.requireNonNull(playerCredential, "playerCredential"));
  }

  /**
   * Creates a match (operator).
   *
   * @param request the match to create
   * @return the match's summary and one token per human seat
   * @throws SpadesException if refused
   */
  public CreateMatchResponse createMatch(CreateMatchRequest request) {
    return call(() -> operatorStub().createMatch(request));
  }

  /**
   * One match's public summary (operator). Retried after a dropped connection.
   *
   * @param matchId the match id
   * @return the summary
   * @throws SpadesException if refused
   */
  public MatchSummary getMatch(String matchId) {
    GetMatchRequest request = GetMatchRequest.newBuilder().setMatchId(matchId).build();
    return retrying(() -> operatorStub().getMatch(request).getMatch());
  }

  /**
   * One page of matches, newest first (operator). Retried after a dropped connection.
   *
   * @param request the page size and token
   * @return the page
   * @throws SpadesException if refused
   */
  public ListMatchesResponse listMatches(ListMatchesRequest request) {
    return retrying(() -> operatorStub().listMatches(request));
  }

  /**
   * Replaces a human seat's token (operator): the old one is refused from then on, the streams
   * and sessions opened with it end (UNAUTHENTICATED, reason TOKEN_REVOKED), and the seat is OPEN
   * again. Retried after a dropped connection: a repeat replaces the token once more, and its
   * answer holds the token that is current.
   *
   * @param matchId the match id
   * @param seat the human seat
   * @return the new seat token and the match's summary
   * @throws SpadesException if refused
   */
  public ReissueSeatTokenResponse reissueSeatToken(String matchId, int seat) {
    ReissueSeatTokenRequest request =
        ReissueSeatTokenRequest.newBuilder().setMatchId(matchId).setSeat(seat).build();
    return retrying(() -> operatorStub().reissueSeatToken(request));
  }

  /**
   * Changes who may watch a match (operator). With {@link Spectators#SPECTATORS_TOKEN} the answer
   * has a new spectator token (an earlier one is refused from then on). Retried like {@link
   * #reissueSeatToken}.
   *
   * @param matchId the match id
   * @param spectators who may watch from now on
   * @return the spectator token (with TOKEN) and the match's summary
   * @throws SpadesException if refused
   */
  public SetSpectatorsResponse setSpectators(String matchId, Spectators spectators) {
    SetSpectatorsRequest request =
        SetSpectatorsRequest.newBuilder().setMatchId(matchId).setSpectators(spectators).build();
    return retrying(() -> operatorStub().setSpectators(request));
  }

  /**
   * A stub of the generated service that sends {@code credential} ({@code authorization: Bearer
   * <credential>}) on every call, for the calls this class does not wrap: {@code Spectate} or
   * {@code PollEvents} with a match's spectator token, say. Its calls have no deadline (a
   * stream's lasts as long as the match); add one with {@code withDeadlineAfter} for unary calls.
   *
   * @param credential a spectator token, a seat token or the operator token
   * @return the stub
   */
  public SpadesServiceGrpc.SpadesServiceStub asyncStub(String credential) {
    return SpadesServiceGrpc.newStub(channel)
        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(Credentials.bearer(credential)));
  }

  private SpadesServiceBlockingStub operatorStub() {
    if (operatorToken == null) {
      throw new IllegalStateException("this call needs the operator token: Builder.operatorToken");
    }
    return stub(operatorToken);
  }

  SpadesServiceBlockingStub stub(String secret) {
    return SpadesServiceGrpc.newBlockingStub(channel)
        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(Credentials.bearer(secret)))
        .withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * The lobby's blocking stub sending {@code secret} (none if empty), with the default deadline
   * plus {@code wait} (a long poll's).
   */
  LobbyServiceBlockingStub lobbyStub(String secret, Duration wait) {
    return LobbyServiceGrpc.newBlockingStub(channel)
        .withInterceptors(
            MetadataUtils.newAttachHeadersInterceptor(Credentials.bearerOrNone(secret)))
        .withDeadlineAfter(deadline.plus(wait).toNanos(), TimeUnit.NANOSECONDS);
  }

  CallOptions playCallOptions() {
    return CallOptions.DEFAULT;
  }

  RetryPolicy retryPolicy() {
    return retryPolicy;
  }

  ScheduledExecutorService scheduler() {
    return scheduler;
  }

  Executor callbackExecutor() {
    return callbackExecutor;
  }

  void opened(SeatSession session) {
    sessions.add(session);
  }

  void ended(SeatSession session) {
    sessions.remove(session);
  }

  void opened(LobbyStream<?> stream) {
    streams.add(stream);
  }

  void ended(LobbyStream<?> stream) {
    streams.remove(stream);
  }

  /** Runs one call, turning its failure into a SpadesException. */
  static <T> T call(Supplier<T> call) {
    try {
      return call.get();
    } catch (RuntimeException e) {
      throw SpadesException.from(e);
    }
  }

  /**
   * Runs a call that is safe to repeat, again after a dropped connection ({@code UNAVAILABLE},
   * or a transport failure without ErrorInfo) as the retry policy allows.
   */
  <T> T retrying(Supplier<T> call) {
    for (int attempt = 1; ; attempt++) {
      try {
        return call.get();
      } catch (RuntimeException e) {
        SpadesException error = SpadesException.from(e);
        if (!SeatSession.retryable(error) || attempt > retryPolicy.getMaxAttempts()) {
          throw error;
        }
        try {
          Thread.sleep(retryPolicy.delay(attempt).toMillis());
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw error;
        }
      }
    }
  }

  /**
   * Cancels the sessions and lobby streams still open, stops the client's timers and, if the client made its
   * channel, shuts the channel down. Waits up to 5 s for calls to finish.
   */
  @Override
  public void close() {
    for (SeatSession s : sessions) {
      s.cancel();
    }
    for (LobbyStream<?> s : streams) {
      s.close();
    }
    scheduler.shutdownNow();
    callbackExecutor.shutdown();
    if (ownsChannel) {
      channel.shutdownNow();
      try {
        channel.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}

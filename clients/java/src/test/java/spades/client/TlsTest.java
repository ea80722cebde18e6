package spades.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import spades.v1.Spades.CreateMatchRequest;
import spades.v1.Spades.CreateMatchResponse;
import spades.v1.Spades.ReissueSeatTokenResponse;
import spades.v1.Spades.SeatConfig;
import spades.v1.Spades.SetSpectatorsResponse;
import spades.v1.Spades.SpectateRequest;
import spades.v1.Spades.SpectateResponse;
import spades.v1.Spades.Spectators;

/**
 * TLS and mutual TLS over both transports against serve.py --tls (certificates made for the
 * run): a player on the main port trusting the run's CA, the operator on the operator port with
 * a client certificate; a private match, its spectator token, reissueSeatToken and
 * setSpectators; the README's TLS example.
 */
class TlsTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static Harness harness;

  @BeforeAll
  static void startServer() throws Exception {
    harness = Harness.start("--tls");
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (harness != null) {
      harness.close();
    }
  }

  private static SpadesClient operator(Transport transport) {
    return SpadesClient.builder(harness.operator)
        .tls(harness.ca)
        .clientCertificate(harness.clientCert, harness.clientKey)
        .transport(transport)
        .operatorToken(harness.operatorToken)
        .build();
  }

  private static SpadesClient player(Transport transport) {
    return SpadesClient.builder(harness.address)
        .tls(harness.ca)
        .transport(transport)
        .operatorToken(harness.operatorToken)
        .retryPolicy(RetryPolicy.NONE)
        .build();
  }

  /** The first answer of a Spectate call, or how it ended. */
  private static CompletableFuture<SpectateResponse> spectate(
      SpadesClient client, String matchId, String token) {
    CompletableFuture<SpectateResponse> first = new CompletableFuture<>();
    client
        .asyncStub(token)
        .spectate(
            SpectateRequest.newBuilder().setMatchId(matchId).build(),
            new StreamObserver<SpectateResponse>() {
              @Override
              public void onNext(SpectateResponse response) {
                first.complete(response);
              }

              @Override
              public void onError(Throwable t) {
                first.completeExceptionally(SpadesException.from(t));
              }

              @Override
              public void onCompleted() {
                first.completeExceptionally(new AssertionError("the stream ended"));
              }
            });
    return first;
  }

  private static SpadesException refusal(CompletableFuture<?> f) {
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> f.get(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof SpadesException, "not a SpadesException: " + e.getCause());
    return (SpadesException) e.getCause();
  }

  private static void assertRefused(SpadesException e, Status.Code code, String reason) {
    assertEquals(code, e.getCode(), e.toString());
    assertEquals(reason, e.getReason(), e.toString());
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void playersOnTlsAndTheOperatorOnMutualTls(Transport transport) throws Exception {
    try (SpadesClient operator = operator(transport);
        SpadesClient player = player(transport)) {
      CreateMatchRequest.Builder request =
          CreateMatchRequest.newBuilder()
              .addSeats(SeatConfig.newBuilder().setName("Me"))
              .setSpectators(Spectators.SPECTATORS_TOKEN);
      for (int i = 0; i < 3; i++) {
        request.addSeats(SeatConfig.newBuilder().setBot(true));
      }
      CreateMatchResponse created = operator.createMatch(request.build());
      String matchId = created.getMatch().getMatchId();
      assertEquals(Spectators.SPECTATORS_TOKEN, created.getMatch().getSpectators());
      assertTrue(created.getSpectatorToken().startsWith(matchId + "."));
      SeatClient seat = player.seat(created.getSeatTokens(0).getToken());
      assertEquals(0, seat.claim().getSeat());

      // The operator token on the players' port: refused, it needs the certificate.
      assertRefused(
          assertThrows(SpadesException.class, () -> player.getMatch(matchId)),
          Status.Code.PERMISSION_DENIED,
          "CLIENT_CERT_REQUIRED");

      assertTrue(
          spectate(player, matchId, created.getSpectatorToken())
                  .get(WAIT.toSeconds(), TimeUnit.SECONDS)
                  .getEventsCount()
              > 0);
      assertRefused(
          refusal(spectate(player, matchId, matchId + ".not-the-token")),
          Status.Code.UNAUTHENTICATED,
          "BAD_SPECTATOR_TOKEN");

      // The old token's session ends when the operator replaces it.
      try (SeatSession session = seat.openSession()) {
        session.poll(WAIT);
        ReissueSeatTokenResponse reissued = operator.reissueSeatToken(matchId, 0);
        assertEquals(0, reissued.getSeatToken().getSeat());
        assertRefused(refusal(session.done()), Status.Code.UNAUTHENTICATED, "TOKEN_REVOKED");
        player.seat(reissued.getSeatToken().getToken()).claim();
      }

      SetSpectatorsResponse changed = operator.setSpectators(matchId, Spectators.SPECTATORS_NONE);
      assertEquals(Spectators.SPECTATORS_NONE, changed.getMatch().getSpectators());
      assertEquals("", changed.getSpectatorToken());
      assertRefused(
          refusal(spectate(player, matchId, created.getSpectatorToken())),
          Status.Code.PERMISSION_DENIED,
          "NOT_SPECTATABLE");
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void noConnectionWithoutTheClientCertificateTheCaOrTls(Transport transport) {
    RetryPolicy once = RetryPolicy.NONE;
    SpadesClient[] clients = {
      SpadesClient.builder(harness.operator).tls(harness.ca).transport(transport).retryPolicy(once)
          .operatorToken(harness.operatorToken).build(),
      SpadesClient.builder(harness.address).tls().transport(transport).retryPolicy(once)
          .operatorToken(harness.operatorToken).build(),
      SpadesClient.builder(harness.address).plaintext().transport(transport).retryPolicy(once)
          .operatorToken(harness.operatorToken).build(),
    };
    for (SpadesClient client : clients) {
      try (client) {
        SpadesException e =
            assertThrows(SpadesException.class, () -> client.getMatch("no-such-match"));
        assertEquals(Status.Code.UNAVAILABLE, e.getCode(), e.toString());
      }
    }
  }

  @Test
  void unreadableFilesFailTheBuilder() throws Exception {
    assertThrows(
        UncheckedIOException.class,
        () -> SpadesClient.builder(harness.address).tls(harness.ca.resolveSibling("missing.crt")));
    // A key where the CA should be: no certificate in it.
    assertThrows(
        IllegalArgumentException.class,
        () -> SpadesClient.builder(harness.address).tls(harness.clientKey).build());
  }

  @Test
  void readmeShowsTheTlsExampleAndItRuns() throws Exception {
    String source =
        Files.readString(
            Harness.repoRoot().resolve("clients/java/src/test/java/example/TlsConnect.java"),
            StandardCharsets.UTF_8);
    String readme =
        Files.readString(
            Harness.repoRoot().resolve("clients/java/README.md"), StandardCharsets.UTF_8);
    assertTrue(
        readme.contains("```java\n" + source + "```\n"),
        "README.md's TLS example is not src/test/java/example/TlsConnect.java as it is");
    PrintStream out = System.out;
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
    try {
      example.TlsConnect.main(
          new String[] {
            harness.address,
            harness.operator,
            harness.ca.toString(),
            harness.clientCert.toString(),
            harness.clientKey.toString(),
            harness.operatorToken
          });
    } finally {
      System.setOut(out);
    }
    assertEquals(
        "seat 0 claimed over TLS\na spectator sees hand_started\n",
        printed.toString(StandardCharsets.UTF_8));
  }
}

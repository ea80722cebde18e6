package example;

import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import spades.client.SpadesClient;
import spades.client.Transport;
import spades.v1.Spades.CreateMatchRequest;
import spades.v1.Spades.CreateMatchResponse;
import spades.v1.Spades.SeatConfig;
import spades.v1.Spades.SpectateRequest;
import spades.v1.Spades.SpectateResponse;
import spades.v1.Spades.Spectators;

/**
 * Creates a private match over the operator port (mutual TLS: a client certificate the server's
 * --tls-client-ca signed), claims its seat over the players' TLS port, and watches it with the
 * match's spectator token. Arguments: players' address, operator address, CA, client certificate,
 * its key, operator token.
 */
public final class TlsConnect {
  public static void main(String[] args) throws Exception {
    String address = args[0]; // the players' port: TLS
    String operatorAddress = args[1]; // the operator port: mutual TLS
    Path ca = Paths.get(args[2]);
    Path cert = Paths.get(args[3]);
    Path key = Paths.get(args[4]);

    try (SpadesClient operator =
            SpadesClient.builder(operatorAddress)
                .tls(ca) // trust the CA that signed the server's certificate
                .clientCertificate(cert, key) // and present the operator's
                .transport(Transport.OKHTTP)
                .operatorToken(args[5])
                .build();
        SpadesClient player =
            SpadesClient.builder(address).tls(ca).transport(Transport.OKHTTP).build()) {
      CreateMatchRequest.Builder request =
          CreateMatchRequest.newBuilder()
              .addSeats(SeatConfig.newBuilder().setName("You"))
              .setSpectators(Spectators.SPECTATORS_TOKEN); // watched with its token only
      for (int i = 0; i < 3; i++) {
        request.addSeats(SeatConfig.newBuilder().setBot(true));
      }
      CreateMatchResponse created = operator.createMatch(request.build());
      int seat = player.seat(created.getSeatTokens(0).getToken()).claim().getSeat();
      System.out.println("seat " + seat + " claimed over TLS");

      // Spectate is not wrapped: the generated stub, sending the spectator token.
      CompletableFuture<SpectateResponse> first = new CompletableFuture<>();
      player
          .asyncStub(created.getSpectatorToken())
          .spectate(
              SpectateRequest.newBuilder().setMatchId(created.getMatch().getMatchId()).build(),
              new StreamObserver<SpectateResponse>() {
                @Override
                public void onNext(SpectateResponse response) {
                  first.complete(response);
                }

                @Override
                public void onError(Throwable t) {
                  first.completeExceptionally(t);
                }

                @Override
                public void onCompleted() {}
              });
      SpectateResponse events = first.get(10, TimeUnit.SECONDS);
      System.out.println(
          "a spectator sees " + events.getEvents(0).getKindCase().name().toLowerCase());
    }
  }
}

package example;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import spades.client.LobbyClient;
import spades.client.SeatClient;
import spades.client.SeatSession;
import spades.client.SpadesClient;
import spades.client.Transport;
import spades.v1.Lobby.Placement;
import spades.v1.Lobby.TableSeat;
import spades.v1.Lobby.Ticket;
import spades.v1.Spades.MatchEvent;
import spades.v1.Spades.Ruleset;
import spades.v1.Spades.SeatView;

/**
 * Asks for a game with quick play, waits for the seat (bots take the seats nobody took once the
 * server's wait is over), then plays the first hand, always the first legal action. Arguments:
 * the server's address and the player's credential, the JWT the game's sign-in gives.
 */
public final class QuickPlay {
  public static void main(String[] args) throws Exception {
    String address = args.length > 0 ? args[0] : "localhost:50051";
    String credential = args.length > 1 ? args[1] : System.getenv("SPADES_PLAYER_CREDENTIAL");

    try (SpadesClient client =
        SpadesClient.builder(address).plaintext().transport(Transport.OKHTTP).build()) {
      // Every lobby call carries the credential; client.lobby(() -> signIn.currentJwt()) asks
      // for a fresh one each time instead.
      LobbyClient lobby = client.lobby(credential);
      Ticket ticket = lobby.quickPlay(Ruleset.newBuilder().setPreset("classic").build());
      System.out.println("ticket " + ticket.getTicketId() + ": looking for a table");
      // Long polls until the matchmaker has seated us; after a lost connection,
      // lobby.awaitPlacement(timeout) (the latest ticket) gives the same seat again.
      Placement placement = lobby.awaitPlacement(ticket, Duration.ofMinutes(2));
      StringBuilder names = new StringBuilder();
      for (TableSeat s : placement.getTable().getSeatsList()) {
        names.append(names.length() > 0 ? ", " : "").append(s.getName());
      }
      System.out.println(
          "seat " + placement.getSeat() + " of match " + placement.getMatchId() + ": " + names);

      // The placement's seat token plays the seat like any seat token.
      SeatClient seat = lobby.seat(placement);
      try (SeatSession session = seat.openSession()) {
        while (true) {
          SeatView view = seat.getView();
          if (view.getLegalActionsCount() > 0) {
            session.send(view.getLegalActions(0)).get(10, TimeUnit.SECONDS);
          }
          MatchEvent event = session.poll(Duration.ofSeconds(60));
          if (event == null) {
            throw new IllegalStateException("no event for 60 s");
          }
          if (event.hasHandScored()) {
            System.out.println(
                "hand scored: "
                    + event.getHandScored().getSides(0).getScore()
                    + " to "
                    + event.getHandScored().getSides(1).getScore());
            break;
          }
        }
      }
    }
  }
}

package example;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import spades.client.SeatClient;
import spades.client.SeatSession;
import spades.client.SpadesClient;
import spades.client.Transport;
import spades.v1.Spades.Action;
import spades.v1.Spades.BotLevel;
import spades.v1.Spades.Card;
import spades.v1.Spades.CreateMatchRequest;
import spades.v1.Spades.CreateMatchResponse;
import spades.v1.Spades.MatchEvent;
import spades.v1.Spades.Ruleset;
import spades.v1.Spades.SeatConfig;
import spades.v1.Spades.SeatView;
import spades.v1.Spades.SideScore;

/** Creates a match against three bots and plays its first hand, always the first legal action. */
public final class PlayAHand {
  public static void main(String[] args) throws Exception {
    String address = args.length > 0 ? args[0] : "localhost:50051";
    String operatorToken = args.length > 1 ? args[1] : System.getenv("SPADES_OPERATOR_TOKEN");

    try (SpadesClient client =
        SpadesClient.builder(address)
            .plaintext() // the server listens without TLS; .tls() behind a TLS proxy
            .transport(Transport.OKHTTP) // or Transport.NETTY on a JVM
            .defaultDeadline(Duration.ofSeconds(10))
            .operatorToken(operatorToken)
            .build()) {
      CreateMatchRequest.Builder request =
          CreateMatchRequest.newBuilder()
              .setRuleset(Ruleset.newBuilder().setPreset("classic"))
              .addSeats(SeatConfig.newBuilder().setName("You"));
      for (String name : new String[] {"West", "North", "East"}) {
        request.addSeats(
            SeatConfig.newBuilder()
                .setName(name)
                .setBot(true)
                .setBotLevel(BotLevel.BOT_LEVEL_NORMAL));
      }
      CreateMatchResponse created = client.createMatch(request.build());
      SeatClient seat = client.seat(created.getSeatTokens(0).getToken());
      int you = seat.claim().getSeat();
      System.out.println("match " + created.getMatch().getMatchId() + ", you are seat " + you);

      try (SeatSession session = seat.openSession()) {
        while (true) {
          SeatView view = seat.getView();
          if (view.getLegalActionsCount() > 0) {
            Action action = view.getLegalActions(0); // a real client asks its player
            // A refusal fails the future with a SpadesException (getReason(), getRule()).
            session.send(action).get(10, TimeUnit.SECONDS);
          }
          MatchEvent event = session.poll(Duration.ofSeconds(10));
          if (event == null) {
            throw new IllegalStateException("no event for 10 s");
          }
          System.out.println(event.getSeq() + " " + describe(event));
          if (event.hasHandScored()) {
            break;
          }
        }
      }
    }
  }

  static String describe(MatchEvent e) {
    switch (e.getKindCase()) {
      case BID_MADE:
        return "seat " + e.getBidMade().getSeat() + " bids " + e.getBidMade().getTricks();
      case CARD_PLAYED:
        return "seat " + e.getCardPlayed().getSeat() + " plays "
            + card(e.getCardPlayed().getCard());
      case TRICK_WON:
        return "seat " + e.getTrickWon().getWinner() + " wins trick "
            + e.getTrickWon().getTrickNumber();
      case HAND_SCORED:
        StringBuilder b = new StringBuilder("hand scored:");
        for (SideScore side : e.getHandScored().getSidesList()) {
          b.append(" side ").append(side.getSide()).append(' ').append(side.getHandPoints())
              .append(" (total ").append(side.getScore()).append(')');
        }
        return b.toString();
      default:
        return e.getKindCase().name().toLowerCase();
    }
  }

  static String card(Card c) {
    return c.getRank().name().substring(5) + " of " + c.getSuit().name().substring(5);
  }
}

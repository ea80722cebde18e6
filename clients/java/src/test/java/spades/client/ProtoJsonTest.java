package spades.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.MessageLite;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import spades.v1.Spades.Action;
import spades.v1.Spades.BidAction;
import spades.v1.Spades.BidMade;
import spades.v1.Spades.BiddingClosed;
import spades.v1.Spades.BlindNilAction;
import spades.v1.Spades.Card;
import spades.v1.Spades.CardPlayed;
import spades.v1.Spades.CardsChosen;
import spades.v1.Spades.CardsDrawn;
import spades.v1.Spades.CardsPassed;
import spades.v1.Spades.ChatMessage;
import spades.v1.Spades.DrawAction;
import spades.v1.Spades.DrawTaken;
import spades.v1.Spades.ExchangeDecided;
import spades.v1.Spades.ExchangeDecisionAction;
import spades.v1.Spades.ExchangeStarted;
import spades.v1.Spades.HandScored;
import spades.v1.Spades.HandShown;
import spades.v1.Spades.HandStarted;
import spades.v1.Spades.LookAction;
import spades.v1.Spades.LookedAtCards;
import spades.v1.Spades.MatchEnded;
import spades.v1.Spades.MatchEvent;
import spades.v1.Spades.NameTrumpAction;
import spades.v1.Spades.PassCardsAction;
import spades.v1.Spades.PlayCardAction;
import spades.v1.Spades.Rank;
import spades.v1.Spades.SeatControl;
import spades.v1.Spades.SeatControlChanged;
import spades.v1.Spades.SideScore;
import spades.v1.Spades.Spectators;
import spades.v1.Spades.SpectatorsChanged;
import spades.v1.Spades.Suit;
import spades.v1.Spades.TrickWon;
import spades.v1.Spades.TrumpNamed;

/**
 * The hand-written proto3 JSON mapping against the reference one, Python protobuf's json_format
 * (the project's venv): every event kind and action kind, with and without default values, and
 * strings that need escaping.
 */
class ProtoJsonTest {
  private static final String PYTHON_SIDE =
      String.join(
          "\n",
          "import base64, json, sys",
          "from google.protobuf import json_format",
          "from spades_server.gen.spades.v1 import spades_pb2 as pb",
          "for line in sys.stdin:",
          "    kind, _, data = line.rstrip('\\n').partition(' ')",
          "    raw = base64.b64decode(data)",
          "    if kind in ('create', 'ruleset'):",
          "        into = pb.CreateMatchRequest() if kind == 'create' else pb.Ruleset()",
          "        msg = json_format.Parse(raw.decode('utf-8'), into)",
          "        print(base64.b64encode(msg.SerializeToString()).decode(), flush=True)",
          "        continue",
          "    msg = getattr(pb, kind).FromString(raw)",
          "    d = json_format.MessageToDict(msg)",
          "    d.pop('timeMs', None)",
          "    print(json.dumps(d, sort_keys=True, separators=(',', ':'), ensure_ascii=False),"
              + " flush=True)",
          "");

  private static Card card(Suit s, Rank r) {
    return Card.newBuilder().setSuit(s).setRank(r).build();
  }

  static List<MatchEvent> events() {
    Card as = card(Suit.SUIT_SPADES, Rank.RANK_ACE);
    Card tc = card(Suit.SUIT_CLUBS, Rank.RANK_TWO);
    Card bj = card(Suit.SUIT_SPADES, Rank.RANK_BIG_JOKER);
    List<MatchEvent> out = new ArrayList<>();
    MatchEvent.Builder e = MatchEvent.newBuilder().setSeq(1).setTimeMs(1795961094088L);
    out.add(e.clone().setHandStarted(HandStarted.newBuilder()).build());
    out.add(
        e.clone()
            .setSeq(Long.MAX_VALUE)
            .setHandStarted(
                HandStarted.newBuilder()
                    .setHandNumber(3)
                    .setDealer(2)
                    .setHandSize(13)
                    .addFaceDown(0)
                    .addFaceDown(2))
            .build());
    out.add(e.clone().setHandShown(HandShown.newBuilder().addCards(as).addCards(tc)).build());
    out.add(e.clone().setLookedAtCards(LookedAtCards.newBuilder()).build());
    out.add(e.clone().setLookedAtCards(LookedAtCards.newBuilder().setSeat(3)).build());
    out.add(e.clone().setBidMade(BidMade.newBuilder().setSeat(1)).build());
    out.add(
        e.clone().setBidMade(BidMade.newBuilder().setSeat(0).setTricks(0).setBlind(true)).build());
    out.add(
        e.clone()
            .setBiddingClosed(
                BiddingClosed.newBuilder().addBids(0).addBids(3).addContracts(3).addContracts(0))
            .build());
    out.add(
        e.clone()
            .setExchangeStarted(ExchangeStarted.newBuilder().addSeats(0).addSeats(2).setCardsEach(2))
            .build());
    out.add(e.clone().setCardsChosen(CardsChosen.newBuilder().setSeat(2)).build());
    out.add(
        e.clone()
            .setCardsPassed(
                CardsPassed.newBuilder().setFromSeat(0).setToSeat(2).addCards(bj).addCards(tc))
            .build());
    out.add(e.clone().setCardPlayed(CardPlayed.newBuilder().setSeat(3).setCard(bj)).build());
    out.add(e.clone().setCardPlayed(CardPlayed.newBuilder()).build());
    out.add(
        e.clone()
            .setTrickWon(
                TrickWon.newBuilder()
                    .setTrickNumber(13)
                    .setWinner(0)
                    .setLeader(1)
                    .addCards(tc)
                    .addCards(as))
            .build());
    out.add(
        e.clone()
            .setHandScored(
                HandScored.newBuilder()
                    .setHandNumber(0)
                    .addBids(0)
                    .addBids(4)
                    .addBlind(false)
                    .addBlind(true)
                    .addTricks(0)
                    .addTricks(13)
                    .addSides(SideScore.newBuilder())
                    .addSides(
                        SideScore.newBuilder()
                            .setSide(1)
                            .setContract(4)
                            .setTricks(13)
                            .setContractPoints(-40)
                            .setNilPoints(-100)
                            .setBagsTaken(9)
                            .setBagPenalty(-100)
                            .setHandPoints(-240)
                            .setScore(-240)
                            .setBags(9)))
            .build());
    out.add(
        e.clone()
            .setMatchEnded(
                MatchEnded.newBuilder().setWinner(0).addScores(500).addScores(-12).setHandsPlayed(9))
            .build());
    out.add(
        e.clone()
            .setSeatControlChanged(
                SeatControlChanged.newBuilder()
                    .setSeat(0)
                    .setControl(SeatControl.SEAT_CONTROL_HUMAN)
                    .setReason("claimed"))
            .build());
    out.add(
        e.clone()
            .setSeatControlChanged(SeatControlChanged.newBuilder().setControlValue(42))
            .build());
    out.add(
        e.clone()
            .setChatMessage(
                ChatMessage.newBuilder()
                    .setSeat(2)
                    .setText("quote \" backslash \\ nl \n tab \t bell \u0007 <a href='x'>&</a> é ♠ 🂡"))
            .build());
    out.add(e.clone().setExchangeDecided(ExchangeDecided.newBuilder().setExchange(true)).build());
    out.add(
        e.clone()
            .setTrumpNamed(TrumpNamed.newBuilder().setSeat(1).setSuit(Suit.SUIT_HEARTS))
            .build());
    out.add(
        e.clone()
            .setCardsDrawn(CardsDrawn.newBuilder().setSeat(1).setKept(as).setDiscarded(tc))
            .build());
    out.add(e.clone().setCardsDrawn(CardsDrawn.newBuilder()).build());
    out.add(e.clone().setDrawTaken(DrawTaken.newBuilder()).build());
    out.add(
        e.clone()
            .setSpectatorsChanged(
                SpectatorsChanged.newBuilder().setSpectators(Spectators.SPECTATORS_TOKEN))
            .build());
    out.add(e.clone().setSpectatorsChanged(SpectatorsChanged.newBuilder()).build());
    out.add(e.clone().setSeq(0).build());
    return out;
  }

  static List<Action> actions() {
    Card qh = card(Suit.SUIT_HEARTS, Rank.RANK_QUEEN);
    List<Action> out = new ArrayList<>();
    out.add(Action.newBuilder().setBid(BidAction.newBuilder()).build());
    out.add(Action.newBuilder().setBid(BidAction.newBuilder().setTricks(4)).build());
    out.add(Action.newBuilder().setBlindNil(BlindNilAction.newBuilder()).build());
    out.add(Action.newBuilder().setLook(LookAction.newBuilder()).build());
    out.add(
        Action.newBuilder().setPassCards(PassCardsAction.newBuilder().addCards(qh)).build());
    out.add(Action.newBuilder().setPlayCard(PlayCardAction.newBuilder().setCard(qh)).build());
    out.add(Action.newBuilder().setPlayCard(PlayCardAction.newBuilder()).build());
    out.add(
        Action.newBuilder()
            .setExchangeDecision(ExchangeDecisionAction.newBuilder().setExchange(true))
            .build());
    out.add(
        Action.newBuilder()
            .setNameTrump(NameTrumpAction.newBuilder().setSuit(Suit.SUIT_DIAMONDS))
            .build());
    out.add(Action.newBuilder().setDraw(DrawAction.newBuilder()).build());
    out.add(Action.newBuilder().setDraw(DrawAction.newBuilder().setKeep(true)).build());
    out.add(Action.getDefaultInstance());
    return out;
  }

  @Test
  void samplesCoverEveryKind() {
    Set<MatchEvent.KindCase> events = EnumSet.noneOf(MatchEvent.KindCase.class);
    for (MatchEvent e : events()) {
      events.add(e.getKindCase());
    }
    assertEquals(EnumSet.allOf(MatchEvent.KindCase.class), events);
    Set<Action.KindCase> actions = EnumSet.noneOf(Action.KindCase.class);
    for (Action a : actions()) {
      actions.add(a.getKindCase());
    }
    assertEquals(EnumSet.allOf(Action.KindCase.class), actions);
  }

  @Test
  void writesWhatJsonFormatWrites() throws Exception {
    List<String> requests = new ArrayList<>();
    List<String> ours = new ArrayList<>();
    for (MatchEvent e : events()) {
      requests.add(line("MatchEvent", e));
      ours.add(Json.write(ProtoJson.event(e)));
    }
    for (Action a : actions()) {
      requests.add(line("Action", a));
      ours.add(Json.write(ProtoJson.action(a)));
    }
    assertEquals(python(requests), ours);
  }

  /** Each scenario's {@code create} (a CreateMatchRequest), or its {@code lobby.ruleset}. */
  @Test
  void readsScenariosAsJsonFormatParses() throws Exception {
    List<String> requests = new ArrayList<>();
    List<String> ours = new ArrayList<>();
    for (Path file : ConformanceTest.scenarios()) {
      JsonObject scenario =
          JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8))
              .getAsJsonObject();
      boolean lobby = scenario.has("lobby");
      JsonObject json =
          lobby
              ? scenario.getAsJsonObject("lobby").getAsJsonObject("ruleset")
              : scenario.getAsJsonObject("create");
      requests.add(
          (lobby ? "ruleset " : "create ")
              + Base64.getEncoder()
                  .encodeToString(json.toString().getBytes(StandardCharsets.UTF_8)));
      MessageLite parsed =
          lobby ? ProtoJson.ruleset(json) : ProtoJson.createMatchRequest(json);
      ours.add(Base64.getEncoder().encodeToString(parsed.toByteArray()));
    }
    // Every option of a Ruleset, too, as the lobby's requests would carry it.
    String options =
        "{\"preset\":\"classic\",\"target_score\":1,\"noMercyScore\":true,"
            + "\"bagRule\":\"BAG_RULE_OFF\",\"blindNil\":true,\"blindNilDeficit\":100,"
            + "\"blindNilExchange\":2,\"firstLead\":1,\"nilAllowed\":true,"
            + "\"setPenalty\":\"SET_PENALTY_ZERO\",\"partnerships\":true,"
            + "\"jokers\":true,\"players\":4,\"thirteenBid\":true,\"scoring\":1,"
            + "\"spadesBroken\":1,\"blindNilExchangeOptional\":true,\"suicide\":false,"
            + "\"auctionTrump\":true,\"deucesHigh\":true,\"mercyScore\":-200}";
    requests.add(
        "ruleset "
            + Base64.getEncoder().encodeToString(options.getBytes(StandardCharsets.UTF_8)));
    ours.add(
        Base64.getEncoder()
            .encodeToString(
                ProtoJson.ruleset(JsonParser.parseString(options).getAsJsonObject())
                    .toByteArray()));
    assertEquals(python(requests), ours);
  }

  @Test
  void canonicalJsonSortsByCodePointAndEscapesOnlyWhatItMust() {
    Map<String, Object> o = Json.object();
    o.put("b", 1);
    o.put("a", List.of(true, "x"));
    o.put("\uD83D\uDE00", "emoji key"); // U+1F600: after U+FFFD by code point, before by UTF-16
    o.put("\uFFFD", "replacement");
    o.put("c", "\u0000\u001f\u007f<>&='/");
    assertEquals(
        "{\"a\":[true,\"x\"],\"b\":1,\"c\":\"\\u0000\\u001f\u007f<>&='/\","
            + "\"\uFFFD\":\"replacement\",\"\uD83D\uDE00\":\"emoji key\"}",
        Json.write(o));
  }

  private static String line(String kind, MessageLite m) {
    return kind + " " + Base64.getEncoder().encodeToString(m.toByteArray());
  }

  /** Runs the requests through the Python side, one answer line per request. */
  private static List<String> python(List<String> requests) throws Exception {
    Process p =
        new ProcessBuilder(Harness.python(), "-c", PYTHON_SIDE)
            .directory(Harness.repoRoot().toFile())
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    try (OutputStream in = p.getOutputStream()) {
      in.write((String.join("\n", requests) + "\n").getBytes(StandardCharsets.UTF_8));
    }
    List<String> answers = new ArrayList<>();
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String l;
      while ((l = out.readLine()) != null) {
        answers.add(l);
      }
    }
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("the Python side did not finish");
    }
    assertEquals(0, p.exitValue(), "the Python side failed");
    return answers;
  }
}

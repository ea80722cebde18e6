package spades.client;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.protobuf.Internal;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import spades.v1.Spades.Action;
import spades.v1.Spades.BagRule;
import spades.v1.Spades.BotLevel;
import spades.v1.Spades.Card;
import spades.v1.Spades.CreateMatchRequest;
import spades.v1.Spades.FirstLead;
import spades.v1.Spades.MatchEvent;
import spades.v1.Spades.Ruleset;
import spades.v1.Spades.Scoring;
import spades.v1.Spades.SeatConfig;
import spades.v1.Spades.SetPenalty;
import spades.v1.Spades.SideScore;
import spades.v1.Spades.SpadesBroken;

/**
 * The proto3 JSON mapping of the messages a transcript holds, by hand: protobuf-javalite has no
 * descriptors, hence no JsonFormat. lowerCamelCase names, fields at their default value left out
 * (a set oneof member and a set message field are written, even when empty), enums by name,
 * 64-bit integers as strings. {@code ProtoJsonTest} checks it against Python's json_format.
 */
final class ProtoJson {
  private ProtoJson() {}

  // -- writing -------------------------------------------------------------------------------

  /** A MatchEvent, without {@code timeMs} (the transcript leaves it out). */
  static Map<String, Object> event(MatchEvent e) {
    Map<String, Object> o = Json.object();
    uint64(o, "seq", e.getSeq());
    switch (e.getKindCase()) {
      case HAND_STARTED:
        {
          Map<String, Object> k = Json.object();
          int32(k, "handNumber", e.getHandStarted().getHandNumber());
          int32(k, "dealer", e.getHandStarted().getDealer());
          int32(k, "handSize", e.getHandStarted().getHandSize());
          ints(k, "faceDown", e.getHandStarted().getFaceDownList());
          o.put("handStarted", k);
          break;
        }
      case HAND_SHOWN:
        {
          Map<String, Object> k = Json.object();
          int32(k, "seat", e.getHandShown().getSeat());
          cards(k, "cards", e.getHandShown().getCardsList());
          o.put("handShown", k);
          break;
        }
      case LOOKED_AT_CARDS:
        o.put("lookedAtCards", seatOnly(e.getLookedAtCards().getSeat()));
        break;
      case BID_MADE:
        {
          Map<String, Object> k = Json.object();
          int32(k, "seat", e.getBidMade().getSeat());
          int32(k, "tricks", e.getBidMade().getTricks());
          bool(k, "blind", e.getBidMade().getBlind());
          o.put("bidMade", k);
          break;
        }
      case BIDDING_CLOSED:
        {
          Map<String, Object> k = Json.object();
          ints(k, "bids", e.getBiddingClosed().getBidsList());
          ints(k, "contracts", e.getBiddingClosed().getContractsList());
          o.put("biddingClosed", k);
          break;
        }
      case EXCHANGE_STARTED:
        {
          Map<String, Object> k = Json.object();
          ints(k, "seats", e.getExchangeStarted().getSeatsList());
          int32(k, "cardsEach", e.getExchangeStarted().getCardsEach());
          o.put("exchangeStarted", k);
          break;
        }
      case CARDS_CHOSEN:
        o.put("cardsChosen", seatOnly(e.getCardsChosen().getSeat()));
        break;
      case CARDS_PASSED:
        {
          Map<String, Object> k = Json.object();
          int32(k, "fromSeat", e.getCardsPassed().getFromSeat());
          int32(k, "toSeat", e.getCardsPassed().getToSeat());
          cards(k, "cards", e.getCardsPassed().getCardsList());
          o.put("cardsPassed", k);
          break;
        }
      case CARD_PLAYED:
        {
          Map<String, Object> k = Json.object();
          int32(k, "seat", e.getCardPlayed().getSeat());
          if (e.getCardPlayed().hasCard()) {
            k.put("card", card(e.getCardPlayed().getCard()));
          }
          o.put("cardPlayed", k);
          break;
        }
      case TRICK_WON:
        {
          Map<String, Object> k = Json.object();
          int32(k, "trickNumber", e.getTrickWon().getTrickNumber());
          int32(k, "winner", e.getTrickWon().getWinner());
          cards(k, "cards", e.getTrickWon().getCardsList());
          int32(k, "leader", e.getTrickWon().getLeader());
          o.put("trickWon", k);
          break;
        }
      case HAND_SCORED:
        {
          Map<String, Object> k = Json.object();
          int32(k, "handNumber", e.getHandScored().getHandNumber());
          ints(k, "bids", e.getHandScored().getBidsList());
          bools(k, "blind", e.getHandScored().getBlindList());
          ints(k, "tricks", e.getHandScored().getTricksList());
          if (e.getHandScored().getSidesCount() > 0) {
            List<Object> sides = Json.array();
            for (SideScore s : e.getHandScored().getSidesList()) {
              sides.add(sideScore(s));
            }
            k.put("sides", sides);
          }
          o.put("handScored", k);
          break;
        }
      case MATCH_ENDED:
        {
          Map<String, Object> k = Json.object();
          int32(k, "winner", e.getMatchEnded().getWinner());
          ints(k, "scores", e.getMatchEnded().getScoresList());
          int32(k, "handsPlayed", e.getMatchEnded().getHandsPlayed());
          o.put("matchEnded", k);
          break;
        }
      case SEAT_CONTROL_CHANGED:
        {
          Map<String, Object> k = Json.object();
          int32(k, "seat", e.getSeatControlChanged().getSeat());
          enumValue(
              k,
              "control",
              e.getSeatControlChanged().getControlValue(),
              e.getSeatControlChanged().getControl());
          string(k, "reason", e.getSeatControlChanged().getReason());
          o.put("seatControlChanged", k);
          break;
        }
      case CHAT_MESSAGE:
        {
          Map<String, Object> k = Json.object();
          int32(k, "seat", e.getChatMessage().getSeat());
          string(k, "text", e.getChatMessage().getText());
          o.put("chatMessage", k);
          break;
        }
      case EXCHANGE_DECIDED:
        {
          Map<String, Object> k = Json.object();
          int32(k, "seat", e.getExchangeDecided().getSeat());
          bool(k, "exchange", e.getExchangeDecided().getExchange());
          o.put("exchangeDecided", k);
          break;
        }
      case TRUMP_NAMED:
        {
          Map<String, Object> k = Json.object();
          int32(k, "seat", e.getTrumpNamed().getSeat());
          enumValue(k, "suit", e.getTrumpNamed().getSuitValue(), e.getTrumpNamed().getSuit());
          o.put("trumpNamed", k);
          break;
        }
      case CARDS_DRAWN:
        {
          Map<String, Object> k = Json.object();
          int32(k, "seat", e.getCardsDrawn().getSeat());
          if (e.getCardsDrawn().hasKept()) {
            k.put("kept", card(e.getCardsDrawn().getKept()));
          }
          if (e.getCardsDrawn().hasDiscarded()) {
            k.put("discarded", card(e.getCardsDrawn().getDiscarded()));
          }
          o.put("cardsDrawn", k);
          break;
        }
      case DRAW_TAKEN:
        o.put("drawTaken", seatOnly(e.getDrawTaken().getSeat()));
        break;
      case SPECTATORS_CHANGED:
        {
          Map<String, Object> k = Json.object();
          enumValue(
              k,
              "spectators",
              e.getSpectatorsChanged().getSpectatorsValue(),
              e.getSpectatorsChanged().getSpectators());
          o.put("spectatorsChanged", k);
          break;
        }
      case KIND_NOT_SET:
        break;
      default:
        throw new IllegalArgumentException("no JSON mapping for event kind " + e.getKindCase());
    }
    return o;
  }

  /** An Action. */
  static Map<String, Object> action(Action a) {
    Map<String, Object> o = Json.object();
    switch (a.getKindCase()) {
      case BID:
        {
          Map<String, Object> k = Json.object();
          int32(k, "tricks", a.getBid().getTricks());
          o.put("bid", k);
          break;
        }
      case BLIND_NIL:
        o.put("blindNil", Json.object());
        break;
      case LOOK:
        o.put("look", Json.object());
        break;
      case PASS_CARDS:
        {
          Map<String, Object> k = Json.object();
          cards(k, "cards", a.getPassCards().getCardsList());
          o.put("passCards", k);
          break;
        }
      case PLAY_CARD:
        {
          Map<String, Object> k = Json.object();
          if (a.getPlayCard().hasCard()) {
            k.put("card", card(a.getPlayCard().getCard()));
          }
          o.put("playCard", k);
          break;
        }
      case EXCHANGE_DECISION:
        {
          Map<String, Object> k = Json.object();
          bool(k, "exchange", a.getExchangeDecision().getExchange());
          o.put("exchangeDecision", k);
          break;
        }
      case NAME_TRUMP:
        {
          Map<String, Object> k = Json.object();
          enumValue(k, "suit", a.getNameTrump().getSuitValue(), a.getNameTrump().getSuit());
          o.put("nameTrump", k);
          break;
        }
      case DRAW:
        {
          Map<String, Object> k = Json.object();
          bool(k, "keep", a.getDraw().getKeep());
          o.put("draw", k);
          break;
        }
      case KIND_NOT_SET:
        break;
      default:
        throw new IllegalArgumentException("no JSON mapping for action kind " + a.getKindCase());
    }
    return o;
  }

  /** The lowerCamelCase name of an event's kind ({@code trickWon}), or "" for none. */
  static String kindName(MatchEvent e) {
    Map<String, Object> o = event(e);
    for (String k : o.keySet()) {
      if (!k.equals("seq")) {
        return k;
      }
    }
    return "";
  }

  static Map<String, Object> card(Card c) {
    Map<String, Object> o = Json.object();
    enumValue(o, "suit", c.getSuitValue(), c.getSuit());
    enumValue(o, "rank", c.getRankValue(), c.getRank());
    return o;
  }

  private static Map<String, Object> sideScore(SideScore s) {
    Map<String, Object> o = Json.object();
    int32(o, "side", s.getSide());
    int32(o, "contract", s.getContract());
    int32(o, "tricks", s.getTricks());
    int32(o, "contractPoints", s.getContractPoints());
    int32(o, "nilPoints", s.getNilPoints());
    int32(o, "bagsTaken", s.getBagsTaken());
    int32(o, "bagPenalty", s.getBagPenalty());
    int32(o, "handPoints", s.getHandPoints());
    int32(o, "score", s.getScore());
    int32(o, "bags", s.getBags());
    return o;
  }

  private static Map<String, Object> seatOnly(int seat) {
    Map<String, Object> o = Json.object();
    int32(o, "seat", seat);
    return o;
  }

  private static void int32(Map<String, Object> o, String name, int v) {
    if (v != 0) {
      o.put(name, v);
    }
  }

  private static void uint64(Map<String, Object> o, String name, long v) {
    if (v != 0) {
      o.put(name, Long.toUnsignedString(v));
    }
  }

  private static void bool(Map<String, Object> o, String name, boolean v) {
    if (v) {
      o.put(name, true);
    }
  }

  private static void string(Map<String, Object> o, String name, String v) {
    if (!v.isEmpty()) {
      o.put(name, v);
    }
  }

  private static void ints(Map<String, Object> o, String name, List<Integer> v) {
    if (!v.isEmpty()) {
      List<Object> a = Json.array();
      a.addAll(v);
      o.put(name, a);
    }
  }

  private static void bools(Map<String, Object> o, String name, List<Boolean> v) {
    if (!v.isEmpty()) {
      List<Object> a = Json.array();
      a.addAll(v);
      o.put(name, a);
    }
  }

  private static void cards(Map<String, Object> o, String name, List<Card> v) {
    if (!v.isEmpty()) {
      List<Object> a = Json.array();
      for (Card c : v) {
        a.add(card(c));
      }
      o.put(name, a);
    }
  }

  /** An enum by name; a number the stubs do not know as the number, as proto3 JSON says. */
  private static void enumValue(
      Map<String, Object> o, String name, int value, Internal.EnumLite known) {
    if (value == 0) {
      return;
    }
    if (known instanceof Enum && !"UNRECOGNIZED".equals(((Enum<?>) known).name())) {
      o.put(name, ((Enum<?>) known).name());
    } else {
      o.put(name, value);
    }
  }

  // -- reading (a scenario's `create`, or its lobby's `ruleset`) ------------------------------

  /** A CreateMatchRequest from its proto3 JSON; an unknown field is an error. */
  static CreateMatchRequest createMatchRequest(JsonObject json) {
    CreateMatchRequest.Builder b = CreateMatchRequest.newBuilder();
    for (Map.Entry<String, JsonElement> f : json.entrySet()) {
      JsonElement v = f.getValue();
      switch (camel(f.getKey())) {
        case "ruleset":
          b.setRuleset(ruleset(v.getAsJsonObject()));
          break;
        case "seats":
          for (JsonElement s : v.getAsJsonArray()) {
            b.addSeats(seatConfig(s.getAsJsonObject()));
          }
          break;
        case "seed":
          b.setSeed(Long.parseUnsignedLong(v.getAsString()));
          break;
        case "hasSeed":
          b.setHasSeed(v.getAsBoolean());
          break;
        case "turnTimerMs":
          b.setTurnTimerMs(v.getAsInt());
          break;
        default:
          throw new IllegalArgumentException("CreateMatchRequest has no field " + f.getKey());
      }
    }
    return b.build();
  }

  /** A Ruleset from its proto3 JSON (a lobby scenario's {@code ruleset}); unknown fields fail. */
  static Ruleset ruleset(JsonObject json) {
    Ruleset.Builder b = Ruleset.newBuilder();
    for (Map.Entry<String, JsonElement> f : json.entrySet()) {
      JsonElement v = f.getValue();
      switch (camel(f.getKey())) {
        case "preset":
          b.setPreset(v.getAsString());
          break;
        case "targetScore":
          b.setTargetScore(v.getAsInt());
          break;
        case "mercyScore":
          b.setMercyScore(v.getAsInt());
          break;
        case "noMercyScore":
          b.setNoMercyScore(v.getAsBoolean());
          break;
        case "bagRule":
          b.setBagRuleValue(enumNumber(v, BagRule::valueOf));
          break;
        case "blindNil":
          b.setBlindNil(v.getAsBoolean());
          break;
        case "blindNilDeficit":
          b.setBlindNilDeficit(v.getAsInt());
          break;
        case "blindNilExchange":
          b.setBlindNilExchange(v.getAsInt());
          break;
        case "firstLead":
          b.setFirstLeadValue(enumNumber(v, FirstLead::valueOf));
          break;
        case "nilAllowed":
          b.setNilAllowed(v.getAsBoolean());
          break;
        case "setPenalty":
          b.setSetPenaltyValue(enumNumber(v, SetPenalty::valueOf));
          break;
        case "partnerships":
          b.setPartnerships(v.getAsBoolean());
          break;
        case "jokers":
          b.setJokers(v.getAsBoolean());
          break;
        case "players":
          b.setPlayers(v.getAsInt());
          break;
        case "thirteenBid":
          b.setThirteenBid(v.getAsBoolean());
          break;
        case "scoring":
          b.setScoringValue(enumNumber(v, Scoring::valueOf));
          break;
        case "spadesBroken":
          b.setSpadesBrokenValue(enumNumber(v, SpadesBroken::valueOf));
          break;
        case "blindNilExchangeOptional":
          b.setBlindNilExchangeOptional(v.getAsBoolean());
          break;
        case "suicide":
          b.setSuicide(v.getAsBoolean());
          break;
        case "auctionTrump":
          b.setAuctionTrump(v.getAsBoolean());
          break;
        case "deucesHigh":
          b.setDeucesHigh(v.getAsBoolean());
          break;
        default:
          throw new IllegalArgumentException("Ruleset has no field " + f.getKey());
      }
    }
    return b.build();
  }

  private static SeatConfig seatConfig(JsonObject json) {
    SeatConfig.Builder b = SeatConfig.newBuilder();
    for (Map.Entry<String, JsonElement> f : json.entrySet()) {
      JsonElement v = f.getValue();
      switch (camel(f.getKey())) {
        case "name":
          b.setName(v.getAsString());
          break;
        case "bot":
          b.setBot(v.getAsBoolean());
          break;
        case "botLevel":
          b.setBotLevelValue(enumNumber(v, BotLevel::valueOf));
          break;
        default:
          throw new IllegalArgumentException("SeatConfig has no field " + f.getKey());
      }
    }
    return b.build();
  }

  /** An enum given by name or by number (proto3 JSON accepts both). */
  private static <E extends Internal.EnumLite> int enumNumber(
      JsonElement v, Function<String, E> byName) {
    if (v.getAsJsonPrimitive().isNumber()) {
      return v.getAsInt();
    }
    return byName.apply(v.getAsString()).getNumber();
  }

  /** proto3 JSON parsers accept the proto field name too: snake_case to lowerCamelCase. */
  private static String camel(String name) {
    StringBuilder b = new StringBuilder();
    boolean up = false;
    for (char c : name.toCharArray()) {
      if (c == '_') {
        up = true;
      } else {
        b.append(up ? Character.toUpperCase(c) : c);
        up = false;
      }
    }
    return b.toString();
  }
}

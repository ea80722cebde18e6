// Creates a match against three bots and plays its first hand as seat 0,
// always choosing the first legal action. Run it against a server:
//   SPADES_ADDRESS=localhost:50051 SPADES_OPERATOR_TOKEN=demo-operator-token node dist/examples/play-hand.js
import { BotLevel, connect, SpadesError } from "@spades/client/node";

const client = connect(process.env["SPADES_ADDRESS"] ?? "localhost:50051", {
  operatorToken: process.env["SPADES_OPERATOR_TOKEN"] ?? "demo-operator-token",
});

const created = await client.createMatch({
  ruleset: { preset: "classic" },
  seats: [
    { name: "You" },
    { name: "West", bot: true, botLevel: BotLevel.EASY },
    { name: "North", bot: true, botLevel: BotLevel.NORMAL },
    { name: "East", bot: true, botLevel: BotLevel.HARD },
  ],
});
const seat = client.seat(created.seatTokens[0]!.token); // seat 0, the only human seat
await seat.claim();

// The seat's events, in order; the session reconnects and resumes by itself.
const session = seat.open();
try {
  for await (const event of session) {
    const { kind } = event;
    if (kind.case === "bidMade") {
      console.log(`seat ${kind.value.seat} bids ${kind.value.tricks}`);
    } else if (kind.case === "trickWon") {
      console.log(`trick ${kind.value.trickNumber} to seat ${kind.value.winner}`);
    } else if (kind.case === "handScored") {
      console.log(`hand scored: ${kind.value.sides.map((s) => s.score).join(" to ")}`);
      break;
    }
    // Something changed: if it is our turn now, play the first legal action.
    const view = await seat.getView();
    const action = view.legalActions[0];
    if (action !== undefined) {
      try {
        await session.act(action); // resolves with its ActionResult once accepted
      } catch (e) {
        if (e instanceof SpadesError) {
          console.log(`refused: ${e.codeName} ${e.reason} (${e.rule ?? e.message})`);
        } else {
          throw e;
        }
      }
    }
  }
} finally {
  await session.close();
}

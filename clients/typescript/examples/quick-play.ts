// Asks for a game with quick play, waits for the seat (bots take the seats
// nobody took once the server's wait is over), then plays the first hand,
// always choosing the first legal action. The player credential is the JWT the
// game's sign-in gives (`make run` hands out guest ones: POST /api/guest):
//   SPADES_ADDRESS=localhost:50051 SPADES_PLAYER_CREDENTIAL=<jwt> node dist/examples/quick-play.js
import { connect, SpadesError } from "@spades/client/node";

const client = connect(process.env["SPADES_ADDRESS"] ?? "localhost:50051");
const player = client.player(process.env["SPADES_PLAYER_CREDENTIAL"] ?? "");

const ticket = await player.quickPlay({ ruleset: { preset: "classic" } });
console.log(`ticket ${ticket.ticketId}: looking for a table`);
// Long polls until the matchmaker has seated us; after a lost connection,
// player.awaitPlacement() (the latest ticket) gives the same seat again.
const placement = await player.awaitPlacement(ticket);
const names = placement.table!.seats.map((s) => s.name).join(", ");
console.log(`seat ${placement.seat} of match ${placement.matchId}: ${names}`);

// The placement's seat token plays the seat like any seat token.
const seat = client.seat(placement.seatToken);
const session = seat.open();
try {
  for await (const event of session) {
    if (event.kind.case === "handScored") {
      console.log(`hand scored: ${event.kind.value.sides.map((s) => s.score).join(" to ")}`);
      break;
    }
    const action = (await seat.getView()).legalActions[0];
    if (action !== undefined) {
      try {
        await session.act(action);
      } catch (e) {
        if (!(e instanceof SpadesError)) {
          throw e;
        }
        console.log(`refused: ${e.codeName} ${e.reason}`);
      }
    }
  }
} finally {
  await session.close();
}

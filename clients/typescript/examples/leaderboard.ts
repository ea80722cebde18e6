// Prints the top of a rating pool's leaderboard (a page at a time), the page
// that holds the player, and the player's profile. The player credential is
// the JWT the game's sign-in gives (`make run` hands out guest ones):
//   SPADES_ADDRESS=localhost:50051 SPADES_PLAYER_CREDENTIAL=<jwt> node dist/examples/leaderboard.js [pool]
import { connect, SpadesError, type PlayerProfile } from "@spades/client/node";

const client = connect(process.env["SPADES_ADDRESS"] ?? "localhost:50051");
const player = client.player(process.env["SPADES_PLAYER_CREDENTIAL"] ?? "");
const pool = process.argv[2] ?? "classic";

// The top ten, five a page: leaderboardEntries asks for the next page only
// when the loop gets there.
const top = await player.leaderboard({ pool, pageSize: 1 });
console.log(`${top.pool}: ${top.totalPlayers} players with ${top.minGames}+ rated games`);
let shown = 0;
for await (const entry of player.leaderboardEntries({ pool, pageSize: 5 })) {
  const r = entry.rating!;
  console.log(`#${entry.rank} ${entry.name}: ${r.conservative.toFixed(2)} (${r.wins} won, ${r.losses} lost)`);
  if (++shown === 10) {
    break;
  }
}

// The player's own profile (no id: the caller's), then their page.
let me: PlayerProfile;
try {
  me = await player.profile();
} catch (e) {
  if (e instanceof SpadesError && e.reason === "PLAYER_NOT_FOUND") {
    console.log("no finished match yet");
    process.exit(0);
  }
  throw e;
}
const rating = me.ratings.find((r) => r.pool === pool);
const humans = me.withHumans!;
console.log(`${me.name}: ${humans.matches} matches with humans, ${humans.wins} won, ${(humans.contractsMadeShare * 100).toFixed(0)}% of contracts made`);
if (rating === undefined || rating.rank === 0) {
  console.log(`not on the ${pool} leaderboard yet`);
} else {
  console.log(`#${rating.rank} in ${pool}: mu ${rating.mu.toFixed(2)}, sigma ${rating.sigma.toFixed(2)}, ${rating.games} games`);
  const around = await player.leaderboard({ pool, pageSize: 5, aroundPlayerId: me.playerId });
  console.log(`my page: ${around.entries.map((e) => `#${e.rank} ${e.name}`).join(", ")}`);
}

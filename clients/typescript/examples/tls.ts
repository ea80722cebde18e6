// Creates a private match over the operator port (mutual TLS: a client
// certificate the server's --tls-client-ca signed), claims its seat over the
// players' TLS port, and watches it with the match's spectator token:
//   SPADES_ADDRESS=localhost:50051 SPADES_OPERATOR_ADDRESS=localhost:50052 SPADES_CA=ca.crt \
//   SPADES_CLIENT_CERT=operator.crt SPADES_CLIENT_KEY=operator.key node dist/examples/tls.js
import { connect, spectate, Spectators, tlsFiles } from "@spades/client/node";

const env = (name: string, fallback: string): string => process.env[name] ?? fallback;
const ca = env("SPADES_CA", "ca.crt");

// The operator: the CA to trust the server, and a client certificate.
const operator = connect(env("SPADES_OPERATOR_ADDRESS", "localhost:50052"), {
  tls: tlsFiles({ ca, cert: env("SPADES_CLIENT_CERT", "operator.crt"), key: env("SPADES_CLIENT_KEY", "operator.key") }),
  operatorToken: env("SPADES_OPERATOR_TOKEN", "demo-operator-token"),
});
// A player: the CA only (no client certificate on the players' port).
const player = connect(env("SPADES_ADDRESS", "localhost:50051"), { tls: tlsFiles({ ca }) });

const created = await operator.createMatch({
  seats: [{ name: "You" }, { name: "West", bot: true }, { name: "North", bot: true }, { name: "East", bot: true }],
  spectators: Spectators.TOKEN, // watched with its spectator token only
});
const claimed = await player.seat(created.seatTokens[0]!.token).claim();
console.log(`seat ${claimed.seat} claimed over TLS`);

const watching = spectate(player, created.match!.matchId, { spectatorToken: created.spectatorToken });
try {
  for await (const event of watching) {
    console.log(`a spectator sees ${event.kind.case}`);
    break;
  }
} finally {
  watching.close(); // cancels the Spectate call (leaving the loop does not)
}

// The @colyseus/schema bug that made spades.mjs number cards 1..52: an
// ArraySchema emptied by splice() and pushed to in the same patch loses a 0
// pushed first; the decoder shows the next value in its place. No server, no
// network: one Encoder, one Decoder.
//
//   node schema-zero-bug.mjs   (prints each case; exits 1 while the bug is there)

import { schema, Encoder, Reflection } from "@colyseus/schema";

const S = schema({ hand: ["uint8"] }, "S");
let wrong = 0;
function run(label, before, step) {
  const s = new S();
  s.hand.push(...before);
  const enc = new Encoder(s);
  const dec = Reflection.decode(Reflection.encode(enc));
  dec.decode(enc.encodeAll());
  enc.discardChanges();
  step(s.hand);
  dec.decode(enc.encode());
  enc.discardChanges();
  const server = s.hand.toArray().join();
  const client = Array.from(dec.state.hand).join();
  if (server !== client) wrong++;
  console.log(`${server === client ? "same" : "DIFF"}  ${label.padEnd(38)} server ${server}  client ${client}`);
}
run("[5]: clear, push(0,4,14)", [5], (h) => { h.clear(); h.push(0, 4, 14); });
run("[5]: splice(0,1), clear, push(0,4,14)", [5], (h) => { h.splice(0, 1); h.clear(); h.push(0, 4, 14); });
run("[5]: splice(0,1), push(0,4,14)", [5], (h) => { h.splice(0, 1); h.push(0, 4, 14); });
run("[5]: splice(0,1), clear, push(7,4,14)", [5], (h) => { h.splice(0, 1); h.clear(); h.push(7, 4, 14); });
process.exit(wrong ? 1 : 0);
